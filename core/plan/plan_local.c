/* One-rank communicators: a collective's result is its own input, changed only by
 * PreMulSum's scalar, so nothing goes through connections, work items or the collective
 * kernels. In place: nothing is enqueued (the stream stays ordered as it was). Out of place:
 * one copy on the caller's stream — the copy engine in device mode (cudaMemcpyDefault, since
 * buffers may be pinned or managed), memmove in host mode. A scaling PreMulSum is the one case
 * that runs a kernel (device) or host_prepare (host). Carried out at enqueue, inside a group
 * too, as NCCL does: with no peer there is nothing to wait for, and call order on the stream
 * is the only order that must hold. Send/receive to self keep the group's matching path
 * (plan_op.c's self_copies). */
#include <string.h>

#include "comm/comm.h"
#ifdef WEFT_HAVE_CUDA
#include "device/device_exec.h"
#endif
#include "plan/plan.h"
#include "util/check.h"
#include "util/names.h"

/* 1 when PreMulSum's host scalar is exactly one in the datatype (ncclAvg on one rank is). */
static int scalar_is_one(const weft_redop* r, size_t elem) {
  unsigned char one[8] = {1}; /* integers: 1, little-endian */
  if (dtype_is_float(r->type)) {
    weft_redop avg;
    if (redop_from_builtin(ncclAvg, r->type, 1, &avg) != ncclSuccess) return 0;
    memcpy(one, avg.scalar, sizeof one);
  }
  return memcmp(one, r->scalar, elem) == 0;
}

static int scales(const weft_op* op) {
  if (op->redop.kind != WEFT_RED_PREMULSUM) return 0;
  if (op->func != ncclFuncAllReduce && op->func != ncclFuncReduce &&
      op->func != ncclFuncReduceScatter)
    return 0;
  return op->scalar_ptr != NULL || !scalar_is_one(&op->redop, op->elem);
}

int plan_local_applies(const struct ncclComm* comm, const weft_op* op) {
  return comm->nranks == 1 && op->func != ncclFuncSend && op->func != ncclFuncRecv;
}

ncclResult_t plan_local_run(struct ncclComm* comm, const weft_op* op) {
  (void)comm; /* read by the device branch only; host-only builds have none */
  size_t bytes = op->count * op->elem;
  /* AlltoAll/Gather/Scatter markers carry no data (their sends/receives to self do), except a
   * one-rank AlltoAll, which the API hands over whole: one block, copied like a collective. */
  if (op->sendbuff == NULL || op->recvbuff == NULL || bytes == 0) return ncclSuccess;
  int scale = scales(op);
  if (!scale && op->recvbuff == op->sendbuff) return ncclSuccess;
#ifdef WEFT_HAVE_CUDA
  if (comm->mode == WEFT_MODE_DEVICE) {
    if (!scale) return device_exec_copy(comm, op->recvbuff, op->sendbuff, bytes, op->stream);
    uint64_t s = 0;
    memcpy(&s, op->redop.scalar, op->elem);
    return device_exec_scale(comm, op->recvbuff, op->sendbuff, op->count, op->dtype, s,
                             op->scalar_ptr, op->stream);
  }
#endif
  if (!scale) {
    memmove(op->recvbuff, op->sendbuff, bytes);
    return ncclSuccess;
  }
  weft_redop r = op->redop;
  if (op->scalar_ptr) memcpy(r.scalar, op->scalar_ptr, op->elem); /* host mode: host memory */
  host_prepare(&r, op->recvbuff, op->sendbuff, op->count);
  return ncclSuccess;
}
