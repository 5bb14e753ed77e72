/* The root serves one init. Ranks connect, say hello with their rank, nranks and their own
 * listener's address, and the root closes that connection. When every rank has checked in, the
 * root connects back to each one and hands it the address of rank+1 (the ranks then build the
 * ring and allgather the rest); when the init cannot complete in time it connects back to those
 * that came and names the ranks that did not. Then it closes everything and ends. Holding no
 * connection per rank keeps the root within a default fd limit at scale. Two parties claiming
 * one rank fail the init for every rank, with both claimants' addresses.
 *
 * One thread and one listener per process serve the roots of all its random ids
 * (ncclGetUniqueId): a hello names its root by the id's magic and proves it with the id's
 * secret. An NCCL_COMM_ID root has an address, a listener and a thread of its own. Deadlines:
 * before the first check-in a root waits WEFT_INIT_TIMEOUT_MS (an id nobody uses costs a few
 * hundred bytes for that long). Each check-in says how much longer that rank will wait; the
 * root gives its verdict a little before the most impatient rank gives up, so the ranks hear
 * why the init failed instead of only that it did. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/param.h"

#define ROOT_CONNECT_MS 2000 /* connecting back to one rank */
#define ROOT_DELIVER_MS 10000 /* connecting back to all of them */
#define ROOT_QUERY_MS 200 /* sending a progress query its answer */

typedef struct root_state {
  weft_bootstrap_id id;
  char name[WEFT_SOCKADDR_STRLEN + 24];
  uint64_t idle_deadline; /* while nobody has checked in */
  uint64_t deadline;      /* after the first check-in */
  uint64_t first_ms;
  int nranks; /* 0 until the first check-in */
  int count;
  unsigned char* present;
  weft_sockaddr* addrs;
  int claimed;    /* two parties claimed one rank: every check-in gets the CLAIMED verdict */
  int odd_rank, odd_nranks; /* odd_nranks > 0: a rank disagreed on nranks; all get NRANKS */
  bs_claim claim;
  struct root_state* next;
} root_state;

static int live_roots;

int bs_root_threads_live(void) { return __atomic_load_n(&live_roots, __ATOMIC_ACQUIRE); }

/* How long before a rank's own deadline the root answers: enough for the answer to arrive. */
static int64_t verdict_margin_ms(int64_t rank_wait_ms) {
  int64_t m = rank_wait_ms / 10;
  if (m < 100) m = 100;
  if (m > 1000) m = 1000;
  if (m > rank_wait_ms / 2) m = rank_wait_ms / 2;
  return m;
}

/* Connect back to a rank's listener and send it a verdict. Failures are logged, not fatal:
 * the other ranks still get theirs. */
static void send_verdict(root_state* s, int rank, int rank_nranks, const weft_sockaddr* to,
                         const bs_verdict* v, const bs_range* ranges, int connect_ms) {
  char a[WEFT_SOCKADDR_STRLEN];
  unsigned char buf[sizeof(bs_hello) + sizeof(bs_verdict) + BS_MAX_RANGES * sizeof(bs_range)];
  bs_hello h;
  bs_hello_init(&h, &s->id, BS_KIND_VERDICT, rank, rank_nranks);
  size_t len = 0;
  memcpy(buf, &h, sizeof h);
  len += sizeof h;
  memcpy(buf + len, v, sizeof *v);
  len += sizeof *v;
  if (v->nranges) memcpy(buf + len, ranges, v->nranges * sizeof(bs_range)); /* else NULL */
  len += v->nranges * sizeof(bs_range);
  int fd = -1;
  if (socket_connect(to, connect_ms, &fd) != ncclSuccess) {
    WARN("%s: cannot reach rank %d at %s to give it the init verdict", s->name, rank,
         socket_addr_str(to, a, sizeof a));
    return;
  }
  if (socket_send_all(fd, buf, len, ROOT_CONNECT_MS) != ncclSuccess)
    WARN("%s: sending the init verdict to rank %d at %s failed", s->name, rank,
         socket_addr_str(to, a, sizeof a));
  socket_close(fd);
}

