/* Suspendable GPU memory (device mode): the p2p FIFOs live in CUDA virtual memory (cuMem), so
 * ncclCommSuspend can give their physical memory back while every address stays valid.
 *
 * The owner (the FIFO's receiver) reserves a range once, for the communicator's life, and maps
 * physical memory (cuMemCreate, exportable as a POSIX file descriptor) into it. A peer in
 * another process takes a copy of the owner's descriptor (pidfd_getfd, as LSA windows do),
 * imports it and maps it into a range of its own, also reserved once. Where that peer's process
 * cannot copy descriptors (it published take_fd 0 at init: no CAP_SYS_PTRACE under Yama's
 * ptrace_scope, a seccomp filter) the owner hands it over by SCM_RIGHTS instead
 * (transport_fdx.h, as LSA windows do): vmem_fdx_offer, vmem_fdx_fetch, vmem_fdx_finish. A
 * peer in the owner's process uses the owner's address, to which the owner granted its device
 * access.
 *
 * Suspend: importers unmap (their range stays reserved); the owner saves the control block to
 * the host, unmaps and releases its memory, keeping the range. The driver frees the pages once
 * the last mapping is gone. Resume: the owner creates and maps new memory at the same address,
 * zeroes it, puts the control block back and exports a new descriptor; importers map it at
 * their same addresses. A CUDA graph captured before the suspend names only those addresses
 * (through the connection table, which stays), so it replays correctly after the resume. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "comm/comm.h"
#include "transport/transport_fdx.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/param.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "topo/cuda_entry.h"

struct weft_vmem {
  CUdeviceptr va;   /* reserved once, kept until vmem_free */
  size_t bytes;     /* a multiple of the granularity */
  int owner;        /* 1: this rank's memory; 0: a peer's, imported */
  int mapped;       /* physical memory is mapped at va */
  int access[2];    /* devices that may read and write it (-1: none) */
  CUmemGenericAllocationHandle h; /* owner, while mapped */
  int fd;           /* owner, while mapped: the exported descriptor peers copy (-1: none) */
  void* saved;      /* owner, while suspended: the first save_bytes, on the host */
  size_t save_bytes;
};

static ncclResult_t drv_fail(struct ncclComm* comm, const tconn* c, const char* what,
                             CUresult r) {
  if (c)
    WARN("rank %d: %s for the p2p FIFO %s rank %d (channel %d) on CUDA device %d failed: %s "
         "(CUDA driver error %d)",
         comm->rank, what, c->conn.is_send ? "to" : "from", c->key.peer, c->key.channel,
         comm->cuda_dev, cuda_drv_error(r), (int)r);
  else
    WARN("rank %d: %s on CUDA device %d failed: %s (CUDA driver error %d)", comm->rank, what,
         comm->cuda_dev, cuda_drv_error(r), (int)r);
  return ncclUnhandledCudaError;
}

static void alloc_prop(int dev, CUmemAllocationProp* prop) {
  memset(prop, 0, sizeof *prop);
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = dev;
  prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

int vmem_usable(struct ncclComm* comm, char* why, size_t whylen) {
  if (param_int(WEFT_PARAM_CUMEM_ENABLE) == 0) {
    snprintf(why, whylen, "NCCL_CUMEM_ENABLE=0 keeps them in cudaMalloc memory");
    return 0;
  }
  const weft_cuda_drv* d = cuda_drv();
  if (!d->create || !d->release || !d->reserve || !d->address_free || !d->map || !d->unmap ||
      !d->set_access || !d->export_handle || !d->import_handle || !d->granularity ||
      !d->device_get_attribute) {
    snprintf(why, whylen, "the CUDA driver lacks the cuMem calls (driver too old)");
    return 0;
  }
  int vmm = 0, fd_ok = 0;
  if (d->device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                              comm->cuda_dev) != CUDA_SUCCESS ||
      !vmm) {
    snprintf(why, whylen, "CUDA device %d has no virtual memory management", comm->cuda_dev);
    return 0;
  }
  if (d->device_get_attribute(&fd_ok,
                              CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                              comm->cuda_dev) != CUDA_SUCCESS ||
      !fd_ok) {
    snprintf(why, whylen, "CUDA device %d cannot export cuMem memory as a file descriptor",
             comm->cuda_dev);
    return 0;
  }
  return 1;
}

