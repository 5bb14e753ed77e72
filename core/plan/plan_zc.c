/* Zero copy: whether an op's buffers lie in windows every peer has mapped (api/api_mem.c,
 * transport/transport_window.c), and where the kernels find them. The decision must be the
 * same on every rank without a message, so it rests on what symmetric use guarantees: each
 * rank's sendbuff (and for AllReduce its recvbuff) sits in a window of NCCL_WIN_COLL_SYMMETRIC
 * at the same offset on every rank, as NCCL's symmetric kernels require. Only the buffers a
 * peer reads must be in a window: every rank's sendbuff, and for AllReduce (whose TwoShot reads
 * the peers' results) the recvbuff too. PreMulSum reductions are never zero copy (below). */
#include <pthread.h>
#include <string.h>

#include "comm/comm.h"
#include "plan/plan.h"

_Static_assert(WEFT_WINDOW_MAX_RANKS == WEFT_DIRECT_MAX_RANKS,
               "windows are mapped for the ranks the direct algorithms run on");

/* The zero-copy window holding [p, p + bytes), under comm->lock; NULL: none. */
static const weft_mem_reg* find(const struct ncclComm* comm, const void* p, size_t bytes) {
  uintptr_t a = (uintptr_t)p;
  for (const weft_mem_reg* r = comm->regs; r; r = r->next) {
    if (!r->zc) continue;
    uintptr_t b = (uintptr_t)r->buff;
    if (a >= b && a - b <= transport_window_bytes(r->zc) &&
        bytes <= transport_window_bytes(r->zc) - (a - b))
      return r;
  }
  return NULL;
}

int plan_zc_find(struct ncclComm* comm, const weft_op* op, weft_zc_bufs* out, int* in_place) {
  if (__atomic_load_n(&comm->zc_windows, __ATOMIC_ACQUIRE) <= 0 || op->count == 0) return 0;
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
  const weft_mem_reg* ws = find(comm, src, sbytes);
  const weft_mem_reg* wd = op->func == ncclFuncAllReduce ? find(comm, dst, rbytes) : NULL;
  if (ws && (op->func != ncclFuncAllReduce || wd)) {
    ok = 1;
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
  }
  pthread_mutex_unlock(&comm->lock);
  return ok;
}