static void send_nranks(root_state* s, int rank, int rank_nranks, const weft_sockaddr* to) {
  bs_verdict v;
  memset(&v, 0, sizeof v);
  v.status = BS_VERDICT_NRANKS;
  v.root_nranks = s->nranks;
  v.odd_rank = s->odd_rank;
  v.odd_nranks = s->odd_nranks;
  send_verdict(s, rank, rank_nranks, to, &v, NULL, ROOT_CONNECT_MS);
}

static void send_claimed(root_state* s, int rank, const weft_sockaddr* to) {
  bs_verdict v;
  bs_range ranges[BS_CLAIM_RANGES];
  memset(&v, 0, sizeof v);
  memset(ranges, 0, sizeof ranges);
  v.status = BS_VERDICT_CLAIMED;
  v.root_nranks = s->nranks;
  v.nranges = (uint32_t)BS_CLAIM_RANGES;
  memcpy(ranges, &s->claim, sizeof s->claim);
  send_verdict(s, rank, s->nranks, to, &v, ranges, ROOT_CONNECT_MS);
}

/* QUERY: who has not checked in yet, answered on the query's own connection (a few hundred
 * bytes; a reader that does not take them costs this thread at most ROOT_QUERY_MS). */
static void answer_query(root_state* s, int fd, const bs_hello* h) {
  unsigned char buf[sizeof(bs_hello) + sizeof(bs_verdict) + BS_MAX_RANGES * sizeof(bs_range)];
  bs_hello r;
  bs_verdict v;
  bs_range ranges[BS_MAX_RANGES];
  bs_hello_init(&r, &s->id, BS_KIND_VERDICT, h->rank, h->nranks);
  memset(&v, 0, sizeof v);
  v.status = BS_VERDICT_PROGRESS;
  v.root_nranks = s->nranks;
  if (s->nranks > 0) {
    v.nranges = (uint32_t)bs_missing_ranges(s->present, s->nranks, ranges, BS_MAX_RANGES,
                                            &v.nmissing);
    v.waited_ms = (uint32_t)(clock_ms() - s->first_ms);
  }
  memcpy(buf, &r, sizeof r);
  memcpy(buf + sizeof r, &v, sizeof v);
  size_t len = sizeof r + sizeof v;
  if (v.nranges) memcpy(buf + len, ranges, v.nranges * sizeof(bs_range));
  len += v.nranges * sizeof(bs_range);
  if (socket_send_all(fd, buf, len, ROOT_QUERY_MS) != ncclSuccess)
    INFO(NCCL_BOOTSTRAP, "%s: the answer to rank %d's progress query did not go out", s->name,
         h->rank);
}

