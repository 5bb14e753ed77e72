/* Collective and point-to-point entry points: validate every argument (an invalid one returns
 * ncclInvalidArgument and changes nothing), then queue the operation on the calling thread's
 * group (group/), which runs it at once outside a group. The stream goes with the op: the
 * device executor enqueues on it; the host executor ignores it (host mode is synchronous). AlltoAll, Gather and Scatter are lowered to grouped
 * Send/Recv, as NCCL 2.28 does, behind a marker that takes part in WEFT_CHECK_COLLECTIVES. */
#include <string.h>

#include "api/api.h"
#include "group/group.h"
#include "plan/plan.h"
#include "util/check.h"
#include "util/names.h"

/* What every collective checks. */
static ncclResult_t check_common(const char* fn, const struct ncclComm* comm,
                                 const void* sendbuff, const void* recvbuff, size_t count,
                                 ncclDataType_t type) {
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, type));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  return ncclSuccess;
}

/* count elements of type, times mult, must fit a size_t. */
static ncclResult_t check_size(const char* fn, size_t count, ncclDataType_t type, size_t mult) {
  size_t e = dtype_size(type);
  if (e && mult && count > SIZE_MAX / e / mult) {
    WARN("%s: count %zu of %zu-byte elements (x%zu) overflows", fn, count, e, mult);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static void op_init(weft_op* op, int func, const void* sendbuff, void* recvbuff, size_t count,
                    ncclDataType_t type, int root, cudaStream_t stream) {
  memset(op, 0, sizeof *op);
  op->stream = stream;
  op->func = func;
  op->sendbuff = sendbuff;
  op->recvbuff = recvbuff;
  op->count = count;
  op->dtype = type;
  op->root = root;
}

/* Resolve the reduction now, so that a bad op fails this call and not the group. */
static ncclResult_t with_redop(const char* fn, struct ncclComm* comm, weft_op* op,
                               ncclRedOp_t red) {
  op->user_op = red;
  if (comm->plan == NULL) return arg_check_op(fn, comm, red); /* device mode: enqueue says why */
  return plan_redop_resolve(comm, red, op->dtype, fn, &op->redop, &op->scalar_ptr);
}

WEFT_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  const char* fn = "ncclAllReduce";
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, count, datatype));
  WEFT_CHECK(check_size(fn, count, datatype, 1));
  weft_op o;
  op_init(&o, ncclFuncAllReduce, sendbuff, recvbuff, count, datatype, -1, stream);
  WEFT_CHECK(with_redop(fn, comm, &o, op));
  return group_add_op(comm, &o);
}

WEFT_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
         cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  const char* fn = "ncclReduce";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  WEFT_CHECK(check_size(fn, count, datatype, 1));
  weft_op o;
  op_init(&o, ncclFuncReduce, sendbuff, recvbuff, count, datatype, root, stream);
  WEFT_CHECK(with_redop(fn, comm, &o, op));
  return group_add_op(comm, &o);
}

WEFT_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  const char* fn = "ncclBroadcast";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  WEFT_CHECK(check_size(fn, count, datatype, 1));
  weft_op o;
  op_init(&o, ncclFuncBroadcast, sendbuff, recvbuff, count, datatype, root, stream);
  return group_add_op(comm, &o);
}

WEFT_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

WEFT_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff,
         size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
         cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  const char* fn = "ncclReduceScatter";
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, recvcount, datatype));
  WEFT_CHECK(check_size(fn, recvcount, datatype, (size_t)comm->nranks));
  weft_op o;
  op_init(&o, ncclFuncReduceScatter, sendbuff, recvbuff, recvcount, datatype, -1, stream);
  WEFT_CHECK(with_redop(fn, comm, &o, op));
  return group_add_op(comm, &o);
}

WEFT_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAllGather";
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, sendcount, datatype));
  WEFT_CHECK(check_size(fn, sendcount, datatype, (size_t)comm->nranks));
  weft_op o;
  op_init(&o, ncclFuncAllGather, sendbuff, recvbuff, sendcount, datatype, -1, stream);
  return group_add_op(comm, &o);
}

/* ---- point to point, and the collectives lowered to it ---- */

