/* weft-ras: ask a running job's RAS service what state it is in (weft's or NCCL's: both speak
 * NCCL's RAS client protocol 2), with ncclras's flags, for hosts without NCCL's client.
 *   weft-ras [-h host] [-p port] [-t secs] [-f text|json] [-m[groups]] [-v]
 * It connects, greets ("CLIENT PROTOCOL 2"), sends TIMEOUT and SET FORMAT when asked, then
 * STATUS (printed until the service closes) or MONITOR (printed until interrupted). A process
 * that accepts but does not greet within a second (a stopped rank process that holds one of
 * the host's SO_REUSEPORT sockets), or closes the connection before greeting (a process that
 * died with it queued), is left and the connection made again. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define RAS_PORT "28028"
#define RAS_PROTOCOL 2
#define GREET_TRIES 20

typedef struct {
  const char *host, *port, *format, *groups;
  int timeout, verbose, monitor;
} opts;

static void usage(FILE* f, const char* argv0) {
  fprintf(f,
          "Usage: %s [OPTION]...\n"
          "Print the state of a running weft (or NCCL) job from its RAS service.\n\n"
          "  -f, --format=FMT       text (default) or json\n"
          "  -h, --host=HOST        host of the job's RAS port (default localhost)\n"
          "  -m, --monitor[=GROUPS] stream peer events (lifecycle, trace, all; default lifecycle)\n"
          "  -p, --port=PORT        the RAS port (default " RAS_PORT ", NCCL_RAS_ADDR's)\n"
          "  -t, --timeout=SECS     how long the service may wait for other processes (0: no limit)\n"
          "  -v, --verbose          more detail (each rank's hang-report line)\n"
          "      --help             this text\n"
          "      --version          weft-ras's version\n", argv0);
}

static int write_all(int fd, const char* s) {
  size_t n = strlen(s), done = 0;
  while (done < n) {
    ssize_t w = send(fd, s + done, n - done, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    done += (size_t)w;
  }
  return 0;
}

/* One reply line into buf; -1 on error or timeout (errno EAGAIN), 0 at EOF. */
static ssize_t read_line(int fd, char* buf, size_t len) {
  size_t n = 0;
  while (n + 1 < len) {
    ssize_t r = recv(fd, buf + n, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      buf[n] = '\0';
      return r < 0 ? -1 : (ssize_t)n;
    }
    if (buf[n++] == '\n') break;
  }
  buf[n] = '\0';
  return (ssize_t)n;
}

static void set_timeout(int fd, int secs) {
  struct timeval tv = {secs, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* A connected socket whose service greeted us, or -1 (after saying why). */
static int connect_greeted(const opts* o) {
  for (int attempt = 0; attempt < GREET_TRIES; attempt++) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(o->host, o->port, &hints, &res);
    if (rc != 0) {
      fprintf(stderr, "weft-ras: %s port %s: %s\n", o->host, o->port, gai_strerror(rc));
      return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) {
      fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      set_timeout(fd, 1);
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        close(fd);
        fd = -1;
      }
    }
    freeaddrinfo(res);
    if (fd < 0) {
      fprintf(stderr, "weft-ras: cannot connect to %s port %s: %s\nIs a weft or NCCL job with "
              "its RAS service (NCCL_RAS_ENABLE=1, NCCL_RAS_ADDR) running there?\n", o->host,
              o->port, strerror(err));
      return -1;
    }
    char line[256];
    snprintf(line, sizeof line, "CLIENT PROTOCOL %d\n", RAS_PROTOCOL);
    ssize_t n = write_all(fd, line) == 0 ? read_line(fd, line, sizeof line) : -1;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      fprintf(stderr, "weft-ras: no greeting within 1 s (a stopped process?); connecting again\n");
      close(fd);
      continue;
    }
    if (n <= 0) { /* a process that died with our connection in its queue: try another */
      fprintf(stderr, "weft-ras: the connection closed before a greeting (%s); connecting again\n",
              n < 0 ? strerror(errno) : "end of file");
      close(fd);
      continue;
    }
    if (strncasecmp(line, "SERVER PROTOCOL ", 16) != 0) {
      fprintf(stderr, "weft-ras: unexpected greeting: %s", line);
      close(fd);
      return -1;
    }
    if (atoi(line + 16) != RAS_PROTOCOL)
      fprintf(stderr, "weft-ras: the service speaks protocol %d, this client %d; going on\n",
              atoi(line + 16), RAS_PROTOCOL);
    return fd;
  }
  fprintf(stderr, "weft-ras: no process on %s port %s greeted in %d tries\n", o->host, o->port,
          GREET_TRIES);
  return -1;
}

