/* Memory and registration entry points: ncclMemAlloc/ncclMemFree, ncclCommRegister/Deregister,
 * ncclCommWindowRegister/Deregister, and weft's weftMemAllocTyped/weftMemFreeTyped.
 * (Reduction ops are in api_redop.c.)
 *
 * ncclMemAlloc uses the CUDA VMM API (cuMemCreate + cuMemMap), as NCCL does, so the memory can
 * later be exported (POSIX fd handles) and registered with NICs. The driver functions come
 * from cudaGetDriverEntryPoint*, never from linking libcuda: the library must load where no
 * driver is installed. What ncclMemAlloc handed out is kept in a process-wide registry (one
 * mutex), so ncclMemFree rejects foreign pointers instead of corrupting the driver's state.
 *
 * Registrations are recorded per communicator (comm->regs, under comm->lock), in both modes,
 * and checked at deregistration (a foreign or twice-released handle is ncclInvalidArgument).
 * In device mode both kinds are zero copy for the direct algorithms (plan/): a symmetric window
 * (NCCL_WIN_COLL_SYMMETRIC) is mapped by every rank at once (transport/transport_window.c);
 * ncclCommRegister's buffers, and other windows, are shared by this rank alone with each
 * peer's process at registration (transport/transport_regview.c). Host mode only records them:
 * the data path copies through its own connection buffers. In both modes symmetric windows are
 * numbered for one-sided calls, and the first one sets those up, collectively (rma/). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "gin/gin_comm.h"
#include "group/group.h"
#include "rma/rma.h"
#include "transport/transport.h"
#include "topo/cuda_entry.h"
#include "topo/cuda_probe.h"
#include "util/check.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

/* ncclInvalidUsage with a WARN when this process cannot use a GPU; the runtime is never
 * touched before this says yes (CI machines have no driver). */
