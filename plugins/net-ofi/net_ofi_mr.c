/* Memory registration, honouring the provider's mr_mode (plus WEFT_OFI_MR_STRICT's emulation):
 *  - FI_MR_LOCAL: every buffer handed to the provider is registered and its descriptor passed
 *    (without it, host buffers need no registration at all and regMr only makes a handle);
 *  - FI_MR_HMEM: CUDA buffers are registered with iface FI_HMEM_CUDA and their device;
 *  - FI_MR_PROV_KEY: the provider picks keys, else we request unique ones per domain;
 *  - FI_MR_ENDPOINT: a registration is bound to the endpoint and enabled before use;
 *  - FI_MR_ALLOCATED / FI_MR_VIRT_ADDR: only allocated memory is registered, by virtual address
 *    (what we do anyway).
 * Registrations live in a per-NIC cache (regIsGlobal): a range inside a registered one takes a
 * reference on it instead of a new registration. Host ranges are widened to whole pages; an
 * entry is closed when its last reference goes (no stale registration survives a free()). */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net_ofi.h"

static int mr_needed(const ofi_nic* nic, int type) {
  if (nic->mr_mode & FI_MR_LOCAL) return 1;
  return type == NCCL_PTR_CUDA && (nic->mr_mode & FI_MR_HMEM);
}

static ncclResult_t mr_register(ofi_nic* nic, uintptr_t base, size_t len, int type, int cuda_dev,
                                ofi_mr_entry** out) {
  struct iovec iov = {(void*)base, len};
  struct fi_mr_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = nic->mr_access;
  /* Under WEFT_OFI_MR_STRICT a provider without FI_MR_PROV_KEY still takes our key: keep them
   * unique. Either way the key in use is what fi_mr_key reports. */
  attr.requested_key = (nic->info->domain_attr->mr_mode & FI_MR_PROV_KEY) ? 0 : nic->next_key++;
  attr.iface = type == NCCL_PTR_CUDA ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
  if (type == NCCL_PTR_CUDA) attr.device.cuda = cuda_dev;
  struct fid_mr* mr = NULL;
  int rc = net_ofi_fi.mr_regattr(nic->domain, &attr, 0, &mr);
  if (rc != 0) {
    OFI_WARN("NET/OFI: fi_mr_regattr of %zu %s bytes at %p on %s (%s) failed: %s", len,
             type == NCCL_PTR_CUDA ? "CUDA" : "host", (void*)base, nic->d->name,
             net_ofi_provider(), net_ofi_strerror(rc));
    return ncclSystemError;
  }
  if (nic->mr_mode & FI_MR_ENDPOINT) {
    int real = (nic->info->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0;
    rc = net_ofi_fi.mr_bind(mr, &nic->ep->fid, 0);
    if (rc == 0) rc = net_ofi_fi.mr_enable(mr);
    if (rc == -FI_ENOSYS && !real) {
      /* WEFT_OFI_MR_STRICT on a provider without endpoint-bound registrations. */
      static int told;
      if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        OFI_INFO(NCCL_NET, "NET/OFI: %s does not bind registrations to endpoints; FI_MR_ENDPOINT "
                 "emulated without the bind",
                 net_ofi_provider());
      rc = 0;
    }
    if (rc != 0) {
      OFI_WARN("NET/OFI: binding a registration of %zu bytes to the endpoint on %s (%s) failed: %s",
               len, nic->d->name, net_ofi_provider(), net_ofi_strerror(rc));
      net_ofi_fi.close(&mr->fid);
      return ncclSystemError;
    }
  }
  ofi_mr_entry* e = calloc(1, sizeof *e);
  if (e == NULL) {
    net_ofi_fi.close(&mr->fid);
    OFI_WARN("NET/OFI: out of memory for a registration");
    return ncclSystemError;
  }
  e->base = base;
  e->len = len;
  e->type = type;
  e->cuda_dev = cuda_dev;
  e->refs = 1;
  e->mr = mr;
  e->next = nic->mrs;
  nic->mrs = e;
  *out = e;
  return ncclSuccess;
}

void net_ofi_mr_hmem_check(ofi_nic* nic) {
  ofi_dev* d = nic->d;
  void* ptr = NULL;
  if (!d->hmem || !net_ofi_cuda_trial_alloc(4096, &ptr)) return;
  int cuda_dev = 0;
  net_ofi_cuda_ptr_device(ptr, &cuda_dev);
  struct iovec iov = {ptr, 4096};
  struct fi_mr_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = nic->mr_access;
  attr.requested_key = (nic->info->domain_attr->mr_mode & FI_MR_PROV_KEY) ? 0 : nic->next_key++;
  attr.iface = FI_HMEM_CUDA;
  attr.device.cuda = cuda_dev;
  struct fid_mr* mr = NULL;
  int rc = net_ofi_fi.mr_regattr(nic->domain, &attr, 0, &mr);
  if (rc == 0) {
    net_ofi_fi.close(&mr->fid);
  } else {
    d->hmem = 0;
    OFI_WARN("NET/OFI: %s offers FI_HMEM on %s, but registering CUDA memory fails (fi_mr_regattr: "
             "%s); CUDA buffers are not advertised (NCCL stages them through host memory)",
             net_ofi_provider(), d->name, net_ofi_strerror(rc));
  }
  net_ofi_cuda_trial_free(ptr);
}

ncclResult_t net_ofi_mr_get(ofi_nic* nic, void* data, size_t size, int type, ofi_mr_handle** out) {
  ofi_mr_handle* h = calloc(1, sizeof *h);
  if (h == NULL) {
    OFI_WARN("NET/OFI: out of memory for a memory handle");
    return ncclSystemError;
  }
  h->magic = OFI_MR_MAGIC;
  h->nic = nic;
  if (size == 0 || data == NULL || !mr_needed(nic, type)) {
    *out = h;
    return ncclSuccess;
  }
  int cuda_dev = 0;
  if (type == NCCL_PTR_CUDA && !net_ofi_cuda_ptr_device(data, &cuda_dev)) {
    OFI_WARN("NET/OFI: regMr: %p is not CUDA memory this process can see", data);
    free(h);
    return ncclInvalidArgument;
  }
  uintptr_t base = (uintptr_t)data;
  size_t len = size;
  if (type == NCCL_PTR_HOST) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t end = (base + size + page - 1) & ~(page - 1);
    base &= ~(page - 1);
    len = end - base;
  }
  if (net_ofi_cfg.mr_cache) {
    for (ofi_mr_entry* e = nic->mrs; e; e = e->next) {
      if (e->type == type && e->cuda_dev == cuda_dev && e->base <= base &&
          base + len <= e->base + e->len) {
        e->refs++;
        h->entry = e;
        *out = h;
        return ncclSuccess;
      }
    }
  }
  ncclResult_t res = mr_register(nic, base, len, type, cuda_dev, &h->entry);
  if (res != ncclSuccess) {
    free(h);
    return res;
  }
  *out = h;
  return ncclSuccess;
}