static ncclResult_t set_access(struct ncclComm* comm, const tconn* c, weft_vmem* v) {
  CUmemAccessDesc a[2];
  size_t n = 0;
  memset(a, 0, sizeof a);
  for (int i = 0; i < 2; i++) {
    if (v->access[i] < 0) continue;
    a[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a[n].location.id = v->access[i];
    a[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    n++;
  }
  CUresult r = cuda_drv()->set_access(v->va, v->bytes, a, n);
  return r == CUDA_SUCCESS ? ncclSuccess : drv_fail(comm, c, "cuMemSetAccess", r);
}

/* Map physical memory h at v->va for the devices of v (h is kept by the mapping). */
static ncclResult_t map_handle(struct ncclComm* comm, const tconn* c, weft_vmem* v,
                               CUmemGenericAllocationHandle h) {
  const weft_cuda_drv* d = cuda_drv();
  CUresult r = d->map(v->va, v->bytes, 0, h, 0);
  if (r != CUDA_SUCCESS) return drv_fail(comm, c, "cuMemMap", r);
  ncclResult_t res = set_access(comm, c, v);
  if (res != ncclSuccess) {
    d->unmap(v->va, v->bytes);
    return res;
  }
  v->mapped = 1;
  return ncclSuccess;
}

/* Owner: new physical memory at v->va, zeroed, exported. A refused cuMemCreate sets why
 * (where given) instead of a WARN. */
static ncclResult_t owner_map(struct ncclComm* comm, const tconn* c, weft_vmem* v, char* why,
                              size_t whylen) {
  const weft_cuda_drv* d = cuda_drv();
  CUmemAllocationProp prop;
  alloc_prop(comm->cuda_dev, &prop);
  CUmemGenericAllocationHandle h;
  CUresult r = d->create(&h, v->bytes, &prop, 0);
  if (r != CUDA_SUCCESS && why) {
    snprintf(why, whylen, "cuMemCreate of exportable memory failed: %s (CUDA driver error %d)",
             cuda_drv_error(r), (int)r);
    return ncclSystemError;
  }
  if (r != CUDA_SUCCESS) return drv_fail(comm, c, "cuMemCreate (exportable as a descriptor)", r);
  ncclResult_t res = map_handle(comm, c, v, h);
  if (res != ncclSuccess) {
    d->release(h);
    return res;
  }
  v->h = h;
  int fd = -1;
  r = d->export_handle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (r != CUDA_SUCCESS) {
    res = drv_fail(comm, c, "cuMemExportToShareableHandle", r);
    goto undo;
  }
  v->fd = fd;
  /* Zero: counters start at 0 and an LL flag of 0 is never valid. On the private stream, since
   * a plain cudaMemset would queue behind (blocking) user streams. */
  void* sp;
  WEFT_CHECK_GOTO(devmem_stream(comm, &sp), res, undo);
  cudaError_t e = cudaMemsetAsync((void*)(uintptr_t)v->va, 0, v->bytes, (cudaStream_t)sp);
  if (e == cudaSuccess && v->saved)
    e = cudaMemcpyAsync((void*)(uintptr_t)v->va, v->saved, v->save_bytes, cudaMemcpyHostToDevice,
                        (cudaStream_t)sp);
  if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)sp);
  if (e != cudaSuccess) {
    res = devmem_cuda_fail(comm, c, "clearing the p2p FIFO", e);
    goto undo;
  }
  return ncclSuccess;
undo:
  if (v->fd >= 0) close(v->fd);
  v->fd = -1;
  d->unmap(v->va, v->bytes);
  d->release(v->h);
  v->mapped = 0;
  return res;
}

static ncclResult_t reserve(struct ncclComm* comm, const tconn* c, size_t bytes, size_t align,
                            weft_vmem** out) {
  weft_vmem* v = calloc(1, sizeof *v);
  if (!v) {
    WARN("rank %d: out of memory for a FIFO record", comm->rank);
    return ncclSystemError;
  }
  v->fd = -1;
  v->access[0] = comm->cuda_dev;
  v->access[1] = -1;
  v->bytes = bytes;
  CUresult r = cuda_drv()->reserve(&v->va, bytes, align, 0, 0);
  if (r != CUDA_SUCCESS) {
    free(v);
    return drv_fail(comm, c, "cuMemAddressReserve", r);
  }
  *out = v;
  return ncclSuccess;
}

ncclResult_t vmem_alloc(struct ncclComm* comm, const tconn* c, size_t bytes, int other_dev,
                        weft_vmem** out, char* why, size_t whylen) {
  *out = NULL;
  CUmemAllocationProp prop;
  alloc_prop(comm->cuda_dev, &prop);
  size_t gran = 0;
  CUresult r = cuda_drv()->granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || gran == 0)
    return drv_fail(comm, c, "cuMemGetAllocationGranularity", r);
  weft_vmem* v;
  WEFT_CHECK(reserve(comm, c, (bytes + gran - 1) / gran * gran, gran, &v));
  v->owner = 1;
  if (other_dev >= 0 && other_dev != comm->cuda_dev) v->access[1] = other_dev;
  ncclResult_t res = owner_map(comm, c, v, why, whylen);
  if (res != ncclSuccess) {
    cuda_drv()->address_free(v->va, v->bytes);
    free(v);
    return res;
  }
  *out = v;
  return ncclSuccess;
}

