/* Zero copy: whether an op's buffers lie in registrations peers can read in place (api/api_mem.c,
 * transport/), and where the kernels find them. The decision must be the same on every rank
 * without a message, so it rests on what the two kinds of registration promise:
 *  - WEFT_ZC_WINDOWS: each rank's sendbuff (and for AllReduce its recvbuff) sits in a window of
 *    NCCL_WIN_COLL_SYMMETRIC at the same offset on every rank, as NCCL's symmetric kernels
 *    require. Only the buffers a peer reads must be in a window: every rank's sendbuff, and for
 *    AllReduce (whose TwoShot reads the peers' results) the recvbuff too;
 *  - WEFT_ZC_REGISTERED: sendbuff and recvbuff are both registered (ncclCommRegister, or a
 *    window without symmetry), which NCCL requires of every rank of a call that uses registered
 *    buffers on any. Offsets may differ by rank: each sender tells its receivers, step by step,
 *    where to read (device/), or copies where a peer could not map its buffer.
 * PreMulSum reductions are never zero copy (below). */
#include <pthread.h>
#include <string.h>

#include "comm/comm.h"
#include "plan/plan.h"

_Static_assert(WEFT_WINDOW_MAX_RANKS == WEFT_DIRECT_MAX_RANKS,
               "windows are mapped for the ranks the direct algorithms run on");

/* The registration holding [p, p + bytes), under comm->lock; NULL: none. local 0: a zero-copy
 * window (its extent: what every rank registered at least); 1: a buffer registered for zero
 * copy on this rank alone (local_zc). */
static const weft_mem_reg* find(const struct ncclComm* comm, const void* p, size_t bytes,
                                int local) {
  uintptr_t a = (uintptr_t)p;
  for (const weft_mem_reg* r = comm->regs; r; r = r->next) {
    size_t extent = local ? (r->local_zc ? r->size : 0) : r->zc ? transport_window_bytes(r->zc) : 0;
    uintptr_t b = (uintptr_t)r->buff;
    if (extent && a >= b && a - b <= extent && bytes <= extent - (a - b)) return r;
  }
  return NULL;
}

/* Registered buffers (mode 2): every rank's own table says where each peer reads it. The
 * decision rests on the buffers every rank passes: both, except Broadcast's recvbuff and
 * Reduce's sendbuff alone (the other is the root's only). */
static int find_registered(struct ncclComm* comm, const weft_op* op, size_t sbytes,
                           size_t rbytes, weft_zc_bufs* out) {
  const char *src = op->sendbuff, *dst = op->recvbuff;
  const weft_mem_reg* ws = src ? find(comm, src, sbytes, 1) : NULL;
  const weft_mem_reg* wd = dst ? find(comm, dst, rbytes, 1) : NULL;
  int need_src = op->func != ncclFuncBroadcast, need_dst = op->func != ncclFuncReduce;
  if ((need_src && !ws) || (need_dst && !wd)) return 0;
  /* Placement is each rank's own here (offsets differ by rank), so it cannot steer the choice
   * (plan_op.c asks as out of place). An in-place AllReduce rank copies what it sends instead:
   * peers reading its buffer in place could see results it already wrote over its input. */
  if (op->func == ncclFuncAllReduce && src == dst) return WEFT_ZC_REGISTERED;
  if (ws && ws->views) {
    out->peers[0] = transport_reg_views_table(ws->views);
    out->off[0] = (uint64_t)(src - (const char*)ws->buff);
  }
  if (wd && wd->views && op->func == ncclFuncAllReduce) { /* TwoShot reads the peers' results */
    out->peers[1] = transport_reg_views_table(wd->views);
    out->off[1] = (uint64_t)(dst - (const char*)wd->buff);
  }
  return WEFT_ZC_REGISTERED;
}

int plan_zc_find(struct ncclComm* comm, const weft_op* op, weft_zc_bufs* out, int* in_place) {
  if ((__atomic_load_n(&comm->zc_windows, __ATOMIC_ACQUIRE) <= 0 &&
       __atomic_load_n(&comm->zc_locals, __ATOMIC_ACQUIRE) <= 0) ||
      op->count == 0)
    return 0;
  /* PreMulSum scales each rank's input by that rank's scalar before it enters the reduction; a
   * reader of the peer's raw buffer could not (the scalar may differ by rank, or sit in the
   * peer's GPU memory until launch). ncclAvg on floats is PreMulSum: it copies too. */
  if (op->redop.kind == WEFT_RED_PREMULSUM &&
      (op->func == ncclFuncAllReduce || op->func == ncclFuncReduce ||
       op->func == ncclFuncReduceScatter))
    return 0;
  int n = comm->nranks, r = comm->rank;
  size_t bytes = op->count * op->elem, sbytes = bytes, rbytes = bytes;
  if (op->func == ncclFuncAllGather) rbytes *= (size_t)n;
  if (op->func == ncclFuncReduceScatter) sbytes *= (size_t)n;
  const char *src = op->sendbuff, *dst = op->recvbuff;
  *in_place = src == dst;
  int ag_in_place = op->func == ncclFuncAllGather && src == dst + (size_t)r * bytes;
  if (ag_in_place) *in_place = 1;
  memset(out, 0, sizeof *out);
  int ok = 0;
  pthread_mutex_lock(&comm->lock);
  const weft_mem_reg* ws = find(comm, src, sbytes, 0);
  const weft_mem_reg* wd = op->func == ncclFuncAllReduce ? find(comm, dst, rbytes, 0) : NULL;
  if (ws && (op->func != ncclFuncAllReduce || wd)) {
    ok = WEFT_ZC_WINDOWS;
    out->peers[0] = transport_window_peers(ws->zc);
    out->off[0] = (uint64_t)(src - (const char*)ws->buff);
    if (ag_in_place) { /* rank q's sendbuff is its block of the (symmetric) recvbuff */
      out->off[0] -= (uint64_t)r * bytes;
      out->src_stride = bytes;
    }
    if (wd) {
      out->peers[1] = transport_window_peers(wd->zc);
      out->off[1] = (uint64_t)(dst - (const char*)wd->buff);
    }
  } else if (!ws && !wd) {
    ok = find_registered(comm, op, sbytes, rbytes, out);
  }
  pthread_mutex_unlock(&comm->lock);
  return ok;
}
