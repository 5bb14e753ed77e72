/* The RAS network between hosts, asking side: before a status report is written, the process
 * that answers the client asks the network what its own host cannot see.
 *  - A communicator whose init waits here: its bootstrap root, which ranks have not checked
 *    in (bootstrap_query_init), so the report names them.
 *  - A communicator with ranks on other hosts: for each other host, one process of that host
 *    (ras_peer.c answers), tried in rank order until one answers: its answer covers every rank
 *    of its host, stopped or dead ones too. A process that refuses (gone) or stays silent
 *    (stopped, hung: PEER_TRY_MS x NCCL_RAS_TIMEOUT_FACTOR) is passed over; when no process of
 *    a host answers, its ranks are reported dead (all refused) or unresponsive.
 * Bounds: at most PEER_INFLIGHT connections at once (one per host asked, never one per rank),
 * GATHER_MS x factor in all, answers of at most RAS_PEER_ROWS_MAX rows. Nothing here holds the
 * communicator registry's lock while it waits: what to ask is copied first. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/comm.h"
#include "ras/ras.h"
#include "util/check.h"
#include "util/clock.h"

#define PEER_INFLIGHT 64
#define PEER_TRY_MS 1000
#define GATHER_MS 6000
#define ROOT_QUERY_MS 500

typedef struct {
  uint64_t host_hash;
  int rank;
  weft_sockaddr addr;
} remote_rank;

/* One communicator to ask about (a copy: the communicator may go meanwhile). */
typedef struct {
  uint64_t comm_hash, key;
  int nranks, rank, in_init;
  ncclUniqueId id;
  remote_rank* remote; /* its ranks on other hosts, sorted by host then rank */
  int nremote;
} target;

typedef struct {
  target* t;
  int n, cap, oom;
} targets;

static void collect(struct ncclComm* comm, void* arg) {
  targets* ts = arg;
  if (ts->oom) return;
  for (int i = 0; i < ts->n; i++)
    if (ts->t[i].comm_hash == comm->comm_hash) return; /* two ranks of one comm in this process */
  int st = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  weft_hang_view v;
  int in_init = st == WEFT_COMM_INITIALIZING && !comm_hang_view(comm, comm->rank, &v) &&
                __atomic_load_n(&comm->init_id_set, __ATOMIC_ACQUIRE);
  int ready = st == WEFT_COMM_READY || st == WEFT_COMM_FINALIZED;
  if (!in_init && !(ready && comm->peers)) return;
  if (ts->n == ts->cap) {
    int cap = ts->cap ? 2 * ts->cap : 8;
    target* t = realloc(ts->t, (size_t)cap * sizeof *t);
    if (!t) {
      ts->oom = 1;
      return;
    }
    ts->t = t;
    ts->cap = cap;
  }
  target* t = &ts->t[ts->n];
  memset(t, 0, sizeof *t);
  t->comm_hash = comm->comm_hash;
  t->key = comm->ras_key;
  t->nranks = comm->nranks;
  t->rank = comm->rank;
  t->in_init = in_init;
  if (in_init) {
    t->id = comm->init_id;
    ts->n++;
    return;
  }
  const weft_rank_info* p = comm->peers;
  int k = 0;
  for (int r = 0; r < comm->nranks; r++) k += !comm_same_host(&p[r], &p[comm->rank]);
  if (k == 0) return; /* one host: its boards say everything */
  t->remote = malloc((size_t)k * sizeof *t->remote);
  if (!t->remote) {
    ts->oom = 1;
    return;
  }
  for (int r = 0; r < comm->nranks; r++)
    if (!comm_same_host(&p[r], &p[comm->rank]))
      t->remote[t->nremote++] = (remote_rank){p[r].host_hash, r, p[r].ras_addr};
  ts->n++;
}

static int by_host_rank(const void* x, const void* y) {
  const remote_rank *a = x, *b = y;
  if (a->host_hash != b->host_hash) return a->host_hash < b->host_hash ? -1 : 1;
  return a->rank - b->rank;
}

/* ---- asking the hosts of one communicator ---- */

typedef struct {
  target* t;
  int lo, hi;   /* its ranks: t->remote[lo..hi) */
  int next;     /* the next candidate to try (index into remote) */
  int fd, phase; /* phase 0 idle, 1 connecting, 2 sending, 3 receiving header, 4 rows */
  uint64_t deadline;
  int refused, silent; /* candidates that refused / stayed silent */
  ras_peer_req req;
  ras_peer_ans ans;
  size_t done;
  ras_row* rows;
  int answered, finished;
} host_job;

