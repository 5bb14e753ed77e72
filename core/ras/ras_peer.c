/* The RAS network between hosts, answering side. Every process with the RAS service has one
 * peer listener on the interface its bootstrap uses (any port); its address travels in the rank
 * info every init allgathers, so each rank knows where every other rank's process takes RAS
 * questions. A question names a communicator (hash, nranks) and proves it comes from one of its
 * ranks (ras_key, derived from the id's secret, which the report never shows); the answer is
 * this host's ranks of that communicator as this host's status board and /proc show them
 * (ras_local_row), so any live process of a host answers for all its ranks, a stopped or dead
 * one's included. The asking side is ras_gather.c.
 *
 * One thread, never blocking: at most PEER_MAX connections at once (a newcomer evicts the
 * oldest), PEER_WAIT_MS x NCCL_RAS_TIMEOUT_FACTOR to ask and take the answer, a fixed-size
 * question, an answer of at most RAS_PEER_ROWS_MAX rows. A connection that sends anything else
 * is closed. Its own thread (not the client thread's): a process that is itself gathering
 * still answers, so two hosts asking each other at once never wait on each other. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/comm.h"
#include "ras/ras.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/param.h"

#define PEER_MAX 64
#define PEER_WAIT_MS 2000

/* ---- the rows of one communicator ---- */

typedef struct {
  uint64_t comm_hash, key, now;
  int nranks, factor, found, max, n;
  ras_row* rows;
} rows_args;

static void rows_visit(struct ncclComm* comm, void* arg) {
  rows_args* a = arg;
  if (a->found || comm->comm_hash != a->comm_hash || comm->nranks != a->nranks ||
      comm->ras_key != a->key)
    return;
  int st = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  if (st == WEFT_COMM_INITIALIZING) return; /* its rank infos are being written */
  a->found = 1;
  const weft_rank_info* p = comm->peers;
  if (!p) return;
  a->rows = malloc((size_t)a->max * sizeof *a->rows);
  if (!a->rows) return;
  for (int r = 0; r < comm->nranks && a->n < a->max; r++)
    if (comm_same_host(&p[r], &p[comm->rank]))
      ras_local_row(comm, r, a->now, a->factor, &a->rows[a->n++]);
}

int ras_peer_rows(uint64_t comm_hash, uint64_t key, int nranks, ras_row** out, int max) {
  rows_args a = {comm_hash, key, clock_ms(), nranks, (int)param_int(WEFT_PARAM_RAS_TIMEOUT_FACTOR),
                 0, max, 0, NULL};
  comm_registry_visit(rows_visit, &a);
  *out = a.rows;
  return a.found ? a.n : -1;
}

/* ---- the thread ---- */

typedef struct {
  int fd;
  uint64_t since_ms;
  ras_peer_req req;
  size_t got;
  unsigned char* out;
  size_t len, sent;
} peer_conn;

struct ras_peer_server {
  int listen_fd, stop_pipe[2], factor;
  pthread_t thread;
  peer_conn c[PEER_MAX];
};

static void conn_close(peer_conn* c) {
  if (c->fd >= 0) close(c->fd);
  free(c->out);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

/* The question is complete: build the answer. */
static void conn_answer(peer_conn* c) {
  if (c->req.magic != RAS_PEER_MAGIC || c->req.version != WEFT_RAS_PROTOCOL ||
      c->req.nranks < 1) {
    conn_close(c); /* not a weft RAS peer of this build */
    return;
  }
  ras_row* rows = NULL;
  int n = ras_peer_rows(c->req.comm_hash, c->req.key, c->req.nranks, &rows, RAS_PEER_ROWS_MAX);
  ras_peer_ans ans = {RAS_PEER_MAGIC, n < 0 ? 1 : 0, n < 0 ? 0 : n};
  size_t rows_len = n > 0 ? (size_t)n * sizeof *rows : 0;
  c->out = malloc(sizeof ans + rows_len);
  if (!c->out) {
    free(rows);
    conn_close(c);
    return;
  }
  memcpy(c->out, &ans, sizeof ans);
  if (rows_len) memcpy(c->out + sizeof ans, rows, rows_len);
  c->len = sizeof ans + rows_len;
  free(rows);
}

static void conn_io(peer_conn* c) {
  while (!c->out && c->got < sizeof c->req) {
    ssize_t r = recv(c->fd, (char*)&c->req + c->got, sizeof c->req - c->got, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      conn_close(c);
      return;
    }
    if (r < 0) return;
    c->got += (size_t)r;
    if (c->got == sizeof c->req) conn_answer(c);
    if (c->fd < 0) return;
  }
  while (c->out && c->sent < c->len) {
    ssize_t w = send(c->fd, c->out + c->sent, c->len - c->sent, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) conn_close(c);
      return;
    }
    c->sent += (size_t)w;
  }
  if (c->out && c->sent == c->len) conn_close(c);
}

