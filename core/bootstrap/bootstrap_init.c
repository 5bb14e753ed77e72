/* Joining a bootstrap network, and leaving it. bootstrap_init runs four phases under one
 * deadline: listen (this rank's own listener) -> check in with the root -> wait for its verdict
 * (the address of rank+1, or why the init failed) -> connect the ring and allgather every
 * rank's listener address. Each phase that times out says what it was waiting for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/log.h"

#define BS_MAX_IFS 16

/* This rank's listener: on the first usable interface of the root's address family (NCCL's
 * interface order otherwise, see socket_find_interfaces). */
static ncclResult_t listen_here(weft_bootstrap* b) {
  char names[BS_MAX_IFS][IF_NAMESIZE];
  weft_sockaddr addrs[BS_MAX_IFS];
  int n = 0, pick = 0;
  WEFT_CHECK(socket_find_interfaces(names, addrs, BS_MAX_IFS, &n));
  for (int i = 0; i < n; i++)
    if (addrs[i].sa.sa_family == b->id.addr.sa.sa_family) {
      pick = i;
      break;
    }
  WEFT_CHECK(socket_listen(&addrs[pick], &b->listen_fd, &b->listen_addr));
  WEFT_CHECK(socket_set_nonblocking(b->listen_fd, 1));
  char a[WEFT_SOCKADDR_STRLEN];
  INFO(NCCL_BOOTSTRAP, "bootstrap rank %d/%d: listening on %s (%s)", b->rank, b->nranks,
       socket_addr_str(&b->listen_addr, a, sizeof a), names[pick]);
  return ncclSuccess;
}

static ncclResult_t check_in(weft_bootstrap* b, uint64_t deadline, int timeout_ms) {
  char a[WEFT_SOCKADDR_STRLEN];
  bs_hello h;
  bs_hello_init(&h, &b->id, BS_KIND_CHECKIN, b->rank, b->nranks);
  h.addr = b->listen_addr;
  /* A random id's root is up before the id exists: a refusal means its process is gone. An
   * NCCL_COMM_ID root starts with rank 0, which may come later: a refusal is retried. */
  bs_xfer x = {.kind = BS_X_CONNECT, .peer = -1, .fd = -1, .addr = &b->id.addr, .buf = &h,
               .len = sizeof h, .hello_deadline = deadline,
               .give_up_at = clock_ms() + BS_GIVE_UP_MS,
               .refused_waits = b->id.magic == WEFT_COMM_ID_MAGIC};
  ncclResult_t r = bs_run(b, &x, 1, NULL, NULL, deadline, "check-in with the root");
  bs_close_fd(&x.fd); /* the root keeps nothing open per rank; it will connect back */
  if (r != ncclSuccess && b->timed_out)
    WARN("bootstrap rank %d/%d: could not reach the bootstrap root at %s within %d ms", b->rank,
         b->nranks, socket_addr_str(&b->id.addr, a, sizeof a), timeout_ms);
  return r;
}

/* While this rank waits for its verdict, the root (another process, often a rank whose own
 * init has failed and which has exited) is probed now and then: a refused probe means no
 * verdict will come. */
typedef struct {
  int fd;
  uint64_t next;
} root_probe;

static ncclResult_t verdict_arrived(weft_bootstrap* b, void* ctx, int* ok) {
  root_probe* p = ctx;
  *ok = b->verdict_got;
  if (*ok) return ncclSuccess;
  uint64_t now = clock_ms();
  int refused = 0, done = 0;
  if (p->fd < 0 && now >= p->next) {
    p->next = now + BS_PROBE_MS;
    errno = 0;
    if (socket_connect_start(&b->id.addr, &p->fd) != ncclSuccess) {
      refused = errno == ECONNREFUSED;
      p->fd = -1;
    }
  } else if (p->fd >= 0) {
    if (socket_connect_poll(p->fd, &done) != ncclSuccess) {
      refused = errno == ECONNREFUSED;
      bs_close_fd(&p->fd);
    } else if (done) {
      bs_close_fd(&p->fd); /* it listens: alive (it drops the probe as a stray client) */
    }
  }
  if (refused) {
    char a[WEFT_SOCKADDR_STRLEN];
    WARN("bootstrap rank %d/%d: the bootstrap root at %s is gone (it refuses connections) "
         "before it gave this rank a verdict: the process that ran it has exited (its own init "
         "failed?)",
         b->rank, b->nranks, socket_addr_str(&b->id.addr, a, sizeof a));
    return ncclRemoteError;
  }
  return ncclSuccess;
}