static ncclResult_t need_gpu(const char* fn) {
#ifndef WEFT_HAVE_CUDA
  return api_not_available(fn, "GPU memory (this weft was built without CUDA)");
#else
  weft_cuda_info cu;
  cuda_probe(&cu);
  if (!cu.usable) {
    WARN("%s: needs a CUDA device, and none is usable here (%s)", fn, cu.why);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
#endif
}

#ifdef WEFT_HAVE_CUDA
static ncclResult_t cuda_fail(const char* fn, const char* what, cudaError_t e) {
  WARN("%s: %s failed: %s (CUDA error %d)", fn, what, cudaGetErrorString(e), (int)e);
  cudaGetLastError(); /* not sticky: clear it for the application's own checks */
  return ncclUnhandledCudaError;
}

/* ---- driver functions (cuMem*: topo/cuda_entry.h's table) ---- */

/* The first function ncclMemAlloc needs that the driver lacks, NULL when it has them all. */
static const char* cumem_missing(const weft_cuda_drv* d) {
  if (!d->device_get_attribute) return "cuDeviceGetAttribute";
  if (!d->granularity) return "cuMemGetAllocationGranularity";
  if (!d->create) return "cuMemCreate";
  if (!d->reserve) return "cuMemAddressReserve";
  if (!d->map) return "cuMemMap";
  if (!d->set_access) return "cuMemSetAccess";
  if (!d->unmap) return "cuMemUnmap";
  if (!d->address_free) return "cuMemAddressFree";
  if (!d->release) return "cuMemRelease";
  return NULL;
}

static ncclResult_t drv_fail(const char* fn, const char* what, CUresult r) {
  WARN("%s: %s failed: %s (CUDA driver error %d)", fn, what, cuda_drv_error(r), (int)r);
  return ncclUnhandledCudaError;
}

/* ---- the registry of ncclMemAlloc allocations ---- */

typedef struct mem_block {
  CUdeviceptr ptr;
  size_t bytes; /* granularity-rounded: what is reserved and mapped */
  CUmemGenericAllocationHandle handle;
  int dev;
  struct mem_block* next;
} mem_block;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_block* blocks;

static mem_block* blocks_take(CUdeviceptr p) {
  pthread_mutex_lock(&blocks_lock);
  mem_block** pp = &blocks;
  while (*pp && (*pp)->ptr != p) pp = &(*pp)->next;
  mem_block* b = *pp;
  if (b) *pp = b->next;
  pthread_mutex_unlock(&blocks_lock);
  return b;
}

/* Read/write for dev and every device that can reach dev's memory peer to peer. */
static ncclResult_t set_access(const char* fn, CUdeviceptr va, size_t bytes, int dev) {
  const weft_cuda_drv* drv = cuda_drv();
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess) return cuda_fail(fn, "cudaGetDeviceCount", e);
  CUmemAccessDesc* desc = calloc((size_t)ndev, sizeof *desc);
  if (!desc) {
    WARN("%s: out of memory for %d access descriptors", fn, ndev);
    return ncclSystemError;
  }
  size_t n = 0;
  for (int d = 0; d < ndev; d++) {
    int ok = d == dev;
    if (!ok) {
      e = cudaDeviceCanAccessPeer(&ok, d, dev);
      if (e != cudaSuccess) {
        free(desc);
        return cuda_fail(fn, "cudaDeviceCanAccessPeer", e);
      }
    }
    if (!ok) continue;
    desc[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc[n].location.id = d;
    desc[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    n++;
  }
  CUresult r = drv->set_access(va, bytes, desc, n);
  free(desc);
  return r == CUDA_SUCCESS ? ncclSuccess : drv_fail(fn, "cuMemSetAccess", r);
}

static ncclResult_t cumem_alloc(const char* fn, void** ptr, size_t size) {
  const weft_cuda_drv* drv = cuda_drv();
  const char* missing = cumem_missing(drv);
  if (missing) {
    WARN("%s: the CUDA driver lacks %s (cuMem allocation needs CUDA 10.2+ drivers)", fn,
         missing);
    return ncclInvalidUsage;
  }
  int dev;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return cuda_fail(fn, "cudaGetDevice", e);
  e = cudaSetDevice(dev); /* makes the primary context exist before the driver calls */
  if (e != cudaSuccess) return cuda_fail(fn, "cudaSetDevice", e);

  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  int fd_ok = 0, rdma_ok = 0;
  CUresult r = drv->device_get_attribute(
      &fd_ok, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev);
  if (r != CUDA_SUCCESS) fd_ok = 0;
  r = drv->device_get_attribute(&rdma_ok,
                               CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, dev);
  if (r != CUDA_SUCCESS) rdma_ok = 0;
  /* Exportable (fd) so peers can map it later; RDMA-capable so NICs can register it. */
  prop.requestedHandleTypes =
      fd_ok ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  if (rdma_ok) prop.allocFlags.gpuDirectRDMACapable = 1;

  size_t gran = 0;
  r = drv->granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (r != CUDA_SUCCESS || gran == 0)
    r = drv->granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS) return drv_fail(fn, "cuMemGetAllocationGranularity", r);
  if (gran == 0 || size > SIZE_MAX - gran) {
    WARN("%s: size = %zu cannot be rounded to the %zu-byte granularity", fn, size, gran);
    return ncclInvalidArgument;
  }
  size_t bytes = (size + gran - 1) / gran * gran;

  mem_block* b = calloc(1, sizeof *b);
  if (!b) {
    WARN("%s: out of memory for the allocation record", fn);
    return ncclSystemError;
  }
  ncclResult_t res;
  r = drv->create(&b->handle, bytes, &prop, 0);
  if (r != CUDA_SUCCESS && prop.requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE) {
    /* Some containers refuse exportable memory: plain memory still serves this process. */
    INFO(NCCL_ALLOC, "%s: cuMemCreate with a POSIX fd handle failed (%d); retrying without", fn,
         (int)r);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    r = drv->create(&b->handle, bytes, &prop, 0);
  }
  if (r != CUDA_SUCCESS) {
    res = drv_fail(fn, "cuMemCreate", r);
    goto fail_record;
  }
  r = drv->reserve(&b->ptr, bytes, gran, 0, 0);
  if (r != CUDA_SUCCESS) {
    res = drv_fail(fn, "cuMemAddressReserve", r);
    goto fail_release;
  }
  r = drv->map(b->ptr, bytes, 0, b->handle, 0);
  if (r != CUDA_SUCCESS) {
    res = drv_fail(fn, "cuMemMap", r);
    goto fail_address;
  }
  WEFT_CHECK_GOTO(set_access(fn, b->ptr, bytes, dev), res, fail_unmap);
  b->bytes = bytes;
  b->dev = dev;
  pthread_mutex_lock(&blocks_lock);
  b->next = blocks;
  blocks = b;
  pthread_mutex_unlock(&blocks_lock);
  INFO(NCCL_ALLOC, "%s: %zu bytes (%zu requested) at %p on CUDA device %d", fn, bytes, size,
       (void*)(uintptr_t)b->ptr, dev);
  *ptr = (void*)(uintptr_t)b->ptr;
  return ncclSuccess;
fail_unmap:
  drv->unmap(b->ptr, bytes);
fail_address:
  drv->address_free(b->ptr, bytes);
fail_release:
  drv->release(b->handle);
fail_record:
  free(b);
  return res;
}

static ncclResult_t cumem_free(const char* fn, mem_block* b) {
  const weft_cuda_drv* drv = cuda_drv();
  int saved = -1;
  cudaError_t e = cudaGetDevice(&saved);
  if (e == cudaSuccess && saved != b->dev) e = cudaSetDevice(b->dev);
  if (e != cudaSuccess) cuda_fail(fn, "making the allocation's device current", e);
  ncclResult_t res = ncclSuccess;
  CUresult r = drv->unmap(b->ptr, b->bytes);
  if (r != CUDA_SUCCESS) res = drv_fail(fn, "cuMemUnmap", r);
  r = drv->release(b->handle);
  if (r != CUDA_SUCCESS && res == ncclSuccess) res = drv_fail(fn, "cuMemRelease", r);
  r = drv->address_free(b->ptr, b->bytes);
  if (r != CUDA_SUCCESS && res == ncclSuccess) res = drv_fail(fn, "cuMemAddressFree", r);
  if (saved >= 0 && saved != b->dev) cudaSetDevice(saved);
  free(b);
  return res;
}
#endif /* WEFT_HAVE_CUDA */

WEFT_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  const char* fn = "ncclMemAlloc";
  WEFT_ARG_NONNULL(fn, ptr);
  if (size == 0) {
    WARN("%s: size is 0", fn);
    return ncclInvalidArgument;
  }
  WEFT_CHECK(need_gpu(fn));
#ifdef WEFT_HAVE_CUDA
  return cumem_alloc(fn, ptr, size);
#else
  return ncclInvalidUsage; /* need_gpu said why */
#endif
}