void net_ofi_mr_put(ofi_nic* nic, ofi_mr_handle* h) {
  ofi_mr_entry* e = h->entry;
  h->magic = 0;
  free(h);
  if (e == NULL || --e->refs > 0) return;
  for (ofi_mr_entry** p = &nic->mrs; *p; p = &(*p)->next) {
    if (*p == e) {
      *p = e->next;
      break;
    }
  }
  if (e->mr) {
    int rc = net_ofi_fi.close(&e->mr->fid);
    if (rc)
      OFI_WARN("NET/OFI: closing a registration on %s (%s) failed: %s", nic->d->name,
               net_ofi_provider(), net_ofi_strerror(rc));
  }
  free(e);
}

void net_ofi_mr_close_all(ofi_nic* nic, int free_entries) {
  for (ofi_mr_entry* e = nic->mrs; e; e = e->next) {
    if (e->mr) net_ofi_fi.close(&e->mr->fid);
    e->mr = NULL;
  }
  while (free_entries && nic->mrs) {
    /* Handles the caller never deregistered: their NIC is going away. */
    ofi_mr_entry* e = nic->mrs;
    nic->mrs = e->next;
    free(e);
  }
}

static ofi_comm* mr_comm(void* comm, const char* fn) {
  ofi_comm* c = comm;
  if (c == NULL || c->magic != OFI_COMM_MAGIC || c->closing) {
    OFI_WARN("NET/OFI: %s: invalid comm %p", fn, comm);
    return NULL;
  }
  return c;
}

ncclResult_t net_ofi_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  ofi_comm* c = mr_comm(comm, "regMr");
  if (c == NULL || mhandle == NULL) return ncclInternalError;
  if (type != NCCL_PTR_HOST && !(type == NCCL_PTR_CUDA && c->nic->d->hmem)) {
    OFI_WARN("NET/OFI: regMr: memory type %d is not supported on %s (%s)%s", type,
             c->nic->d->name, net_ofi_provider(),
             type == NCCL_PTR_CUDA ? ": the provider offers no FI_HMEM for CUDA" : "");
    return ncclInternalError;
  }
  ofi_mr_handle* h = NULL;
  pthread_mutex_lock(&c->nic->lock);
  ncclResult_t res = net_ofi_mr_get(c->nic, data, size, type, &h);
  pthread_mutex_unlock(&c->nic->lock);
  if (res == ncclSuccess) *mhandle = h;
  return res;
}

ncclResult_t net_ofi_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                   uint64_t offset, int fd, void** mhandle) {
  (void)comm, (void)data, (void)size, (void)type, (void)offset, (void)fd, (void)mhandle;
  OFI_WARN("NET/OFI: regMrDmaBuf: DMA-BUF registration is not supported (NCCL_PTR_DMABUF is not "
           "advertised)");
  return ncclInvalidUsage;
}

ncclResult_t net_ofi_dereg_mr(void* comm, void* mhandle) {
  ofi_comm* c = mr_comm(comm, "deregMr");
  ofi_mr_handle* h = mhandle;
  if (c == NULL) return ncclInternalError;
  if (h == NULL || h->magic != OFI_MR_MAGIC || h->nic != c->nic) {
    OFI_WARN("NET/OFI: deregMr: invalid memory handle %p", mhandle);
    return ncclInternalError;
  }
  pthread_mutex_lock(&c->nic->lock);
  net_ofi_mr_put(c->nic, h);
  pthread_mutex_unlock(&c->nic->lock);
  return ncclSuccess;
}