/* The owner's memory as a handle: from descriptor handed (already here, by SCM_RIGHTS; the
 * caller keeps it) or, when handed is -1, from a copy of descriptor fd of process pid
 * (pidfd_getfd). 1, or 0 with why set. */
static int import_fd(int pid, int fd, int handed, CUmemGenericAllocationHandle* h, char* why,
                     size_t whylen) {
  int mine = handed >= 0 ? handed : ipcmap_take_fd(pid, fd, why, whylen);
  if (mine < 0) return 0;
  CUresult r = cuda_drv()->import_handle(h, (void*)(uintptr_t)mine,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (mine != handed) close(mine);
  if (r != CUDA_SUCCESS)
    snprintf(why, whylen, "cuMemImportFromShareableHandle: %s (CUDA driver error %d)",
             cuda_drv_error(r), (int)r);
  return r == CUDA_SUCCESS;
}

static ncclResult_t import_map(struct ncclComm* comm, const tconn* c, weft_vmem* v, int pid,
                               int fd, int handed) {
  CUmemGenericAllocationHandle h;
  char why[160];
  if (!import_fd(pid, fd, handed, &h, why, sizeof why)) {
    WARN("rank %d: opening the p2p FIFO of rank %d (channel %d, process %d) failed: %s",
         comm->rank, c->key.peer, c->key.channel, pid, why);
    return ncclSystemError;
  }
  ncclResult_t res = map_handle(comm, c, v, h);
  cuda_drv()->release(h); /* the mapping holds the memory from here on */
  return res;
}

ncclResult_t vmem_reserve(struct ncclComm* comm, const tconn* c, size_t bytes, weft_vmem** out) {
  *out = NULL;
  return reserve(comm, c, bytes, 0, out);
}

ncclResult_t vmem_import(struct ncclComm* comm, const tconn* c, int pid, int fd, size_t bytes,
                         weft_vmem** out) {
  *out = NULL;
  weft_vmem* v;
  WEFT_CHECK(reserve(comm, c, bytes, 0, &v));
  ncclResult_t res = import_map(comm, c, v, pid, fd, -1);
  if (res != ncclSuccess) {
    cuda_drv()->address_free(v->va, v->bytes);
    free(v);
    return res;
  }
  *out = v;
  return ncclSuccess;
}

void* vmem_ptr(const weft_vmem* v) { return (void*)(uintptr_t)v->va; }
size_t vmem_bytes(const weft_vmem* v) { return v->bytes; }
int vmem_fd(const weft_vmem* v) { return v->fd; }
int vmem_is_owner(const weft_vmem* v) { return v->owner; }
int vmem_mapped(const weft_vmem* v) { return v->mapped; }

static void unmap(weft_vmem* v) {
  const weft_cuda_drv* d = cuda_drv();
  if (!v->mapped) return;
  d->unmap(v->va, v->bytes);
  if (v->owner) {
    d->release(v->h);
    if (v->fd >= 0) close(v->fd);
    v->fd = -1;
  }
  v->mapped = 0;
}

ncclResult_t vmem_suspend(struct ncclComm* comm, const tconn* c, weft_vmem* v,
                          size_t save_bytes) {
  if (!v->mapped) return ncclSuccess;
  if (v->owner && save_bytes) {
    if (save_bytes > v->bytes) save_bytes = v->bytes;
    free(v->saved);
    v->saved = malloc(save_bytes);
    if (!v->saved) {
      WARN("rank %d: out of memory saving a FIFO's control block", comm->rank);
      return ncclSystemError;
    }
    void* sp;
    WEFT_CHECK(devmem_stream(comm, &sp));
    cudaError_t e = cudaMemcpyAsync(v->saved, (void*)(uintptr_t)v->va, save_bytes,
                                    cudaMemcpyDeviceToHost, (cudaStream_t)sp);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)sp);
    if (e != cudaSuccess) {
      free(v->saved);
      v->saved = NULL;
      return devmem_cuda_fail(comm, c, "saving the p2p FIFO's control block", e);
    }
    v->save_bytes = save_bytes;
  }
  unmap(v);
  return ncclSuccess;
}

ncclResult_t vmem_resume_owner(struct ncclComm* comm, const tconn* c, weft_vmem* v) {
  if (v->mapped || !v->owner) return ncclSuccess;
  WEFT_CHECK(owner_map(comm, c, v, NULL, 0));
  free(v->saved);
  v->saved = NULL;
  v->save_bytes = 0;
  return ncclSuccess;
}