WEFT_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == NULL) return ncclSuccess;
#ifdef WEFT_HAVE_CUDA
  mem_block* b = blocks_take((CUdeviceptr)(uintptr_t)ptr);
  if (b) return cumem_free("ncclMemFree", b);
#endif
  WARN("ncclMemFree: %p was not allocated by ncclMemAlloc (or was freed already)", ptr);
  return ncclInvalidArgument;
}

/* ---- registrations ---- */

/* GPU memory: [buff, buff + size) must lie inside one allocation (a registration past its end
 * would map, or let a peer read, memory that is not the caller's). Host memory and pointers
 * CUDA does not know are left as they are. */
static ncclResult_t reg_check_allocation(const char* fn, void* buff, size_t size) {
#ifdef WEFT_HAVE_CUDA
  weft_cuda_info cu;
  cuda_probe(&cu);
  if (!cu.usable) return ncclSuccess;
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, buff) != cudaSuccess) {
    (void)cudaGetLastError();
    return ncclSuccess;
  }
  if (a.type != cudaMemoryTypeDevice) return ncclSuccess;
  uintptr_t base = 0;
  size_t len = 0;
  if (!cuda_alloc_range(buff, &base, &len))
    return ncclSuccess; /* no answer: nothing to hold against the caller */
  if ((uintptr_t)buff - (uintptr_t)base + size > len) {
    WARN("%s: buff %p with size = %zu runs past the end of its GPU allocation (%p, %zu bytes)",
         fn, buff, size, (void*)(uintptr_t)base, len);
    return ncclInvalidArgument;
  }