static ncclResult_t await_verdict(weft_bootstrap* b, uint64_t deadline, int timeout_ms,
                                  uint64_t checked_in_after) {
  char a[WEFT_SOCKADDR_STRLEN], list[512];
  const char* root = socket_addr_str(&b->id.addr, a, sizeof a);
  root_probe probe = {.fd = -1, .next = clock_ms() + BS_PROBE_MS};
  ncclResult_t r = bs_run(b, NULL, 0, verdict_arrived, &probe, deadline, "waiting for the root");
  bs_close_fd(&probe.fd);
  if (r != ncclSuccess) {
    if (b->timed_out)
      WARN("bootstrap rank %d/%d: init timed out after %d ms: the bootstrap root at %s never "
           "answered (this rank checked in after %llu ms)",
           b->rank, b->nranks, timeout_ms, root, (unsigned long long)checked_in_after);
    return r;
  }
  const bs_verdict* v = &b->verdict;
  switch (v->status) {
    case BS_VERDICT_OK:
      return ncclSuccess;
    case BS_VERDICT_TIMEOUT:
      bs_format_ranges(b->ranges, (int)v->nranges, v->nmissing, list, sizeof list);
      WARN("bootstrap rank %d/%d: init timed out after %u ms: %s never checked in with the "
           "root at %s",
           b->rank, b->nranks, v->waited_ms, list, root);
      return ncclRemoteError;
    case BS_VERDICT_DUPLICATE:
      WARN("bootstrap rank %d/%d: the root at %s rejected this rank: rank %d had already "
           "checked in (two processes with the same rank?)",
           b->rank, b->nranks, root, b->rank);
      return ncclInvalidUsage;
    case BS_VERDICT_CLAIMED: {
      bs_claim c;
      char b1[WEFT_SOCKADDR_STRLEN], b2[WEFT_SOCKADDR_STRLEN], b3[WEFT_SOCKADDR_STRLEN];
      memcpy(&c, b->ranges, sizeof c);
      WARN("bootstrap rank %d/%d: init failed: rank %d was claimed by two processes, first the "
           "one listening on %s, then the one listening on %s (connecting from %s); the root "
           "at %s fails the init for every rank (check the launcher's ranks; an NCCL_COMM_ID "
           "rendezvous without WEFT_COMM_SECRET is open to anyone who knows the address)",
           b->rank, b->nranks, c.rank, socket_addr_str(&c.first, b1, sizeof b1),
           socket_addr_str(&c.second, b2, sizeof b2),
           socket_addr_str(&c.second_from, b3, sizeof b3), root);
      return ncclInvalidUsage;
    }
    case BS_VERDICT_NRANKS:
      WARN("bootstrap rank %d/%d: init failed: the ranks disagree on nranks: the first rank to "
           "check in with the root at %s said %d, rank %d said %d (this rank: %d); every rank "
           "must pass the same nranks",
           b->rank, b->nranks, root, v->root_nranks, v->odd_rank, v->odd_nranks, b->nranks);
      return ncclInvalidUsage;
    default:
      WARN("bootstrap rank %d/%d: the root at %s sent an unknown verdict %u", b->rank, b->nranks,
           root, v->status);
      return ncclInternalError;
  }
}

static ncclResult_t ring_prev_arrived(weft_bootstrap* b, void* ctx, int* ok) {
  (void)ctx;
  *ok = b->ring_prev_fd >= 0;
  return ncclSuccess;
}

static ncclResult_t connect_ring(weft_bootstrap* b, uint64_t deadline, int timeout_ms) {
  char a[WEFT_SOCKADDR_STRLEN];
  int next = (b->rank + 1) % b->nranks, prev = (b->rank + b->nranks - 1) % b->nranks;
  bs_hello h;
  bs_hello_init(&h, &b->id, BS_KIND_RING, b->rank, b->nranks);
  /* Every rank listened before it checked in: a refusal means next is gone. */
  bs_xfer x = {.kind = BS_X_CONNECT, .peer = next, .fd = -1, .addr = &b->verdict.next,
               .buf = &h, .len = sizeof h, .refused_fatal = 1};
  ncclResult_t r = bs_run(b, &x, 1, ring_prev_arrived, NULL, deadline, "ring setup");
  if (r != ncclSuccess) {
    if (b->timed_out && !x.complete)
      WARN("bootstrap rank %d/%d: cannot connect to rank %d at %s within %d ms", b->rank,
           b->nranks, next, socket_addr_str(&b->verdict.next, a, sizeof a), timeout_ms);
    else if (b->timed_out)
      WARN("bootstrap rank %d/%d: rank %d never connected to this rank within %d ms", b->rank,
           b->nranks, prev, timeout_ms);
    bs_close_fd(&x.fd);
    return r;
  }
  b->ring_next_fd = x.fd;
  return ncclSuccess;
}