static ncclResult_t add_p2p(struct ncclComm* comm, int func, const void* sendbuff,
                            void* recvbuff, size_t count, ncclDataType_t type, int peer,
                            cudaStream_t stream) {
  weft_op o;
  op_init(&o, func, sendbuff, recvbuff, count, type, peer, stream);
  return group_add_op(comm, &o);
}

/* The marker: a collective fingerprint with no data of its own. */
static ncclResult_t add_marker(struct ncclComm* comm, int func, size_t count,
                               ncclDataType_t type, int root, cudaStream_t stream) {
  weft_op o;
  op_init(&o, func, NULL, NULL, count, type, root, stream);
  return group_add_op(comm, &o);
}

/* Runs fn's sends/receives as one group; returns the first error (the group's included). */
static ncclResult_t end_lowered(ncclResult_t res) {
  ncclResult_t end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}

WEFT_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAlltoAll";
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, count, datatype));
  WEFT_CHECK(check_size(fn, count, datatype, (size_t)comm->nranks));
  if (comm->nranks == 1) { /* a copy to itself: plan/'s one-rank path, no send/recv pair */
    weft_op o;
    op_init(&o, ncclFuncAlltoAll, sendbuff, recvbuff, count, datatype, -1, stream);
    return group_add_op(comm, &o);
  }
  size_t bytes = count * dtype_size(datatype);
  ncclResult_t res = ncclGroupStart();
  WEFT_CHECK(res);
  res = add_marker(comm, ncclFuncAlltoAll, count, datatype, -1, stream);
  for (int p = 0; p < comm->nranks && res == ncclSuccess; p++) {
    res = add_p2p(comm, ncclFuncSend, (const char*)sendbuff + (size_t)p * bytes, NULL, count,
                  datatype, p, stream);
    if (res == ncclSuccess)
      res = add_p2p(comm, ncclFuncRecv, NULL, (char*)recvbuff + (size_t)p * bytes, count,
                    datatype, p, stream);
  }
  return end_lowered(res);
}

WEFT_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  const char* fn = "ncclGather";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  WEFT_CHECK(check_size(fn, count, datatype, (size_t)comm->nranks));
  size_t bytes = count * dtype_size(datatype);
  ncclResult_t res = ncclGroupStart();
  WEFT_CHECK(res);
  res = add_marker(comm, ncclFuncGather, count, datatype, root, stream);
  if (res == ncclSuccess)
    res = add_p2p(comm, ncclFuncSend, sendbuff, NULL, count, datatype, root, stream);
  if (comm->rank == root)
    for (int p = 0; p < comm->nranks && res == ncclSuccess; p++)
      res = add_p2p(comm, ncclFuncRecv, NULL, (char*)recvbuff + (size_t)p * bytes, count,
                    datatype, p, stream);
  return end_lowered(res);
}

WEFT_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream) {
  const char* fn = "ncclScatter";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  WEFT_CHECK(check_size(fn, count, datatype, (size_t)comm->nranks));
  size_t bytes = count * dtype_size(datatype);
  ncclResult_t res = ncclGroupStart();
  WEFT_CHECK(res);
  res = add_marker(comm, ncclFuncScatter, count, datatype, root, stream);
  if (comm->rank == root)
    for (int p = 0; p < comm->nranks && res == ncclSuccess; p++)
      res = add_p2p(comm, ncclFuncSend, (const char*)sendbuff + (size_t)p * bytes, NULL, count,
                    datatype, p, stream);
  if (res == ncclSuccess)
    res = add_p2p(comm, ncclFuncRecv, NULL, recvbuff, count, datatype, root, stream);
  return end_lowered(res);
}

WEFT_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclSend";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "peer", peer));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  WEFT_CHECK(check_size(fn, count, datatype, 1));
  return add_p2p(comm, ncclFuncSend, sendbuff, NULL, count, datatype, peer, stream);
}

WEFT_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclRecv";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "peer", peer));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  WEFT_CHECK(check_size(fn, count, datatype, 1));
  return add_p2p(comm, ncclFuncRecv, NULL, recvbuff, count, datatype, peer, stream);
}
