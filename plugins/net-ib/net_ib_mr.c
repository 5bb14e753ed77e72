/* Memory registration. Host and CUDA memory (the latter through GPUDirect RDMA: nvidia-peermem
 * makes ibv_reg_mr work on device pointers) is registered with ibv_reg_mr over whole pages;
 * CUDA memory exported as a dma-buf with ibv_reg_dmabuf_mr, addressed by the buffer's virtual
 * address. Every registration is its own MR on the device's PD (no cache: regIsGlobal 0).
 * A zero-length registration is valid and holds no MR. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_ib_internal.h"

#define IB_MR_MAGIC 0x69625f6d725f3131ull
#define IB_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

ib_mr* net_ib_mr_check(void* mhandle, const char* fn) {
  ib_mr* m = mhandle;
  if (m == NULL || m->magic != IB_MR_MAGIC) {
    IB_WARN("NET/IB: %s: invalid memory handle %p", fn, mhandle);
    return NULL;
  }
  return m;
}

static ncclResult_t check_type(ib_comm* c, int type, const char* fn) {
  if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA && type != NCCL_PTR_DMABUF) {
    IB_WARN("NET/IB: %s: unknown memory type %d", fn, type);
    return ncclInternalError;
  }
  if (type != NCCL_PTR_HOST && !(c->dev->ptr_support & NCCL_PTR_CUDA)) {
    IB_WARN("NET/IB: %s: %s:%d cannot register GPU memory (no GPUDirect RDMA: neither "
            "nvidia-peermem nor dma-buf registration)", fn, c->dev->name, c->dev->port);
    return ncclInternalError;
  }
  return ncclSuccess;
}

ncclResult_t net_ib_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  ib_comm* c = net_ib_comm_check(comm, 0, "regMr");
  if (c == NULL || mhandle == NULL) return ncclInternalError;
  ncclResult_t res = check_type(c, type, "regMr");
  if (res != ncclSuccess) return res;
  if (size > 0 && data == NULL) {
    IB_WARN("NET/IB: regMr: NULL buffer of %zu bytes", size);
    return ncclInternalError;
  }
  struct ibv_mr* mr = NULL;
  if (size > 0) {
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t base = (uintptr_t)data & ~(pg - 1);
    uintptr_t end = ((uintptr_t)data + size + pg - 1) & ~(pg - 1);
    mr = net_ib_verbs()->reg_mr(c->dev->hw->pd, (void*)base, end - base, IB_MR_ACCESS);
    if (mr == NULL) {
      IB_WARN("NET/IB: %s:%d: ibv_reg_mr of %zu bytes at %p failed: %s", c->dev->name,
              c->dev->port, size, data, strerror(errno));
      return ncclSystemError;
    }
  }
  ib_mr* m = calloc(1, sizeof *m);
  if (m == NULL) {
    if (mr) net_ib_verbs()->dereg_mr(mr);
    IB_WARN("NET/IB: out of memory allocating a memory handle");
    return ncclSystemError;
  }
  m->magic = IB_MR_MAGIC;
  m->mr = mr;
  m->type = type;
  *mhandle = m;
  return ncclSuccess;
}

ncclResult_t net_ib_reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                  int fd, void** mhandle) {
  ib_comm* c = net_ib_comm_check(comm, 0, "regMrDmaBuf");
  if (c == NULL || mhandle == NULL) return ncclInternalError;
  const ib_verbs* v = net_ib_verbs();
  if (v->reg_dmabuf_mr == NULL || !c->dev->hw->dmabuf) {
    IB_WARN("NET/IB: regMrDmaBuf: %s does not support dma-buf registration (rdma-core, kernel "
            "or driver too old); the device does not advertise NCCL_PTR_DMABUF", c->dev->name);
    return ncclInvalidUsage;
  }
  if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA && type != NCCL_PTR_DMABUF) {
    IB_WARN("NET/IB: regMrDmaBuf: unknown memory type %d", type);
    return ncclInternalError;
  }
  struct ibv_mr* mr = NULL;
  if (size > 0) {
    mr = v->reg_dmabuf_mr(c->dev->hw->pd, offset, size, (uint64_t)(uintptr_t)data, fd,
                          IB_MR_ACCESS);
    if (mr == NULL) {
      IB_WARN("NET/IB: %s:%d: ibv_reg_dmabuf_mr of %zu bytes (fd %d, offset %llu) failed: %s",
              c->dev->name, c->dev->port, size, fd, (unsigned long long)offset, strerror(errno));
      return ncclSystemError;
    }
  }
  ib_mr* m = calloc(1, sizeof *m);
  if (m == NULL) {
    if (mr) v->dereg_mr(mr);
    IB_WARN("NET/IB: out of memory allocating a memory handle");
    return ncclSystemError;
  }
  m->magic = IB_MR_MAGIC;
  m->mr = mr;
  m->type = type == NCCL_PTR_HOST ? NCCL_PTR_DMABUF : type;
  *mhandle = m;
  return ncclSuccess;
}

ncclResult_t net_ib_dereg_mr(void* comm, void* mhandle) {
  if (net_ib_comm_check(comm, 0, "deregMr") == NULL) return ncclInternalError;
  ib_mr* m = net_ib_mr_check(mhandle, "deregMr");
  if (m == NULL) return ncclInternalError;
  ncclResult_t res = ncclSuccess;
  if (m->mr) {
    int e = net_ib_verbs()->dereg_mr(m->mr);
    if (e) {
      IB_WARN("NET/IB: ibv_dereg_mr failed: %s", strerror(e));
      res = ncclSystemError;
    }
  }
  m->magic = 0;
  free(m);
  return res;
}
