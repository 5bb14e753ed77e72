/* The caller's side of one-sided traffic (host mode): a put or signal writes steps into the
 * FIFO to the target; a wait counts the signals the target's side delivered (rma.h). Every wait
 * here is bounded by WEFT_TIMEOUT_MS, ends at the communicator's abort, and fails at once when
 * the peer is known gone: its connection failed (the plugin's error, or the mark a destroyed or
 * aborted peer leaves in shared memory) or its process (same host) has exited. */
#include <stdlib.h>
#include <string.h>

#include "rma/rma_internal.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/proc.h"

/* How often a waiting call looks at a same-host peer's process. */
#define RMA_CHECK_INTERVAL_MS 100

const char* rma_conn_gone(const weft_conn* c, uint64_t now, uint64_t* next_check) {
  if (__atomic_load_n(&c->error, __ATOMIC_ACQUIRE) != ncclSuccess)
    return "its connection failed";
  int why = __atomic_load_n(&c->ctrl->broken, __ATOMIC_ACQUIRE);
  if (why == WEFT_CONN_BROKEN_ABORT) return "it aborted its communicator";
  if (why == WEFT_CONN_BROKEN_CLOSED) return "it destroyed its communicator";
  if (why != 0) return "it failed an operation on this connection";
  if (c->watch_pid && now >= *next_check) {
    *next_check = now + RMA_CHECK_INTERVAL_MS;
    if (!proc_alive(c->watch_pid)) return "its process has exited";
  }
  return NULL;
}