#else
  (void)fn, (void)buff, (void)size;
#endif
  return ncclSuccess;
}

static ncclResult_t reg_add(struct ncclComm* comm, const char* fn, void* buff, size_t size,
                            int window, int win_flags, weft_mem_reg** out) {
  *out = NULL;
  /* No object is larger than PTRDIFF_MAX or runs past the end of the address space. */
  if (size > (size_t)PTRDIFF_MAX || (uintptr_t)buff + size < (uintptr_t)buff) {
    WARN("%s: buff %p with size = %zu runs past the end of the address space", fn, buff, size);
    return ncclInvalidArgument;
  }
  WEFT_CHECK(reg_check_allocation(fn, buff, size));
  weft_mem_reg* r = calloc(1, sizeof *r);
  if (!r) {
    WARN("%s: out of memory for a registration", fn);
    return ncclSystemError;
  }
  r->buff = buff;
  r->size = size;
  r->window = window;
  r->win_flags = win_flags;
  /* Zero copy without symmetry: peers map this rank's buffer now, each on its own (transport/);
   * the symmetric windows are mapped collectively instead (window_map_job). */
  if (win_flags != NCCL_WIN_COLL_SYMMETRIC && transport_reg_zero_copy(comm)) {
    ncclResult_t res = transport_reg_views(comm, buff, size, &r->views);
    if (res != ncclSuccess) {
      free(r);
      return res;
    }
    r->local_zc = 1;
  }
  pthread_mutex_lock(&comm->lock);
  r->next = comm->regs;
  comm->regs = r;
  if (r->local_zc) __atomic_add_fetch(&comm->zc_locals, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&comm->lock);
  INFO(NCCL_REG, "%s: comm %p rank %d: %p (%zu bytes) registered as %p", fn, (void*)comm,
       comm->rank, buff, size, (void*)r);
  *out = r;
  return ncclSuccess;
}

/* The handle a registration was given: its device window for a device-mode window (what
 * kernels dereference), else the record's own address. */
static const void* reg_handle(const weft_mem_reg* r) {
  return r->dev_win ? (const void*)r->dev_win : (const void*)r;
}

/* Remove handle from comm's list when it is there with the same kind; the handle is only
 * compared until found, so any stale or foreign value is safe. */
static ncclResult_t reg_remove(struct ncclComm* comm, const char* fn, const void* handle,
                               int window) {
  weft_mem_reg* found = NULL;
  pthread_mutex_lock(&comm->lock);
  for (weft_mem_reg** pp = &comm->regs; *pp; pp = &(*pp)->next)
    if (reg_handle(*pp) == handle && (*pp)->window == window) {
      found = *pp;
      *pp = found->next;
      break;
    }
  if (found && found->zc) __atomic_sub_fetch(&comm->zc_windows, 1, __ATOMIC_RELEASE);
  if (found && found->local_zc) __atomic_sub_fetch(&comm->zc_locals, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&comm->lock);
  if (!found) {
    WARN("%s: %s %p is not registered on comm %p (foreign, or released already)", fn,
         window ? "window" : "handle", handle, (void*)comm);
    return ncclInvalidArgument;
  }
  /* The operations that used the buffer have completed (the caller's part, as in NCCL). */
  if (found->window && found->win_flags == NCCL_WIN_COLL_SYMMETRIC)
    rma_window_remove(comm, found);
  gin_comm_window_remove(comm, found);
  transport_window_unmap(comm, found->zc);
  transport_window_lsa_unmap(comm, found->lsa);
  if (found->dev_win) (void)api_devwin_listed(comm); /* the table no longer lists it */
  api_devwin_free(comm, found);
  transport_reg_views_free(comm, found->views, 1);
  free(found);
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  const char* fn = "ncclCommRegister";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, buff);
  WEFT_ARG_NONNULL(fn, handle);
  if (size == 0) {
    WARN("%s: size is 0", fn);
    return ncclInvalidArgument;
  }
  weft_mem_reg* r;
  WEFT_CHECK(reg_add(comm, fn, buff, size, 0, 0, &r));
  *handle = r;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  const char* fn = "ncclCommDeregister";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, handle);
  return reg_remove(comm, fn, handle, 0);
}