static int on_checkin(void* ctx, int fd, const bs_hello* h, const weft_sockaddr* from) {
  root_state* s = ctx;
  char a[WEFT_SOCKADDR_STRLEN];
  if (h->kind == BS_KIND_QUERY) {
    answer_query(s, fd, h);
    return 0;
  }
  if (h->kind != BS_KIND_CHECKIN) {
    INFO(NCCL_BOOTSTRAP, "%s: dropped connection from %s: not a check-in (kind %u)", s->name,
         socket_addr_str(from, a, sizeof a), h->kind);
    return 0;
  }
  uint64_t now = clock_ms();
  if (s->nranks == 0) {
    /* nranks is bounded by bs_hello_check before it sizes anything. */
    s->present = calloc((size_t)h->nranks, 1);
    s->addrs = calloc((size_t)h->nranks, sizeof *s->addrs);
    if (!s->present || !s->addrs) {
      WARN("%s: out of memory for %d ranks", s->name, h->nranks);
      free(s->present);
      free(s->addrs);
      s->present = NULL;
      s->addrs = NULL;
      return 0;
    }
    s->nranks = h->nranks;
    s->first_ms = now;
    s->deadline = UINT64_MAX;
  } else if (h->nranks != s->nranks || s->odd_nranks > 0) {
    /* No init can succeed: which nranks is right is not the root's to know, so every rank,
     * those already here and those still to come, hears it now (not at the timeout). */
    if (s->odd_nranks == 0) {
      s->odd_rank = h->rank;
      s->odd_nranks = h->nranks;
      WARN("%s: rank %d checked in with nranks %d, but the first check-in said %d: the init "
           "fails for every rank", s->name, h->rank, h->nranks, s->nranks);
      send_nranks(s, h->rank, h->nranks, &h->addr); /* first: the others may exit at once */
      for (int r = 0; r < s->nranks; r++)
        if (s->present[r]) send_nranks(s, r, s->nranks, &s->addrs[r]);
      return 0;
    }
    send_nranks(s, h->rank, h->nranks, &h->addr);
    return 0;
  }
  if (s->present[h->rank] && !s->claimed) {
    char b1[WEFT_SOCKADDR_STRLEN], b2[WEFT_SOCKADDR_STRLEN];
    s->claimed = 1;
    memset(&s->claim, 0, sizeof s->claim);
    s->claim.rank = h->rank;
    s->claim.first = s->addrs[h->rank];
    s->claim.second = h->addr;
    s->claim.second_from = *from;
    WARN("%s: rank %d was claimed twice: first by the process listening on %s, then by the "
         "one listening on %s (connecting from %s); the init fails for every rank (a "
         "misconfigured launcher, or someone else who knows this NCCL_COMM_ID: set "
         "WEFT_COMM_SECRET)",
         s->name, h->rank, socket_addr_str(&s->claim.first, b1, sizeof b1),
         socket_addr_str(&s->claim.second, b2, sizeof b2), socket_addr_str(from, a, sizeof a));
    for (int r = 0; r < s->nranks; r++)
      if (s->present[r]) send_claimed(s, r, &s->addrs[r]);
    send_claimed(s, h->rank, &h->addr);
    return 0;
  }
  if (s->claimed) { /* a rank that comes later hears it at once */
    if (!s->present[h->rank]) { /* the root ends once every rank has heard it */
      s->present[h->rank] = 1;
      s->count++;
    }
    send_claimed(s, h->rank, &h->addr);
    return 0;
  }
  s->present[h->rank] = 1;
  s->addrs[h->rank] = h->addr;
  s->count++;
  int64_t wait = h->timeout_ms;
  uint64_t cand = now + (uint64_t)(wait - verdict_margin_ms(wait));
  if (cand < s->deadline) s->deadline = cand;
  INFO(NCCL_BOOTSTRAP, "%s: rank %d/%d checked in (%d of %d)", s->name, h->rank, h->nranks,
       s->count, s->nranks);
  return 0; /* the check-in connection has done its job */
}

static void deliver_ok(root_state* s) {
  uint64_t end = clock_ms() + ROOT_DELIVER_MS;
  for (int r = 0; r < s->nranks; r++) {
    bs_verdict v;
    memset(&v, 0, sizeof v);
    v.status = BS_VERDICT_OK;
    v.root_nranks = s->nranks;
    v.next = s->addrs[(r + 1) % s->nranks];
    uint64_t now = clock_ms();
    int ms = now >= end ? 0 : (int)(end - now < ROOT_CONNECT_MS ? end - now : ROOT_CONNECT_MS);
    send_verdict(s, r, s->nranks, &s->addrs[r], &v, NULL, ms);
  }
  INFO(NCCL_BOOTSTRAP, "%s: all %d ranks checked in after %llu ms", s->name, s->nranks,
       (unsigned long long)(clock_ms() - s->first_ms));
}