ncclResult_t vmem_resume_import(struct ncclComm* comm, const tconn* c, weft_vmem* v, int pid,
                                int fd) {
  if (v->mapped || v->owner) return ncclSuccess;
  return import_map(comm, c, v, pid, fd, -1);
}

/* ---- The SCM_RIGHTS fallback (transport_fdx.h): one listener per FIFO, served once ---- */

ncclResult_t vmem_fdx_offer(struct ncclComm* comm, tconn* c, uint64_t* token) {
  fdx_close(c->p2p_fdx);
  c->p2p_fdx = NULL;
  ncclResult_t res = fdx_open(1, &c->p2p_fdx, token);
  if (res != ncclSuccess)
    WARN("rank %d: no socket to hand the p2p FIFO's descriptor to rank %d (channel %d) over",
         comm->rank, c->key.peer, c->key.channel);
  return res;
}

ncclResult_t vmem_fdx_fetch(struct ncclComm* comm, tconn* c, int32_t pid, uint64_t token) {
  vmem_fdx_drop(c);
  char why[160];
  if (fdx_connect(pid, token, &c->p2p_fdx_sock, why, sizeof why) != ncclSuccess) {
    WARN("rank %d: fetching the p2p FIFO descriptor of rank %d (channel %d) by SCM_RIGHTS "
         "failed: %s", comm->rank, c->key.peer, c->key.channel, why);
    return ncclSystemError;
  }
  c->p2p_fdx_pid = pid;
  return ncclSuccess;
}

void vmem_fdx_drop(tconn* c) {
  fdx_close(c->p2p_fdx);
  c->p2p_fdx = NULL;
  if (c->p2p_fdx_pid) close(c->p2p_fdx_sock);
  c->p2p_fdx_pid = 0;
}

ncclResult_t vmem_fdx_finish(struct ncclComm* comm, tconn* const* cs, size_t m) {
  fdx_deadline d = fdx_deadline_in((int)param_int(WEFT_PARAM_BOOTSTRAP_TIMEOUT_MS));
  ncclResult_t res = ncclSuccess;
  char why[160];
  /* Serve every listener, even after a failure: the peers that wait on this rank then fail on
   * their own step, not at the deadline. */
  for (size_t i = 0; i < m; i++) {
    tconn* c = cs[i];
    if (!c || !c->p2p_fdx) continue;
    if (fdx_serve(c->p2p_fdx, c->p2p_vmem->fd, 1, d, why, sizeof why) != ncclSuccess &&
        res == ncclSuccess) {
      WARN("rank %d: handing the p2p FIFO's descriptor to rank %d (channel %d) by SCM_RIGHTS "
           "failed: %s", comm->rank, c->key.peer, c->key.channel, why);
      res = ncclSystemError;
    }
    fdx_close(c->p2p_fdx);
    c->p2p_fdx = NULL;
  }
  int taken = 0;
  for (size_t i = 0; i < m; i++) {
    tconn* c = cs[i];
    if (!c || !c->p2p_fdx_pid) continue;
    int pid = c->p2p_fdx_pid, fd = -1;
    if (res == ncclSuccess &&
        fdx_take(c->p2p_fdx_sock, pid, d, &fd, why, sizeof why) != ncclSuccess) {
      WARN("rank %d: fetching the p2p FIFO descriptor of rank %d (channel %d) by SCM_RIGHTS "
           "failed: %s", comm->rank, c->key.peer, c->key.channel, why);
      res = ncclSystemError;
    }
    vmem_fdx_drop(c);
    if (res == ncclSuccess && !c->p2p_vmem->mapped) res = import_map(comm, c, c->p2p_vmem, pid,
                                                                     -1, fd);
    if (fd >= 0) close(fd);
    taken++;
  }
  if (res == ncclSuccess && taken)
    INFO(NCCL_INIT | NCCL_P2P, "rank %d: %d p2p FIFO descriptor(s) came by SCM_RIGHTS (this "
         "process cannot pidfd_getfd)", comm->rank, taken);
  return res;
}

void vmem_free(weft_vmem* v) {
  if (!v) return;
  unmap(v);
  cuda_drv()->address_free(v->va, v->bytes);
  free(v->saved);
  free(v);
}

#else /* !WEFT_HAVE_CUDA: no device mode, no FIFO in cuMem memory. */

ncclResult_t vmem_fdx_finish(struct ncclComm* comm, tconn* const* cs, size_t m) {
  (void)comm, (void)cs, (void)m;
  return ncclSuccess;
}

#endif