static ncclResult_t rma_connect_job(struct ncclComm* comm, void* arg) {
  (void)arg;
  return rma_connect(comm);
}

static ncclResult_t rma_sync_job(struct ncclComm* comm, void* arg) {
  (void)arg;
  return rma_window_sync(comm);
}

/* Map a symmetric window on every rank (collective) and let plan/ see it. */
static ncclResult_t window_map_job(struct ncclComm* comm, void* arg) {
  weft_mem_reg* r = arg;
  weft_window_map* m = NULL;
  weft_window_lsa* lsa = NULL;
  WEFT_CHECK(transport_window_map(comm, r->buff, r->size, &m));
  ncclResult_t res = transport_window_lsa_map(comm, r->buff, &lsa);
  if (res != ncclSuccess) {
    transport_window_unmap(comm, m);
    return res;
  }
  pthread_mutex_lock(&comm->lock);
  r->zc = m;
  r->lsa = lsa;
  if (m) __atomic_add_fetch(&comm->zc_windows, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&comm->lock);
  return r->dev_win ? api_devwin_fill(comm, r) : ncclSuccess;
}

/* Record a window; in device mode give it its device window, and map a symmetric one on every
 * rank: now, or at the outermost ncclGroupEnd when defer (one thread registering for several
 * ranks, as nccl-tests -R 2 does, reaches the collective mapping only there). */
static ncclResult_t window_register(struct ncclComm* comm, const char* fn, void* buff,
                                    size_t size, int win_flags, int defer, weft_mem_reg** out) {
  weft_mem_reg* r;
  WEFT_CHECK(reg_add(comm, fn, buff, size, 1, win_flags, &r));
  ncclResult_t res = ncclSuccess;
  /* Device mode: the handle is the window as kernels see it (api_devwin.c). */
  if (comm->mode == WEFT_MODE_DEVICE) res = api_devwin_create(comm, r);
  /* Symmetric windows are numbered for one-sided calls (rma/), and in host mode the first one
   * connects the one-sided FIFOs with every peer: collective, like the mapping below. */
  if (res == ncclSuccess && win_flags == NCCL_WIN_COLL_SYMMETRIC) {
    int connected = rma_connected(comm);
    res = rma_window_add(comm, r);
    if (res == ncclSuccess && !connected)
      res = defer ? group_defer_job(comm, rma_connect_job, NULL) : rma_connect(comm);
    else if (res == ncclSuccess) /* an RMA plugin: every rank registered it before any puts */
      res = defer ? group_defer_job(comm, rma_sync_job, NULL) : rma_window_sync(comm);
  }
  /* A symmetric window on a device communicator is mapped by every peer (collectively), so
   * collectives on it read the peers' buffers in place and kernels reach them through the
   * LSA flat mapping; any other window is only recorded. */
  if (res == ncclSuccess && win_flags == NCCL_WIN_COLL_SYMMETRIC &&
      comm->mode == WEFT_MODE_DEVICE)
    res = defer ? group_defer_job(comm, window_map_job, r) : window_map_job(comm, r);
  /* A device communicator with GIN reaches every symmetric window through the proxy
   * (gin/gin_comm.h); its device window then carries the handle. */
  if (res == ncclSuccess && gin_comm_active(comm)) { /* gin/ takes the symmetric ones */
    uint64_t h = 0;
    res = gin_comm_window_add(comm, r, &h);
    if (res == ncclSuccess && h) res = api_devwin_fill(comm, r);
  }
  if (res != ncclSuccess) {
    reg_remove(comm, fn, reg_handle(r), 1);
    return res;
  }
  *out = r;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  const char* fn = "ncclCommWindowRegister";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, buff);
  WEFT_ARG_NONNULL(fn, win);
  if (size == 0) {
    WARN("%s: size is 0", fn);
    return ncclInvalidArgument;
  }
  /* NCCL_WIN_STRICT_ORDERING asks NIC registrations to keep the order of writes; weft
   * registers windows with no NIC, so it changes nothing here (nor on LSA, which is load/store). */
  if ((winFlags & ~(NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING)) != 0) {
    WARN("%s: winFlags = %d is not a combination of NCCL_WIN_COLL_SYMMETRIC and "
         "NCCL_WIN_STRICT_ORDERING", fn, winFlags);
    return ncclInvalidArgument;
  }
  winFlags &= NCCL_WIN_COLL_SYMMETRIC;
  weft_mem_reg* r;
  WEFT_CHECK(window_register(comm, fn, buff, size, winFlags, group_depth() > 0, &r));
  *win = (ncclWindow_t)(void*)reg_handle(r);
  return ncclSuccess;
}