static void deliver_timeout(root_state* s) {
  bs_verdict v;
  bs_range ranges[BS_MAX_RANGES];
  memset(&v, 0, sizeof v);
  v.status = BS_VERDICT_TIMEOUT;
  v.root_nranks = s->nranks;
  v.nranges = (uint32_t)bs_missing_ranges(s->present, s->nranks, ranges, BS_MAX_RANGES,
                                          &v.nmissing);
  v.waited_ms = (uint32_t)(clock_ms() - s->first_ms);
  char list[512];
  bs_format_ranges(ranges, (int)v.nranges, v.nmissing, list, sizeof list);
  /* Logged before the verdicts go out, so that in a process that is also a rank the rank's own
   * error is the last one. */
  WARN("%s: init timed out after %u ms: %s never checked in (%d of %d did)", s->name,
       v.waited_ms, list, s->count, s->nranks);
  uint64_t end = clock_ms() + ROOT_DELIVER_MS;
  for (int r = 0; r < s->nranks; r++) {
    if (!s->present[r]) continue;
    uint64_t now = clock_ms();
    int ms = now >= end ? 0 : (int)(end - now < ROOT_CONNECT_MS ? end - now : ROOT_CONNECT_MS);
    send_verdict(s, r, s->nranks, &s->addrs[r], &v, ranges, ms);
  }
}

/* ---- the server: one listener and one thread serving a list of roots ---- */

typedef struct root_server {
  int listen_fd;
  weft_sockaddr addr;
  int shared; /* the process's server of random ids (else one NCCL_COMM_ID root) */
  char name[WEFT_SOCKADDR_STRLEN + 24];
  root_state* roots;
  bs_pending_set pending;
} root_server;

/* Random ids of this process share one server (guarded by srv_lock); it stops with its last
 * root and the next id starts another. */
static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static root_server* shared_srv;
static pid_t shared_pid;

static void lock_if(const root_server* v) {
  if (v->shared) pthread_mutex_lock(&srv_lock);
}
static void unlock_if(const root_server* v) {
  if (v->shared) pthread_mutex_unlock(&srv_lock);
}

/* A hello on the server: the root it names by its magic, if the secret matches. */
static int on_server_hello(void* ctx, int fd, const bs_hello* h, const weft_sockaddr* from) {
  root_server* v = ctx;
  char a[WEFT_SOCKADDR_STRLEN];
  lock_if(v);
  root_state* s = v->roots;
  while (s && s->id.magic != h->magic) s = s->next;
  const char* bad = s ? bs_hello_check(h, s->id.magic, s->id.secret) : "no such id here";
  if (bad) {
    unlock_if(v);
    INFO(NCCL_BOOTSTRAP, "%s: dropped connection from %s: %s", v->name,
         socket_addr_str(from, a, sizeof a), bad);
    return 0;
  }
  unlock_if(v);
  /* Only this thread reads or frees a root once it is listed, so s stays valid; on_checkin
   * may send verdicts, which must not hold up ncclGetUniqueId on the lock. */
  return on_checkin(s, fd, h, from);
}

/* Under the lock: take out a root whose work is over (its verdicts still to be sent). */
static root_state* take_finished(root_server* v, uint64_t now, uint64_t* next_deadline) {
  *next_deadline = UINT64_MAX;
  for (root_state** pp = &v->roots; *pp; pp = &(*pp)->next) {
    root_state* s = *pp;
    uint64_t d = s->nranks > 0 ? s->deadline : s->idle_deadline;
    int done = (s->nranks > 0 && s->count == s->nranks) || now >= d;
    if (done) {
      *pp = s->next;
      return s;
    }
    if (d < *next_deadline) *next_deadline = d;
  }
  return NULL;
}

static void root_finish(root_state* s) {
  if (s->claimed)
    INFO(NCCL_BOOTSTRAP, "%s: closing after the double claim of rank %d", s->name,
         s->claim.rank);
  else if (s->odd_nranks > 0)
    INFO(NCCL_BOOTSTRAP, "%s: closing after ranks disagreed on nranks (%d, %d)", s->name,
         s->nranks, s->odd_nranks);
  else if (s->nranks > 0 && s->count == s->nranks)
    deliver_ok(s);
  else if (s->nranks > 0)
    deliver_timeout(s);
  else
    INFO(NCCL_BOOTSTRAP, "%s: no rank checked in within %lld ms; closing", s->name,
         (long long)param_int(WEFT_PARAM_INIT_TIMEOUT_MS));
  free(s->present);
  free(s->addrs);
  free(s);
  __atomic_fetch_sub(&live_roots, 1, __ATOMIC_RELEASE);
}