ncclResult_t rma_call_check(struct weft_rma* r, const char* fn, int peer, const weft_conn* c,
                            const char* what, uint64_t start, uint64_t* next_check) {
  struct ncclComm* comm = r->comm;
  uint64_t now = clock_ms();
  const char* gone = c ? rma_conn_gone(c, now, next_check) : NULL;
  if (gone) {
    WARN("rank %d: %s to rank %d cannot go on: %s", comm->rank, fn, peer, gone);
    rma_comm_failed(comm, ncclRemoteError);
    return ncclRemoteError;
  }
  if (__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE)) {
    WARN("rank %d: %s to rank %d: the communicator was aborted", comm->rank, fn, peer);
    return ncclRemoteError;
  }
  if (now - start > (uint64_t)r->timeout_ms) {
    WARN("rank %d: %s to rank %d waited %d ms for %s: timed out (WEFT_TIMEOUT_MS)", comm->rank,
         fn, peer, r->timeout_ms, what);
    rma_comm_failed(comm, ncclRemoteError);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

/* Wait until the FIFO to peer has a free slot. */
static ncclResult_t send_slot(struct weft_rma* r, const char* fn, int peer, weft_conn* c) {
  weft_backoff bo = {0};
  uint64_t start = clock_ms(), next_check = start;
  while (c->step >= __atomic_load_n(&c->ctrl->head, __ATOMIC_ACQUIRE) + WEFT_NSTEPS) {
    WEFT_CHECK(rma_call_check(r, fn, peer, c, "room in its one-sided FIFO", start, &next_check));
    backoff_wait(&bo);
  }
  return ncclSuccess;
}

/* Number of a window in r (the caller registered it as symmetric, so it is there). */
static ncclResult_t window_number(struct weft_rma* r, const weft_mem_reg* win, uint64_t* out) {
  ncclResult_t res = ncclInternalError;
  pthread_rwlock_rdlock(&r->windows_lock);
  for (uint64_t i = 0; i < r->nwindows; i++)
    if (r->windows[i].reg == win) {
      *out = i;
      res = ncclSuccess;
      break;
    }
  pthread_rwlock_unlock(&r->windows_lock);
  if (res != ncclSuccess)
    WARN("rank %d: window %p has no one-sided number", r->comm->rank, (const void*)win);
  return res;
}

ncclResult_t rma_put(struct ncclComm* comm, const void* src, size_t bytes, int peer,
                     const weft_mem_reg* win, size_t offset, void* stream) {
  const char* fn = bytes ? "ncclPutSignal" : "ncclSignal";
  struct weft_rma* r = comm->rma;
  if (!rma_connected(comm)) {
    WARN("rank %d: %s: no symmetric window was registered on this communicator", comm->rank, fn);
    return ncclInvalidUsage;
  }
  if (comm->mode == WEFT_MODE_DEVICE) return rma_dev_put(r, src, bytes, peer, win, offset, stream);
  uint64_t number = 0;
  if (bytes) WEFT_CHECK(window_number(r, win, &number));
  if (peer == comm->rank) { /* to itself: the copy, then the signal */
    if (bytes) memmove((char*)win->buff + offset, src, bytes);
    __atomic_add_fetch(&r->peers[peer].signals, 1, __ATOMIC_RELEASE);
    return ncclSuccess;
  }
  if (r->peers[peer].via_plugin) return rma_plugin_put(r, fn, src, bytes, peer, number, offset);
  weft_conn* c = r->peers[peer].send;
  size_t room = c->step_bytes - sizeof(rma_step_hdr);
  size_t done = 0;
  do {
    size_t n = bytes - done < room ? bytes - done : room;
    WEFT_CHECK(send_slot(r, fn, peer, c));
    char* slot = conn_slot(c, c->step);
    rma_step_hdr h = {RMA_STEP_MAGIC, done + n == bytes ? RMA_STEP_SIGNAL : 0, number,
                      offset + done, n};
    memcpy(slot, &h, sizeof h);
    if (n) memcpy(slot + sizeof h, (const char*)src + done, n);
    __atomic_store_n(&c->ctrl->sizes[c->step % WEFT_NSTEPS], (int64_t)(sizeof h + n),
                     __ATOMIC_RELAXED);
    c->step++;
    __atomic_store_n(&c->ctrl->tail, c->step, __ATOMIC_RELEASE);
    done += n;
  } while (done < bytes);
  return ncclSuccess;
}

/* Signals that arrived from p: through its FIFO (or from this rank itself) and through the RMA
 * plugin. */
static uint64_t signals_of(struct weft_rma* r, int p) {
  return __atomic_load_n(&r->peers[p].signals, __ATOMIC_ACQUIRE) + rma_plugin_signals(r, p);
}

/* 1 when every count arrived. */
static int counts_arrived(struct weft_rma* r, int n, const int* peers, const uint64_t* want) {
  for (int i = 0; i < n; i++)
    if (signals_of(r, peers[i]) < want[i]) return 0;
  return 1;
}

/* Why peer p's signals can no longer come, NULL while they can. What a gone peer sent before it
 * went still counts: the FIFO must be empty (drained) before its death fails the wait. */
static const char* signals_gone(struct weft_rma* r, int p, uint64_t now, uint64_t* next_check) {
  rma_peer* pp = &r->peers[p];
  if (__atomic_load_n(&pp->error, __ATOMIC_ACQUIRE) != ncclSuccess)
    return "a step it sent was refused";
  if (pp->via_plugin) {
    const char* bad = rma_plugin_gone(r);
    if (bad) return bad;
  }
  if (!pp->recv) return NULL;
  const char* gone = rma_conn_gone(pp->recv, now, next_check);
  if (!gone) return NULL;
  rma_drain_try(r, p);
  if (__atomic_load_n(&pp->recv->ctrl->tail, __ATOMIC_ACQUIRE) >
      __atomic_load_n(&pp->recv->step, __ATOMIC_RELAXED))
    return NULL;
  return gone;
}

ncclResult_t rma_wait(struct ncclComm* comm, int n, const int* peers, const int* counts,
                      void* stream) {
  struct weft_rma* r = comm->rma;
  if (!rma_connected(comm)) {
    WARN("rank %d: ncclWaitSignal: no symmetric window was registered on this communicator",
         comm->rank);
    return ncclInvalidUsage;
  }
  if (comm->mode == WEFT_MODE_DEVICE) return rma_dev_wait(r, n, peers, counts, stream);
  uint64_t want_stack[16];
  uint64_t* want = n <= 16 ? want_stack : malloc((size_t)n * sizeof *want);
  if (!want) {
    WARN("rank %d: ncclWaitSignal: out of memory for %d descriptors", comm->rank, n);
    return ncclSystemError;
  }
  /* A peer named twice waits for the sum: every entry of it holds the same target. */
  for (int i = 0; i < n; i++) {
    uint64_t sum = r->peers[peers[i]].consumed;
    for (int j = 0; j < n; j++)
      if (peers[j] == peers[i]) sum += (uint64_t)counts[j];
    want[i] = sum;
  }
  ncclResult_t res = ncclSuccess;
  weft_backoff bo = {0};
  uint64_t start = clock_ms(), next_check = start;
  while (!counts_arrived(r, n, peers, want)) {
    int moved = 0;
    for (int i = 0; i < n; i++)
      if (peers[i] != comm->rank && rma_drain_try(r, peers[i]) > 0) moved = 1;
    if (moved) {
      bo.polls = 0;
      continue;
    }
    uint64_t now = clock_ms();
    for (int i = 0; i < n && res == ncclSuccess; i++) {
      rma_peer* pp = &r->peers[peers[i]];
      uint64_t got = signals_of(r, peers[i]);
      if (got >= want[i] || peers[i] == comm->rank) continue;
      const char* gone = signals_gone(r, peers[i], now, &next_check);
      if (!gone) continue;
      WARN("rank %d: ncclWaitSignal waited for %llu signal(s) from rank %d (sigIdx 0), %llu "
           "arrived, and no more can: %s",
           comm->rank, (unsigned long long)(want[i] - pp->consumed), peers[i],
           (unsigned long long)(got - pp->consumed), gone);
      int refused = __atomic_load_n(&pp->error, __ATOMIC_ACQUIRE);
      res = refused != ncclSuccess ? (ncclResult_t)refused : ncclRemoteError;
    }
    if (res == ncclSuccess && __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE)) {
      WARN("rank %d: ncclWaitSignal: the communicator was aborted", comm->rank);
      res = ncclRemoteError;
    }
    if (res == ncclSuccess && now - start > (uint64_t)r->timeout_ms) {
      for (int i = 0; i < n; i++) {
        rma_peer* pp = &r->peers[peers[i]];
        uint64_t got = signals_of(r, peers[i]);
        if (got >= want[i]) continue;
        WARN("rank %d: ncclWaitSignal waited %d ms for %llu signal(s) from rank %d (sigIdx 0); "
             "%llu arrived: timed out (WEFT_TIMEOUT_MS)",
             comm->rank, r->timeout_ms, (unsigned long long)(want[i] - pp->consumed), peers[i],
             (unsigned long long)(got - pp->consumed));
        break;
      }
      res = ncclRemoteError;
    }
    if (res != ncclSuccess) break;
    backoff_wait(&bo);
  }
  if (res == ncclSuccess) {
    for (int i = 0; i < n; i++) r->peers[peers[i]].consumed = want[i];
  } else {
    rma_comm_failed(comm, res);
  }
  if (want != want_stack) free(want);
  return res;
}