ncclResult_t api_window_register_now(struct ncclComm* comm, const char* fn, void* buff,
                                     size_t size, weft_mem_reg** out) {
  return window_register(comm, fn, buff, size, NCCL_WIN_COLL_SYMMETRIC, 0, out);
}

ncclResult_t api_window_release(struct ncclComm* comm, const char* fn, const void* handle) {
  return reg_remove(comm, fn, handle, 1);
}

/* ---- finding a window's communicator (the device API's pointer queries) ---- */

typedef struct {
  const void* win;
  struct ncclComm* comm;
  void* buff;
  size_t size;
  weft_window_lsa* lsa;
} window_search;

static void window_search_comm(struct ncclComm* comm, void* arg) {
  window_search* s = arg;
  if (s->comm) return;
  pthread_mutex_lock(&comm->lock);
  for (const weft_mem_reg* r = comm->regs; r; r = r->next)
    if (reg_handle(r) == s->win && r->window) {
      s->comm = comm;
      s->buff = r->buff;
      s->size = r->size;
      s->lsa = r->lsa;
      break;
    }
  pthread_mutex_unlock(&comm->lock);
}

ncclResult_t api_window_find(const char* fn, ncclWindow_t win, struct ncclComm** comm,
                             void** buff, size_t* size, weft_window_lsa** lsa) {
  window_search s = {(const void*)win, NULL, NULL, 0, NULL};
  comm_registry_visit(window_search_comm, &s);
  if (!s.comm) {
    WARN("%s: window %p is not a registered window of any live communicator", fn, (void*)win);
    return ncclInvalidArgument;
  }
  *comm = s.comm;
  *buff = s.buff;
  *size = s.size;
  *lsa = s.lsa;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  const char* fn = "ncclCommWindowDeregister";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, win);
  return reg_remove(comm, fn, (const void*)win, 1);
}

ncclResult_t api_window_of(struct ncclComm* comm, const char* fn, const char* what,
                           ncclWindow_t win, const weft_mem_reg** out) {
  const weft_mem_reg* found = NULL;
  pthread_mutex_lock(&comm->lock);
  for (const weft_mem_reg* r = comm->regs; r; r = r->next)
    if (reg_handle(r) == (const void*)win && r->window) found = r;
  pthread_mutex_unlock(&comm->lock);
  if (!found) {
    WARN("%s: %s %p is not a window of comm %p (another communicator's, or deregistered)", fn,
         what, (void*)win, (void*)comm);
    return ncclInvalidArgument;
  }
  *out = found;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  const char* fn = "ncclWinGetUserPtr";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, win);
  WEFT_ARG_NONNULL(fn, outUserPtr);
  const weft_mem_reg* r;
  WEFT_CHECK(api_window_of(comm, fn, "win", win, &r));
  *outUserPtr = r->buff;
  return ncclSuccess;
}