static void job_fail(host_job* h, int silent, ras_net* net) {
  if (h->fd >= 0) close(h->fd);
  h->fd = -1;
  h->phase = 0;
  if (silent) {
    h->silent++;
    net->timeouts++;
  } else {
    h->refused++;
  }
  free(h->rows);
  h->rows = NULL;
}

/* Start the next candidate (a rank whose process has a peer listener not tried yet). */
static void job_start(host_job* h, uint64_t now, uint64_t try_ms, ras_net* net) {
  while (h->next < h->hi) {
    const remote_rank* c = &h->t->remote[h->next++];
    if (c->addr.sa.sa_family != AF_INET && c->addr.sa.sa_family != AF_INET6) continue;
    int dup = 0; /* ranks of one process share its listener: ask it once */
    for (int i = h->lo; i < h->next - 1 && !dup; i++)
      dup = socket_addr_equal(&h->t->remote[i].addr, &c->addr);
    if (dup) continue;
    if (socket_connect_start(&c->addr, &h->fd) != ncclSuccess) {
      h->fd = -1;
      job_fail(h, 0, net);
      continue;
    }
    h->phase = 1;
    h->deadline = now + try_ms;
    h->done = 0;
    return;
  }
  h->finished = 1;
}

static void job_io(host_job* h, ras_net* net) {
  if (h->phase == 1) {
    int ok = 0;
    if (socket_connect_poll(h->fd, &ok) != ncclSuccess) {
      job_fail(h, 0, net);
      return;
    }
    if (!ok) return;
    h->phase = 2;
  }
  if (h->phase == 2) {
    if (socket_progress(h->fd, 1, &h->req, sizeof h->req, &h->done) != ncclSuccess) {
      job_fail(h, 0, net);
      return;
    }
    if (h->done < sizeof h->req) return;
    h->phase = 3;
    h->done = 0;
  }
  if (h->phase == 3) {
    if (socket_progress(h->fd, 0, &h->ans, sizeof h->ans, &h->done) != ncclSuccess) {
      job_fail(h, 0, net); /* closed: the process went, or it was not a RAS peer */
      return;
    }
    if (h->done < sizeof h->ans) return;
    if (h->ans.magic != RAS_PEER_MAGIC || h->ans.status != 0 || h->ans.nrows < 0 ||
        h->ans.nrows > RAS_PEER_ROWS_MAX || h->ans.nrows > h->t->nranks) {
      job_fail(h, 0, net); /* no such communicator there any more: try another process */
      return;
    }
    h->rows = malloc((size_t)(h->ans.nrows ? h->ans.nrows : 1) * sizeof *h->rows);
    if (!h->rows) {
      job_fail(h, 0, net);
      return;
    }
    h->phase = 4;
    h->done = 0;
  }
  if (h->phase == 4) {
    size_t len = (size_t)h->ans.nrows * sizeof *h->rows;
    if (socket_progress(h->fd, 0, h->rows, len, &h->done) != ncclSuccess) {
      job_fail(h, 0, net);
      return;
    }
    if (h->done < len) return;
    close(h->fd);
    h->fd = -1;
    h->answered = h->finished = 1;
  }
}

/* The rows of one communicator: what its hosts answered, or how they failed to. */
static void job_rows(host_job* h, ras_net_comm* nc) {
  const target* t = h->t;
  for (int i = h->lo; i < h->hi; i++) {
    int r = t->remote[i].rank;
    ras_row row;
    memset(&row, 0, sizeof row);
    row.rank = r;
    row.pid = -1;
    row.init_state = ncclInProgress;
    int found = 0;
    for (int k = 0; h->answered && k < h->ans.nrows && !found; k++)
      if (h->rows[k].rank == r && h->rows[k].kind >= 0 && h->rows[k].kind < RK_NKINDS &&
          h->rows[k].why >= 0 && h->rows[k].why < RAS_WHY_COUNT) {
        row = h->rows[k];
        found = 1;
      }
    if (!found && h->answered) continue; /* its host did not list it: left as not asked */
    if (!found) {
      if (h->refused == 0 && h->silent == 0) continue; /* no RAS peer on that host */
      row.kind = h->silent ? RK_UNRESPONSIVE : RK_DEAD;
      row.why = h->silent ? RAS_WHY_HOST_SILENT : RAS_WHY_HOST_REFUSED;
    }
    nc->rows[nc->nrows++] = row;
  }
}

static int by_rank(const void* x, const void* y) {
  return ((const ras_row*)x)->rank - ((const ras_row*)y)->rank;
}

