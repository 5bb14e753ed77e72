/* The RAS listener: one thread per process while it has communicators. It binds NCCL_RAS_ADDR
 * with SO_REUSEPORT, as NCCL does, so every weft process of the host (every rank process of
 * every job of this user) listens on the same port and the kernel gives each new client to one
 * of them; each answers for the host's ranks of its communicators (ras_report.c), so any of
 * them gives the same report. A dead process's socket is closed by the kernel and takes no
 * more clients. A stopped process's socket still takes its share: the client gets no greeting,
 * and both ncclras and weft-ras give up on a connection after 1 s without one and connect
 * again, which lands on another socket (the kernel picks by the connection's source port).
 *
 * The thread never blocks on a client: non-blocking sockets in one poll(), at most
 * WEFT_RAS_MAX_CLIENTS of them (a newcomer evicts the oldest client that has not finished a
 * command), 1023 bytes per command line, 5 s x NCCL_RAS_TIMEOUT_FACTOR to send one (a client
 * that trickles bytes is closed), no new command read while an answer waits (a client that
 * does not read stalls and times out), 4 MiB of output waiting per client. A flood of connections or
 * garbage costs this thread, never the data path's threads. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ras/ras.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/param.h"

#define LINE_MAX_BYTES 1024
#define CMD_WAIT_MS 5000
#define TICK_MS 250

typedef struct {
  int fd;
  uint64_t since_ms; /* accepted, or last command completed */
  char in[LINE_MAX_BYTES];
  size_t nin;
  ras_buf out;
  size_t sent;
  int json, monitor, closing; /* closing: close once out is sent */
  int eof;                     /* the client half-closed: poll for POLLOUT only */
} client;

/* The service's state; one per process like the hang report's watchdog (comm_hang_watch.c). */
static pthread_mutex_t rlock = PTHREAD_MUTEX_INITIALIZER;
static int rcount, rrunning, rstop_pipe[2] = {-1, -1};
static pid_t rpid;
static pthread_t rthread;
static ras_peer_server* rpeer; /* the RAS peer listener's thread (ras_peer.c), once asked for */
static weft_sockaddr rpeer_addr;

#define MAX_LISTEN 4 /* the addresses NCCL_RAS_ADDR resolves to ("localhost": ::1 and 127.0.0.1) */

typedef struct {
  int listen_fd[MAX_LISTEN], nlisten, max_clients, factor;
} server;

/* "host:port", "[v6]:port", ":port", "host": bind and listen on every address it resolves to
 * (at most MAX_LISTEN) into fds; returns how many. */
static int open_listeners(const char* addr, int* fds) {
  char host[256] = "localhost", port[16];
  snprintf(port, sizeof port, "%d", WEFT_RAS_PORT);
  const char* colon = strrchr(addr, ':');
  if (addr[0] == '[') {
    const char* end = strchr(addr, ']');
    if (!end || (end[1] && end[1] != ':')) goto bad;
    snprintf(host, sizeof host, "%.*s", (int)(end - addr - 1), addr + 1);
    if (end[1] == ':') snprintf(port, sizeof port, "%s", end + 2);
  } else if (colon) {
    if (colon > addr) snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    snprintf(port, sizeof port, "%s", colon + 1);
  } else if (addr[0]) {
    snprintf(host, sizeof host, "%s", addr);
  }
  char* end;
  long p = strtol(port, &end, 10);
  if (*end || p < 1 || p > 65535) goto bad;
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0) {
    INFO(NCCL_INIT, "RAS: NCCL_RAS_ADDR=%s: %s; no RAS service in pid %d", addr,
         gai_strerror(rc), (int)getpid());
    return 0;
  }
  int n = 0;
  for (struct addrinfo* ai = res; ai && n < MAX_LISTEN; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6) /* "::" beside "0.0.0.0": each its own family */
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      INFO(NCCL_INIT, "RAS: cannot listen on %s (port %s, %s): %s", host, port,
           ai->ai_family == AF_INET6 ? "IPv6" : "IPv4", strerror(errno));
      close(fd);
      continue; /* the same address twice (EADDRINUSE from ourselves) lands here too */
    }
    fds[n++] = fd;
  }
  freeaddrinfo(res);
  if (n)
    INFO(NCCL_INIT, "RAS: pid %d listens on %s port %s (%d address%s, SO_REUSEPORT)",
         (int)getpid(), host, port, n, n > 1 ? "es" : "");
  else
    INFO(NCCL_INIT, "RAS: no address of %s port %s could be bound; no RAS service in pid %d",
         host, port, (int)getpid());
  return n;
