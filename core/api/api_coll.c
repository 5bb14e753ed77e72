/* Collective and point-to-point entry points. Arguments are validated in full (so callers get
 * the same errors they will get once the data path exists); the data path itself is not built
 * yet, and each call says so with ncclInvalidUsage rather than pretending to succeed. */
#include "api/api.h"
#include "util/check.h"

/* What every reduction-free collective checks. */
static ncclResult_t check_common(const char* fn, const struct ncclComm* comm,
                                 const void* sendbuff, const void* recvbuff, size_t count,
                                 ncclDataType_t type) {
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, type));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  const char* fn = "ncclAllReduce";
  (void)stream;
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, count, datatype));
  WEFT_CHECK(arg_check_op(fn, comm, op));
  return api_not_available(fn, "the collective data path");
}

WEFT_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
         cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  const char* fn = "ncclReduce";
  (void)stream;
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_op(fn, comm, op));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  return api_not_available(fn, "the collective data path");
}

WEFT_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  const char* fn = "ncclBroadcast";
  (void)stream;
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  return api_not_available(fn, "the collective data path");
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
  (void)stream;
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, recvcount, datatype));
  WEFT_CHECK(arg_check_op(fn, comm, op));
  return api_not_available(fn, "the collective data path");
}

WEFT_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAllGather";
  (void)stream;
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, sendcount, datatype));
  return api_not_available(fn, "the collective data path");
}

WEFT_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAlltoAll";
  (void)stream;
  WEFT_CHECK(check_common(fn, comm, sendbuff, recvbuff, count, datatype));
  return api_not_available(fn, "the collective data path");
}

WEFT_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  const char* fn = "ncclGather";
  (void)stream;
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  return api_not_available(fn, "the collective data path");
}

WEFT_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream) {
  const char* fn = "ncclScatter";
  (void)stream;
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "root", root));
  if (comm->rank == root) WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  return api_not_available(fn, "the collective data path");
}

WEFT_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclSend";
  (void)stream;
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "peer", peer));
  WEFT_CHECK(arg_check_buffer(fn, "sendbuff", sendbuff, count));
  return api_not_available(fn, "the point-to-point data path");
}

WEFT_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclRecv";
  (void)stream;
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "peer", peer));
  WEFT_CHECK(arg_check_buffer(fn, "recvbuff", recvbuff, count));
  return api_not_available(fn, "the point-to-point data path");
}