static void* server_main(void* arg) {
  root_server* v = arg;
  struct pollfd pfd[1 + BS_MAX_PENDING];
  pthread_setname_np(pthread_self(), "weft-bs-root");
  for (;;) {
    uint64_t now = clock_ms(), deadline;
    lock_if(v);
    root_state* fin = take_finished(v, now, &deadline);
    int empty = v->roots == NULL && fin == NULL;
    if (empty && v->shared && shared_srv == v) shared_srv = NULL; /* the next id starts anew */
    unlock_if(v);
    if (fin) {
      root_finish(fin);
      continue;
    }
    if (empty) break;
    pfd[0].fd = v->listen_fd;
    pfd[0].events = POLLIN;
    pfd[0].revents = 0;
    int n = 1 + bs_pending_pollfds(&v->pending, pfd + 1);
    uint64_t wake = bs_pending_next_deadline(&v->pending);
    if (deadline < wake) wake = deadline;
    int ms = wake <= now ? 0 : (wake - now > 1000 ? 1000 : (int)(wake - now));
    if (poll(pfd, (nfds_t)n, ms) < 0) continue; /* EINTR: the loop re-reads the clock */
    /* magic 0: each hello is checked against the root its magic names (on_server_hello). */
    bs_pending_advance(&v->pending, pfd + 1, 0, 0, v->name, on_server_hello, v);
    if (pfd[0].revents) bs_pending_accept(&v->pending, v->listen_fd, v->name);
  }
  bs_pending_close_all(&v->pending);
  close(v->listen_fd);
  free(v);
  return NULL;
}

static root_state* root_new(const weft_bootstrap_id* id) {
  root_state* s = calloc(1, sizeof *s);
  if (!s) {
    WARN("bootstrap root: out of memory");
    return NULL;
  }
  char a[WEFT_SOCKADDR_STRLEN];
  s->id = *id;
  snprintf(s->name, sizeof s->name, "bootstrap root %s",
           socket_addr_str(&id->addr, a, sizeof a));
  s->idle_deadline = clock_ms() + (uint64_t)param_int(WEFT_PARAM_INIT_TIMEOUT_MS);
  return s;
}

static ncclResult_t server_start(root_server* v) {
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &attr, server_main, v);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    WARN("bootstrap root: cannot start its thread: %s", strerror(rc));
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t bs_root_start(const weft_bootstrap_id* id, int listen_fd) {
  root_server* v = calloc(1, sizeof *v);
  root_state* s = v ? root_new(id) : NULL;
  if (!s) {
    free(v);
    return ncclSystemError;
  }
  v->listen_fd = listen_fd;
  v->addr = id->addr;
  snprintf(v->name, sizeof v->name, "%s", s->name);
  v->roots = s;
  __atomic_fetch_add(&live_roots, 1, __ATOMIC_ACQ_REL);
  ncclResult_t res = server_start(v);
  if (res != ncclSuccess) {
    __atomic_fetch_sub(&live_roots, 1, __ATOMIC_ACQ_REL);
    free(s);
    free(v); /* the caller closes listen_fd */
  }
  return res;
}