ncclResult_t bootstrap_init(const ncclUniqueId* uid, int rank, int nranks, int timeout_ms,
                            volatile uint32_t* abort_flag, weft_bootstrap** out) {
  WEFT_ARG_NONNULL("bootstrap_init", uid);
  WEFT_ARG_NONNULL("bootstrap_init", out);
  if (nranks < 1 || nranks > BS_MAX_RANKS || rank < 0 || rank >= nranks) {
    WARN("bootstrap: rank %d of nranks %d is out of range (nranks 1..%d)", rank, nranks,
         BS_MAX_RANKS);
    return ncclInvalidArgument;
  }
  if (timeout_ms <= 0) {
    WARN("bootstrap rank %d/%d: timeout %d ms must be positive", rank, nranks, timeout_ms);
    return ncclInvalidArgument;
  }
  weft_bootstrap_id id;
  WEFT_CHECK(bootstrap_id_decode(uid, &id));
  uint64_t start = clock_ms(), deadline = start + (uint64_t)timeout_ms;

  weft_bootstrap* b = calloc(1, sizeof *b);
  if (!b) {
    WARN("bootstrap rank %d/%d: out of memory", rank, nranks);
    return ncclSystemError;
  }
  b->rank = rank;
  b->nranks = nranks;
  b->timeout_ms = timeout_ms;
  b->abort_flag = abort_flag;
  b->id = id;
  b->listen_fd = b->ring_next_fd = b->ring_prev_fd = -1;
  b->in_init = 1;
  ncclResult_t res = ncclSuccess;
  b->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (b->wake_fd < 0) {
    char e[160];
    WARN("bootstrap rank %d/%d: eventfd failed: %s", rank, nranks,
         weft_sys_error(errno, e, sizeof e));
    res = ncclSystemError;
    goto fail;
  }
  b->peers = calloc((size_t)nranks, sizeof *b->peers);
  b->addrs = calloc((size_t)nranks, sizeof *b->addrs);
  if (!b->peers || !b->addrs) {
    WARN("bootstrap rank %d/%d: cannot allocate its state for %d ranks", rank, nranks, nranks);
    res = ncclSystemError;
    goto fail;
  }
  WEFT_CHECK_GOTO(listen_here(b), res, fail);
  WEFT_CHECK_GOTO(check_in(b, deadline, timeout_ms), res, fail);
  WEFT_CHECK_GOTO(await_verdict(b, deadline, timeout_ms, clock_ms() - start), res, fail);
  if (nranks > 1) {
    WEFT_CHECK_GOTO(connect_ring(b, deadline, timeout_ms), res, fail);
    b->addrs[rank] = b->listen_addr;
    WEFT_CHECK_GOTO(bs_allgather_by(b, b->addrs, sizeof *b->addrs, deadline, timeout_ms), res,
                    fail);
    if (!socket_addr_equal(&b->addrs[(rank + 1) % nranks], &b->verdict.next)) {
      WARN("bootstrap rank %d/%d: rank %d's address from the ring differs from the root's",
           rank, nranks, (rank + 1) % nranks);
      res = ncclInternalError;
      goto fail;
    }
  } else {
    b->addrs[0] = b->listen_addr;
  }
  b->in_init = 0;
  INFO(NCCL_BOOTSTRAP, "bootstrap rank %d/%d: init done in %llu ms", rank, nranks,
       (unsigned long long)(clock_ms() - start));
  *out = b;
  return ncclSuccess;
fail:
  bootstrap_close(b);
  return res;
}

int bootstrap_rank(const weft_bootstrap* b) { return b->rank; }
const weft_sockaddr* bootstrap_listen_addr(const weft_bootstrap* b) { return &b->listen_addr; }
int bootstrap_nranks(const weft_bootstrap* b) { return b->nranks; }

void bootstrap_set_timeout(weft_bootstrap* b, int timeout_ms) {
  if (timeout_ms > 0) b->timeout_ms = timeout_ms;
}

void bootstrap_abort(weft_bootstrap* b) {
  if (!b) return;
  __atomic_store_n(&b->aborted, 1, __ATOMIC_RELEASE);
  uint64_t one = 1;
  if (write(b->wake_fd, &one, sizeof one) < 0) { /* the counter is full: a wake is pending */
  }
}

void bootstrap_close(weft_bootstrap* b) {
  if (!b) return;
  if (b->peers) {
    for (int i = 0; i < b->nranks; i++) {
      bs_peer* p = b->peers[i];
      if (!p) continue;
      bs_close_fd(&p->send_fd);
      bs_reset_fd(&p->recv_fd);
      bs_close_fd(&p->probe_fd);
      if (p->msg) bs_msg_free(b, p->msg);
      free(p);
    }
    free(b->peers);
  }
  bs_queue_free(b);
  bs_pending_close_all(&b->pending);
  bs_close_fd(&b->ring_next_fd);
  bs_reset_fd(&b->ring_prev_fd);
  bs_close_fd(&b->listen_fd);
  bs_close_fd(&b->wake_fd);
  free(b->addrs);
  free(b->active);
  free(b->pfd);
  free(b);
}