/* ---- weft's typed allocation (abi/weft.h) ---- */

static size_t page_bytes(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p >= 4096 ? (size_t)p : 4096;
}

/* Host memory is page-aligned (and a whole number of pages) so it can be registered with a NIC
 * as is; with a usable GPU it is also pinned and mapped (cudaHostRegister rather than
 * cudaMallocHost, whose alignment is not documented), so copies to and from it run at full
 * speed. */
WEFT_EXT ncclResult_t weftMemAllocTyped(void** ptr, size_t size, weftMemType_t type) {
  const char* fn = "weftMemAllocTyped";
  WEFT_ARG_NONNULL(fn, ptr);
  if (size == 0) {
    WARN("%s: size is 0", fn);
    return ncclInvalidArgument;
  }
  switch (type) {
    case weftMemHost: {
      size_t pg = page_bytes();
      if (size > SIZE_MAX - pg) {
        WARN("%s: size = %zu is too large", fn, size);
        return ncclInvalidArgument;
      }
      size_t bytes = (size + pg - 1) / pg * pg;
      void* p = NULL;
      if (posix_memalign(&p, pg, bytes) != 0) {
        WARN("%s: cannot allocate %zu bytes of host memory", fn, size);
        return ncclSystemError;
      }
#ifdef WEFT_HAVE_CUDA
      weft_cuda_info cu;
      cuda_probe(&cu);
      if (cu.usable) {
        cudaError_t e =
            cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
        if (e != cudaSuccess) {
          free(p);
          return cuda_fail(fn, "cudaHostRegister", e);
        }
      }
#endif
      *ptr = p;
      return ncclSuccess;
    }
    case weftMemDevice:
    case weftMemManaged: {
      WEFT_CHECK(need_gpu(fn));
#ifdef WEFT_HAVE_CUDA
      void* p = NULL;
      cudaError_t e = type == weftMemDevice ? cudaMalloc(&p, size)
                                            : cudaMallocManaged(&p, size, cudaMemAttachGlobal);
      if (e != cudaSuccess)
        return cuda_fail(fn, type == weftMemDevice ? "cudaMalloc" : "cudaMallocManaged", e);
      *ptr = p;
      return ncclSuccess;
#else
      return ncclInvalidUsage; /* need_gpu said why */
#endif
    }
    default:
      WARN("%s: type = %d is not a weftMemType_t", fn, (int)type);
      return ncclInvalidArgument;
  }
}

WEFT_EXT ncclResult_t weftMemFreeTyped(void* ptr, weftMemType_t type) {
  const char* fn = "weftMemFreeTyped";
  if (ptr == NULL) return ncclSuccess;
  switch (type) {
    case weftMemHost: {
#ifdef WEFT_HAVE_CUDA
      weft_cuda_info cu;
      cuda_probe(&cu);
      if (cu.usable) {
        cudaError_t e = cudaHostUnregister(ptr);
        if (e == cudaErrorHostMemoryNotRegistered)
          cudaGetLastError(); /* not pinned by us: plain memory, free it all the same */
        else if (e != cudaSuccess)
          return cuda_fail(fn, "cudaHostUnregister", e);
      }
#endif
      free(ptr);
      return ncclSuccess;
    }
    case weftMemDevice:
    case weftMemManaged: {
#ifdef WEFT_HAVE_CUDA
      weft_cuda_info cu;
      cuda_probe(&cu);
      if (cu.usable) {
        cudaError_t e = cudaFree(ptr);
        return e == cudaSuccess ? ncclSuccess : cuda_fail(fn, "cudaFree", e);
      }
#endif
      WARN("%s: %p cannot be GPU memory: no CUDA device is usable here", fn, ptr);
      return ncclInvalidArgument;
    }
    default:
      WARN("%s: type = %d is not a weftMemType_t", fn, (int)type);
      return ncclInvalidArgument;
  }
}