ncclResult_t bs_root_add_shared(weft_bootstrap_id* id, const weft_sockaddr* bind_addr) {
  pthread_mutex_lock(&srv_lock);
  if (shared_pid != getpid()) { /* a forked child has none of its parent's threads */
    shared_pid = getpid();
    shared_srv = NULL;
  }
  ncclResult_t res = ncclSuccess;
  root_server* v = shared_srv;
  if (!v) {
    v = calloc(1, sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&srv_lock);
      WARN("bootstrap root: out of memory");
      return ncclSystemError;
    }
    v->shared = 1;
    v->listen_fd = -1;
    res = socket_listen(bind_addr, &v->listen_fd, &v->addr);
    if (res == ncclSuccess) res = socket_set_nonblocking(v->listen_fd, 1);
    if (res == ncclSuccess) {
      char a[WEFT_SOCKADDR_STRLEN];
      snprintf(v->name, sizeof v->name, "bootstrap root %s",
               socket_addr_str(&v->addr, a, sizeof a));
      res = server_start(v);
    }
    if (res != ncclSuccess) {
      if (v->listen_fd >= 0) close(v->listen_fd);
      free(v);
      pthread_mutex_unlock(&srv_lock);
      return res;
    }
    shared_srv = v;
  }
  id->addr = v->addr;
  root_state* s = root_new(id);
  if (!s) {
    /* The server stops by itself when it finds no root. */
    pthread_mutex_unlock(&srv_lock);
    return ncclSystemError;
  }
  s->next = v->roots;
  v->roots = s;
  __atomic_fetch_add(&live_roots, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&srv_lock);
  return ncclSuccess;
}

/* ---- asking a root how its init goes (the RAS service, while a rank waits in init) ---- */

ncclResult_t bootstrap_query_init(const ncclUniqueId* uid, int rank, int nranks, int timeout_ms,
                                  bootstrap_init_progress* out) {
  weft_bootstrap_id id;
  memset(out, 0, sizeof *out);
  if (nranks < 1 || nranks > BS_MAX_RANKS || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (bootstrap_id_decode(uid, &id) != ncclSuccess) return ncclInvalidArgument;
  int fd = -1, done = 0;
  uint64_t deadline = clock_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
  ncclResult_t res = socket_connect_start(&id.addr, &fd); /* one try: no retry on refusal */
  while (res == ncclSuccess && !done) {
    res = socket_connect_poll(fd, &done);
    if (res != ncclSuccess || done) break;
    if (clock_ms() >= deadline) {
      res = ncclRemoteError;
      break;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    poll(&p, 1, 10);
  }
  bs_hello h, r;
  bs_verdict v;
  bs_hello_init(&h, &id, BS_KIND_QUERY, rank, nranks);
  int ms = timeout_ms > 0 ? timeout_ms : 1;
  if (res == ncclSuccess) res = socket_send_all(fd, &h, sizeof h, ms);
  if (res == ncclSuccess) res = socket_recv_all(fd, &r, sizeof r, ms);
  if (res == ncclSuccess && (bs_hello_check(&r, id.magic, id.secret) != NULL ||
                             r.kind != BS_KIND_VERDICT))
    res = ncclRemoteError;
  if (res == ncclSuccess) res = socket_recv_all(fd, &v, sizeof v, ms);
  if (res == ncclSuccess && (v.status != BS_VERDICT_PROGRESS || v.nranges > BS_MAX_RANGES ||
                             v.root_nranks < 0 || v.root_nranks > BS_MAX_RANKS))
    res = ncclRemoteError;
  bs_range ranges[BS_MAX_RANGES];
  if (res == ncclSuccess && v.nranges)
    res = socket_recv_all(fd, ranges, v.nranges * sizeof(bs_range), ms);
  if (fd >= 0) socket_close(fd);
  if (res != ncclSuccess) return ncclRemoteError; /* refused, closed, silent or not a root */
  out->nranks = v.root_nranks;
  out->nmissing = v.root_nranks ? (int)v.nmissing : nranks;
  out->waited_ms = (int)v.waited_ms;
  out->nranges = 0;
  for (uint32_t i = 0; i < v.nranges; i++) {
    if (ranges[i].first < 0 || ranges[i].last < ranges[i].first || ranges[i].last >= v.root_nranks)
      return ncclRemoteError;
    out->first[out->nranges] = ranges[i].first;
    out->last[out->nranges++] = ranges[i].last;
  }
  return ncclSuccess;
}