/* Send cmd and expect "OK". */
static int command_ok(int fd, const char* cmd) {
  char line[512];
  if (write_all(fd, cmd) != 0 || read_line(fd, line, sizeof line) <= 0) {
    fprintf(stderr, "weft-ras: no answer to %s", cmd);
    return -1;
  }
  if (strncasecmp(line, "OK", 2) != 0) {
    fprintf(stderr, "weft-ras: the service refused %s  %s", cmd, line);
    return -1;
  }
  return 0;
}

static int copy_out(int fd) {
  char buf[4096];
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      fprintf(stderr, "weft-ras: reading the report: %s\n",
              errno == EAGAIN ? "timed out" : strerror(errno));
      return 1;
    }
    if (r == 0) return 0;
    if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r || fflush(stdout) != 0) return 1;
  }
}

int main(int argc, char** argv) {
  opts o = {"localhost", RAS_PORT, NULL, NULL, -1, 0, 0};
  static const struct option lo[] = {
      {"format", required_argument, NULL, 'f'}, {"host", required_argument, NULL, 'h'},
      {"monitor", optional_argument, NULL, 'm'}, {"port", required_argument, NULL, 'p'},
      {"timeout", required_argument, NULL, 't'}, {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'H'},          {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "f:h:m::p:t:v", lo, NULL)) != -1) {
    char* end;
    switch (c) {
    case 'f':
      if (strcasecmp(optarg, "text") && strcasecmp(optarg, "json")) {
        fprintf(stderr, "weft-ras: --format %s: text or json\n", optarg);
        return 2;
      }
      o.format = optarg;
      break;
    case 'h': o.host = optarg; break;
    case 'm':
      o.monitor = 1;
      o.groups = optarg;
      break;
    case 'p': {
      long p = strtol(optarg, &end, 10);
      if (*end || p < 1 || p > 65535) {
        fprintf(stderr, "weft-ras: --port %s: 1 to 65535\n", optarg);
        return 2;
      }
      o.port = optarg;
      break;
    }
    case 't': {
      long t = strtol(optarg, &end, 10);
      if (*end || end == optarg || t < 0 || t > 86400) {
        fprintf(stderr, "weft-ras: --timeout %s: seconds, 0 to 86400\n", optarg);
        return 2;
      }
      o.timeout = (int)t;
      break;
    }
    case 'v': o.verbose = 1; break;
    case 'H': usage(stdout, argv[0]); return 0;
    case 'V': printf("weft-ras (weft) %s\n", WEFT_RAS_VERSION); return 0;
    default: usage(stderr, argv[0]); return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "weft-ras: unexpected argument %s\n", argv[optind]);
    usage(stderr, argv[0]);
    return 2;
  }
  int fd = connect_greeted(&o);
  if (fd < 0) return 1;
  char cmd[256];
  int rc = 1;
  if (o.timeout >= 0) {
    snprintf(cmd, sizeof cmd, "TIMEOUT %d\n", o.timeout);
    if (command_ok(fd, cmd)) goto out;
  }
  if (o.format) {
    snprintf(cmd, sizeof cmd, "SET FORMAT %s\n", o.format);
    if (command_ok(fd, cmd)) goto out;
  }
  /* the report may take the service's own timeout to collect, plus a margin */
  set_timeout(fd, o.timeout == 0 ? 0 : (o.timeout > 0 ? o.timeout : 5) * 2 + 1);
  if (o.monitor) {
    snprintf(cmd, sizeof cmd, "MONITOR%s%s\n", o.groups ? " " : "", o.groups ? o.groups : "");
    if (command_ok(fd, cmd)) goto out;
    set_timeout(fd, 0);
    fprintf(stderr, "weft-ras: watching peer events (Ctrl+C ends)\n");
    rc = copy_out(fd);
  } else {
    snprintf(cmd, sizeof cmd, "%sSTATUS\n", o.verbose ? "VERBOSE " : "");
    rc = write_all(fd, cmd) == 0 ? copy_out(fd) : 1;
  }
out:
  close(fd);
  return rc;
}