bad:
  WARN("NCCL_RAS_ADDR=%s: expected host:port; the RAS service is off", addr);
  return 0;
}

static void client_close(client* c) {
  if (c->fd >= 0) close(c->fd);
  ras_buf_free(&c->out);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

static void reply(client* c, const char* s) { ras_buf_printf(&c->out, "%s", s); }

/* One command line (without its newline). */
static void command(server* s, client* c, char* cmd) {
  size_t n = strlen(cmd);
  if (n && cmd[n - 1] == '\r') cmd[--n] = '\0';
  if (strncasecmp(cmd, "CLIENT PROTOCOL ", 16) == 0) {
    char line[64];
    snprintf(line, sizeof line, "SERVER PROTOCOL %d\n", WEFT_RAS_PROTOCOL);
    reply(c, line);
  } else if (strncasecmp(cmd, "TIMEOUT ", 8) == 0) {
    char* end;
    long t = strtol(cmd + 8, &end, 10);
    /* accepted for the protocol; this service answers from shared memory and never waits */
    if (end == cmd + 8 || *end || t < 0) {
      reply(c, "ERROR: Invalid timeout value\n");
    } else {
      reply(c, "OK\n");
    }
  } else if (strncasecmp(cmd, "SET FORMAT ", 11) == 0) {
    if (strcasecmp(cmd + 11, "text") == 0) {
      c->json = 0;
      reply(c, "OK\n");
    } else if (strcasecmp(cmd + 11, "json") == 0) {
      c->json = 1;
      reply(c, "OK\n");
    } else {
      reply(c, "ERROR: Invalid format (text or json)\n");
    }
  } else if (strcasecmp(cmd, "STATUS") == 0 || strcasecmp(cmd, "VERBOSE STATUS") == 0) {
    ras_net net; /* other hosts and a root first: this thread waits at most a few seconds */
    ras_gather(&net, s->factor);
    ras_report_status(&c->out, c->json ? RAS_JSON : RAS_TEXT, cmd[0] == 'V' || cmd[0] == 'v',
                      s->factor, &net);
    ras_net_free(&net);
    c->closing = 1; /* the report ends at EOF */
  } else if (strcasecmp(cmd, "MONITOR") == 0 || strncasecmp(cmd, "MONITOR ", 8) == 0) {
    const char* g = cmd[7] ? cmd + 8 : "lifecycle";
    int ok = 1;
    char groups[128];
    snprintf(groups, sizeof groups, "%s", g);
    for (char *save = NULL, *tok = strtok_r(groups, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
      if (strcasecmp(tok, "lifecycle") && strcasecmp(tok, "trace") && strcasecmp(tok, "all"))
        ok = 0;
    if (!ok) {
      reply(c, "ERROR: Invalid event group (lifecycle, trace or all)\n");
    } else {
      reply(c, "OK\n");
      c->monitor = 1; /* weft has lifecycle events only; trace asks for nothing more */
    }
  } else {
    reply(c, "ERROR: Unknown command\n");
    c->closing = 1;
  }
}

static void client_read(server* s, client* c, uint64_t now) {
  for (int turn = 0; turn < 16; turn++) { /* a fast sender waits for the next poll */
    ssize_t r = recv(c->fd, c->in + c->nin, sizeof c->in - 1 - c->nin, 0);
    if (r == 0) {
      if (c->out.len > c->sent) c->closing = c->eof = 1; /* half-closed: finish the answer */
      else client_close(c);
      return;
    }
    if (r < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) client_close(c);
      return;
    }
    c->nin += (size_t)r;
    c->in[c->nin] = '\0';
    char* nl;
    while (!c->closing && (nl = memchr(c->in, '\n', c->nin)) != NULL) {
      *nl = '\0';
      command(s, c, c->in);
      size_t used = (size_t)(nl + 1 - c->in);
      memmove(c->in, nl + 1, c->nin - used);
      c->nin -= used;
      c->in[c->nin] = '\0';
      c->since_ms = now;
    }
    if (c->closing) c->nin = 0;
    if (c->nin == sizeof c->in - 1) { /* a line longer than any command */
      reply(c, "ERROR: Command too long\n");
      c->closing = 1;
      c->nin = 0;
    }
  }
}

static void client_write(client* c) {
  while (c->sent < c->out.len) {
    ssize_t w = send(c->fd, c->out.p + c->sent, c->out.len - c->sent, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) client_close(c);
      return;
    }
    c->sent += (size_t)w;
  }
  c->out.len = c->sent = 0;
  if (c->out.full) client_close(c); /* a monitor that does not read */
  else if (c->closing) client_close(c);
}

static void* ras_main(void* arg) {
  server* s = arg;
  int max = s->max_clients;
  client* cl = calloc((size_t)max, sizeof *cl);
  struct pollfd* pf = calloc((size_t)max + 1 + MAX_LISTEN, sizeof *pf);
  int* at = calloc((size_t)max + 1 + MAX_LISTEN, sizeof *at);
  ras_watch* watch = NULL;
  if (!cl || !pf || !at) {
    WARN("RAS: out of memory for %d clients; the RAS service stops", max);
    goto done;
  }
  for (int i = 0; i < max; i++) cl[i].fd = -1;
  uint64_t last_watch = 0;
  for (;;) {
    int n = 0;
    pf[n++] = (struct pollfd){.fd = rstop_pipe[0], .events = POLLIN};
    for (int l = 0; l < s->nlisten; l++)
      pf[n++] = (struct pollfd){.fd = s->listen_fd[l], .events = POLLIN};
    int first = n; /* the clients' entries */
    int nmon = 0;
    for (int i = 0; i < max; i++) {
      if (cl[i].fd < 0) continue;
      nmon += cl[i].monitor;
      at[n] = i;
      pf[n++] = (struct pollfd){.fd = cl[i].fd,
                                /* no new command while an answer waits to be read */
                                .events = (short)(cl[i].out.len > cl[i].sent ? POLLOUT
                                                  : cl[i].eof ? 0 : POLLIN)};
    }
    if (poll(pf, (nfds_t)n, TICK_MS) < 0 && errno != EINTR) break;
    if (pf[0].revents) break;
    uint64_t now = clock_ms();
    for (int k = first; k < n; k++) {
      client* c = &cl[at[k]];
      if (c->fd < 0 || !pf[k].revents) continue;
      if (pf[k].revents & (POLLERR | POLLNVAL)) {
        client_close(c);
        continue;
      }
      if (pf[k].revents & (POLLIN | POLLHUP)) client_read(s, c, now);
      if (c->fd >= 0 && c->out.len > c->sent) client_write(c);
    }
    for (int l = 0; l < s->nlisten; l++) {
      if (!(pf[1 + l].revents & POLLIN)) continue;
      for (int k = 0; k < 64; k++) { /* a bounded batch: the loop comes back */
        int fd = accept4(s->listen_fd[l], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        int slot = -1, oldest = -1;
        for (int i = 0; i < max && slot < 0; i++)
          if (cl[i].fd < 0) slot = i;
        if (slot < 0) { /* full: the oldest client without a finished command goes */
          for (int i = 0; i < max; i++)
            if (!cl[i].monitor && cl[i].out.len == 0 &&
                (oldest < 0 || cl[i].since_ms < cl[oldest].since_ms))
              oldest = i;
          if (oldest < 0) {
            close(fd);
            continue;
          }
          client_close(&cl[oldest]);
          slot = oldest;
        }
        cl[slot].fd = fd;
        cl[slot].since_ms = now;
      }
    }
    uint64_t wait_ms = (uint64_t)CMD_WAIT_MS * (uint64_t)s->factor;
    for (int i = 0; i < max; i++) /* slow or silent clients */
      if (cl[i].fd >= 0 && !cl[i].monitor && now - cl[i].since_ms > wait_ms) client_close(&cl[i]);
    if (nmon && now - last_watch >= 500) {
      last_watch = now;
      if (!watch) watch = ras_watch_new();
      if (watch) {
        ras_buf text = {0}, json = {0};
        ras_watch_poll(watch, &text, &json, s->factor);
        for (int i = 0; i < max; i++) {
          client* c = &cl[i];
          if (c->fd < 0 || !c->monitor) continue;
          ras_buf* b = c->json ? &json : &text;
          if (b->len) ras_buf_printf(&c->out, "%s", b->p);
          if (c->out.len > c->sent) client_write(c);
        }
        ras_buf_free(&text);
        ras_buf_free(&json);
      }
    } else if (!nmon && watch) {
      ras_watch_free(watch);
      watch = NULL;
    }
  }
done:
  if (cl)
    for (int i = 0; i < max; i++)
      if (cl[i].fd >= 0) client_close(&cl[i]);
  ras_watch_free(watch);
  free(cl);
  free(pf);
  free(at);
  for (int l = 0; l < s->nlisten; l++) close(s->listen_fd[l]);
  free(s);
  return NULL;
}

void ras_comm_add(void) {
  pthread_mutex_lock(&rlock);
  if (rpid != getpid()) { /* a forked child has none of its parent's threads */
    rpid = getpid();
    rcount = rrunning = 0;
    rpeer = NULL;
  }
  if (rcount++ == 0 && param_int(WEFT_PARAM_RAS_ENABLE)) {
    server* s = calloc(1, sizeof *s);
    if (s && pipe2(rstop_pipe, O_CLOEXEC) == 0) {
      s->max_clients = (int)param_int(WEFT_PARAM_RAS_MAX_CLIENTS);
      s->factor = (int)param_int(WEFT_PARAM_RAS_TIMEOUT_FACTOR);
      s->nlisten = open_listeners(param_str(WEFT_PARAM_RAS_ADDR), s->listen_fd);
      if (s->nlisten > 0 && pthread_create(&rthread, NULL, ras_main, s) == 0) {
        rrunning = 1;
        s = NULL;
      } else if (s->nlisten > 0) {
        WARN("RAS: cannot start the service's thread; no RAS service in pid %d", (int)getpid());
        for (int l = 0; l < s->nlisten; l++) close(s->listen_fd[l]);
      }
      if (!rrunning) {
        close(rstop_pipe[0]);
        close(rstop_pipe[1]);
        rstop_pipe[0] = rstop_pipe[1] = -1;
      }
    }
    free(s);
  }
  pthread_mutex_unlock(&rlock);
}

void ras_comm_remove(void) {
  pthread_mutex_lock(&rlock);
  int stop = rpid == getpid() && rcount > 0 && --rcount == 0 && rrunning;
  if (stop) {
    rrunning = 0;
    ssize_t w = write(rstop_pipe[1], "s", 1);
    (void)w;
    pthread_join(rthread, NULL);
    close(rstop_pipe[0]);
    close(rstop_pipe[1]);
    rstop_pipe[0] = rstop_pipe[1] = -1;
    ras_peer_stop(rpeer);
    rpeer = NULL;
  }
  pthread_mutex_unlock(&rlock);
}

void ras_peer_addr(const weft_sockaddr* near, weft_sockaddr* out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&rlock);
  if (rpid == getpid() && rrunning && !rpeer && near) {
    weft_sockaddr want = *near;
    socket_addr_set_port(&want, 0);
    int fd = -1;
    if (socket_listen(&want, &fd, &rpeer_addr) == ncclSuccess &&
        socket_set_nonblocking(fd, 1) == ncclSuccess && (rpeer = ras_peer_start(fd)) != NULL) {
      char a[WEFT_SOCKADDR_STRLEN];
      INFO(NCCL_INIT | NCCL_RAS, "RAS: pid %d answers other hosts on %s", (int)getpid(),
           socket_addr_str(&rpeer_addr, a, sizeof a));
    } else {
      INFO(NCCL_INIT | NCCL_RAS, "RAS: no peer listener in pid %d: other hosts' reports will "
           "count this process's ranks as not asked", (int)getpid());
      if (fd >= 0) close(fd);
    }
  }
  if (rpid == getpid() && rpeer) *out = rpeer_addr;
  pthread_mutex_unlock(&rlock);
}
