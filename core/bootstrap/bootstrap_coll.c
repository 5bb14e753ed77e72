/* Allgather and barrier over the ring (rank -> rank+1) built at init. Allgather takes n-1
 * steps: at step s a rank forwards the slot of rank-s and receives the slot of rank-s-1, both
 * at once so that no socket buffer size can deadlock the ring. Each step carries a bs_coll_hdr
 * (which operation, its sequence number, bytes per rank), so ranks that disagree on the call
 * fail with an error naming both sides instead of exchanging garbage. The barrier is an
 * allgather of nothing: after n-1 steps every rank has heard, through the ring, from all. */
#include <stdio.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/log.h"

static ncclResult_t ring_exchange(weft_bootstrap* b, uint32_t op, void* data, size_t size,
                                  uint64_t deadline, int timeout_ms) {
  int n = b->nranks, rank = b->rank;
  if (n == 1) return ncclSuccess;
  if (bs_is_aborted(b)) return ncclRemoteError;
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  const char* name = op == BS_OP_ALLGATHER ? "allgather" : "barrier";
  bs_coll_hdr mine = {.op = op, .seq = ++b->coll_seq, .size = size}, theirs;
  for (int s = 0; s < n - 1; s++) {
    int send_slot = (rank - s + n) % n, recv_slot = (rank - s - 1 + n) % n;
    char* base = data;
    bs_xfer x[4] = {
        {.kind = BS_X_SEND, .peer = next, .fd = b->ring_next_fd, .buf = &mine,
         .len = sizeof mine},
        {.kind = BS_X_RECV, .peer = prev, .fd = b->ring_prev_fd, .buf = &theirs,
         .len = sizeof theirs, .expect = &mine},
        {.kind = BS_X_SEND, .peer = next, .fd = b->ring_next_fd,
         .buf = size ? base + (size_t)send_slot * size : NULL, .len = size},
        {.kind = BS_X_RECV, .peer = prev, .fd = b->ring_prev_fd,
         .buf = size ? base + (size_t)recv_slot * size : NULL, .len = size},
    };
    char what[64];
    snprintf(what, sizeof what, "%s #%u step %d of %d", name, mine.seq, s + 1, n - 1);
    ncclResult_t r = bs_run(b, x, size ? 4 : 2, NULL, NULL, deadline, what);
    if (r != ncclSuccess) {
      if (b->timed_out) {
        int waiting_prev = !x[1].complete || (size && !x[3].complete);
        WARN("bootstrap rank %d/%d: %s: %s rank %d did not complete within %d ms", b->rank,
             n, what, waiting_prev ? "receiving from" : "sending to",
             waiting_prev ? prev : next, timeout_ms);
      }
      return r;
    }
  }
  return ncclSuccess;
}

/* For init: the same exchange under init's own deadline. */
ncclResult_t bs_allgather_by(weft_bootstrap* b, void* data, size_t size, uint64_t deadline,
                             int timeout_ms) {
  return ring_exchange(b, BS_OP_ALLGATHER, data, size, deadline, timeout_ms);
}

ncclResult_t bootstrap_allgather(weft_bootstrap* b, void* data, size_t size) {
  if (data == NULL && size > 0) {
    WARN("bootstrap rank %d/%d: allgather: NULL buffer for %zu bytes per rank", b->rank,
         b->nranks, size);
    return ncclInvalidArgument;
  }
  return ring_exchange(b, BS_OP_ALLGATHER, data, size, clock_ms() + (uint64_t)b->timeout_ms,
                       b->timeout_ms);
}

ncclResult_t bootstrap_barrier(weft_bootstrap* b) {
  return ring_exchange(b, BS_OP_BARRIER, NULL, 0, clock_ms() + (uint64_t)b->timeout_ms,
                       b->timeout_ms);
}
