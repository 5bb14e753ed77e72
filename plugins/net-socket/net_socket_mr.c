/* Memory registration for the socket plugin. Sockets read and write host memory directly, so a
 * registration only records what was registered (deregMr checks it). CUDA memory cannot be used
 * (ptrSupport is NCCL_PTR_HOST) and dma-buf registration is not offered. */
#include <stdlib.h>

#include "net_socket_internal.h"

#define NS_MR_MAGIC 0x6e735f6d725f3031ull

typedef struct {
  uint64_t magic;
  void* data;
  size_t size;
} ns_mr;

ncclResult_t net_socket_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (comm == NULL || mhandle == NULL) {
    NS_WARN("NET/Socket: regMr: %s is NULL", comm == NULL ? "comm" : "mhandle");
    return ncclInternalError;
  }
  if (type != NCCL_PTR_HOST) {
    NS_WARN(
        "NET/Socket: regMr of %p (%zu bytes): memory type %d is not supported, only host "
        "memory (ptrSupport NCCL_PTR_HOST)",
        data, size, type);
    return ncclInternalError;
  }
  ns_mr* mr = malloc(sizeof *mr);
  if (mr == NULL) {
    NS_WARN("NET/Socket: regMr: out of memory");
    return ncclSystemError;
  }
  mr->magic = NS_MR_MAGIC;
  mr->data = data;
  mr->size = size;
  *mhandle = mr;
  return ncclSuccess;
}

ncclResult_t net_socket_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                      uint64_t offset, int fd, void** mhandle) {
  (void)comm;
  (void)type;
  (void)offset;
  (void)mhandle;
  NS_WARN(
      "NET/Socket: regMrDmaBuf of %p (%zu bytes, fd %d): dma-buf is not supported (ptrSupport "
      "is NCCL_PTR_HOST)",
      data, size, fd);
  return ncclInvalidUsage;
}

ncclResult_t net_socket_dereg_mr(void* comm, void* mhandle) {
  (void)comm;
  if (mhandle == NULL) return ncclSuccess;
  ns_mr* mr = mhandle;
  if (mr->magic != NS_MR_MAGIC) {
    NS_WARN("NET/Socket: deregMr: %p is not a registration of this plugin", mhandle);
    return ncclInternalError;
  }
  mr->magic = 0;
  free(mr);
  return ncclSuccess;
}