void ras_gather(ras_net* net, int factor) {
  memset(net, 0, sizeof *net);
  targets ts = {0};
  comm_registry_visit(collect, &ts);
  if (ts.n == 0) {
    free(ts.t);
    return;
  }
  net->c = calloc((size_t)ts.n, sizeof *net->c);
  int nhosts = 0;
  for (int i = 0; net->c && i < ts.n; i++) {
    target* t = &ts.t[i];
    ras_net_comm* nc = &net->c[net->n++];
    nc->comm_hash = t->comm_hash;
    if (t->in_init) {
      nc->init_asked = 1;
      nc->init_answered = bootstrap_query_init(&t->id, t->rank, t->nranks,
                                               ROOT_QUERY_MS * factor, &nc->init) == ncclSuccess;
      continue;
    }
    qsort(t->remote, (size_t)t->nremote, sizeof *t->remote, by_host_rank);
    for (int k = 0; k < t->nremote; k++)
      nhosts += k == 0 || t->remote[k].host_hash != t->remote[k - 1].host_hash;
    nc->rows = malloc((size_t)(t->nremote ? t->nremote : 1) * sizeof *nc->rows);
  }
  host_job* jobs = nhosts ? calloc((size_t)nhosts, sizeof *jobs) : NULL;
  int nj = 0;
  for (int i = 0; jobs && i < net->n; i++) {
    target* t = &ts.t[i];
    if (t->in_init || !net->c[i].rows) continue;
    for (int k = 0; k < t->nremote; k++) {
      if (k > 0 && t->remote[k].host_hash == t->remote[k - 1].host_hash) continue;
      host_job* h = &jobs[nj++];
      h->t = t;
      h->lo = h->next = k;
      h->hi = k;
      while (h->hi < t->nremote && t->remote[h->hi].host_hash == t->remote[k].host_hash) h->hi++;
      h->fd = -1;
      h->req = (ras_peer_req){RAS_PEER_MAGIC, t->comm_hash, t->key, t->nranks, WEFT_RAS_PROTOCOL};
      net->c[i].hosts++;
    }
  }
  uint64_t try_ms = (uint64_t)PEER_TRY_MS * (uint64_t)factor;
  uint64_t end = clock_ms() + (uint64_t)GATHER_MS * (uint64_t)factor;
  struct pollfd pf[PEER_INFLIGHT];
  int at[PEER_INFLIGHT];
  for (;;) {
    uint64_t now = clock_ms();
    int n = 0, open = 0;
    for (int j = 0; j < nj; j++) {
      host_job* h = &jobs[j];
      if (h->finished) continue;
      open++;
      if (h->fd >= 0 && now > h->deadline) job_fail(h, 1, net);
      if (h->fd < 0 && n < PEER_INFLIGHT && now < end) job_start(h, now, try_ms, net);
      if (h->fd < 0 || n == PEER_INFLIGHT) continue;
      at[n] = j;
      pf[n++] = (struct pollfd){.fd = h->fd, .events = (short)(h->phase <= 2 ? POLLOUT : POLLIN)};
    }
    if (open == 0 || now >= end) break;
    if (n == 0) continue; /* every job started this turn failed at once: start the next ones */
    if (poll(pf, (nfds_t)n, 50) < 0 && errno != EINTR) break;
    for (int k = 0; k < n; k++)
      if (pf[k].revents) job_io(&jobs[at[k]], net);
  }
  for (int j = 0; j < nj; j++) {
    host_job* h = &jobs[j];
    if (h->fd >= 0) job_fail(h, 1, net); /* out of time: silent */
    ras_net_comm* nc = &net->c[h->t - ts.t];
    nc->hosts_answered += h->answered;
    job_rows(h, nc);
    free(h->rows);
  }
  for (int i = 0; i < net->n; i++)
    if (net->c[i].nrows) qsort(net->c[i].rows, (size_t)net->c[i].nrows, sizeof(ras_row), by_rank);
  free(jobs);
  for (int i = 0; i < ts.n; i++) free(ts.t[i].remote);
  free(ts.t);
}

void ras_net_free(ras_net* net) {
  for (int i = 0; i < net->n; i++) free(net->c[i].rows);
  free(net->c);
  memset(net, 0, sizeof *net);
}

const ras_net_comm* ras_net_find(const ras_net* net, uint64_t comm_hash) {
  for (int i = 0; net && i < net->n; i++)
    if (net->c[i].comm_hash == comm_hash) return &net->c[i];
  return NULL;
}