static void* peer_main(void* arg) {
  ras_peer_server* s = arg;
  struct pollfd pf[2 + PEER_MAX];
  int at[2 + PEER_MAX];
  for (;;) {
    int n = 0;
    pf[n++] = (struct pollfd){.fd = s->stop_pipe[0], .events = POLLIN};
    pf[n++] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
    for (int i = 0; i < PEER_MAX; i++) {
      if (s->c[i].fd < 0) continue;
      at[n] = i;
      pf[n++] = (struct pollfd){.fd = s->c[i].fd, .events = (short)(s->c[i].out ? POLLOUT : POLLIN)};
    }
    if (poll(pf, (nfds_t)n, 250) < 0 && errno != EINTR) break;
    if (pf[0].revents) break;
    uint64_t now = clock_ms();
    for (int k = 2; k < n; k++) {
      peer_conn* c = &s->c[at[k]];
      if (c->fd < 0 || !pf[k].revents) continue;
      if (pf[k].revents & (POLLERR | POLLNVAL)) conn_close(c);
      else conn_io(c);
    }
    if (pf[1].revents & POLLIN) {
      for (int k = 0; k < 16; k++) { /* a bounded batch: the loop comes back */
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        int slot = -1, oldest = 0;
        for (int i = 0; i < PEER_MAX && slot < 0; i++)
          if (s->c[i].fd < 0) slot = i;
        if (slot < 0) { /* full: the oldest goes */
          for (int i = 1; i < PEER_MAX; i++)
            if (s->c[i].since_ms < s->c[oldest].since_ms) oldest = i;
          conn_close(&s->c[oldest]);
          slot = oldest;
        }
        s->c[slot].fd = fd;
        s->c[slot].since_ms = now;
      }
    }
    uint64_t wait_ms = (uint64_t)PEER_WAIT_MS * (uint64_t)s->factor;
    for (int i = 0; i < PEER_MAX; i++)
      if (s->c[i].fd >= 0 && now - s->c[i].since_ms > wait_ms) conn_close(&s->c[i]);
  }
  for (int i = 0; i < PEER_MAX; i++)
    if (s->c[i].fd >= 0) conn_close(&s->c[i]);
  return NULL;
}

ras_peer_server* ras_peer_start(int listen_fd) {
  ras_peer_server* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->listen_fd = listen_fd;
  s->factor = (int)param_int(WEFT_PARAM_RAS_TIMEOUT_FACTOR);
  for (int i = 0; i < PEER_MAX; i++) s->c[i].fd = -1;
  if (pipe2(s->stop_pipe, O_CLOEXEC) != 0) {
    free(s);
    return NULL;
  }
  if (pthread_create(&s->thread, NULL, peer_main, s) != 0) {
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    free(s);
    return NULL;
  }
  return s;
}

void ras_peer_stop(ras_peer_server* s) {
  if (!s) return;
  ssize_t w = write(s->stop_pipe[1], "s", 1);
  (void)w;
  pthread_join(s->thread, NULL);
  close(s->stop_pipe[0]);
  close(s->stop_pipe[1]);
  close(s->listen_fd);
  free(s);
}
