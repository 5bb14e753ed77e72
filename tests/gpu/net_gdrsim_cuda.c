/* GdrSim's CUDA calls (see net_gdrsim.c): copies between a registration's GPU memory and its
 * shadow, its stream, and what kind of memory a pointer is.
 *
 * The calling thread's CUDA state is saved and put back exactly, through three driver entry
 * points found through the runtime (so the .so needs no libcuda at link time): the proxy thread
 * may have no current context at all, and there the runtime's cudaGetDevice answers 0 —
 * "restoring" device 0 would create a context on GPU 0 in a rank that never used it (seen on an
 * H200 pair: an extra cuda-EvtHandlr thread after ncclCommDestroy, so gpu_coll's leak check
 * failed). Pointers are classified by the driver too: it needs no current context, where
 * cudaPointerGetAttributes would make one on a thread that has none.
 *
 * Copies use the registration's non-blocking stream and wait for it alone: the legacy default
 * stream or a device-wide sync would wait for weft's kernels, which spin until the proxy (the
 * caller here) moves data. Shadows are pageable host memory, so copies from them are staged by
 * the driver; that is slower than pinned memory but needs no cudaHostAlloc/cudaFreeHost, whose
 * free may wait for the device. */
#include <pthread.h>
#include <stdint.h>

#include <cuda.h>

#include "net_gdrsim.h"

typedef CUresult (*cu_ctx_get_fn)(CUcontext*);
typedef CUresult (*cu_ctx_set_fn)(CUcontext);
typedef CUresult (*cu_ptr_attrs_fn)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
static struct {
  cu_ctx_get_fn ctx_get;
  cu_ctx_set_fn ctx_set;
  cu_ptr_attrs_fn ptr_attrs;
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void* cu_entry(const char* name) {
  void* fn = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return NULL;
  }
  return fn;
}

static void cu_resolve(void) {
  cu.ctx_get = (cu_ctx_get_fn)cu_entry("cuCtxGetCurrent");
  cu.ctx_set = (cu_ctx_set_fn)cu_entry("cuCtxSetCurrent");
  cu.ptr_attrs = (cu_ptr_attrs_fn)cu_entry("cuPointerGetAttributes");
}

int gs_cuda_init(void) {
  pthread_once(&cu_once, cu_resolve);
  return cu.ctx_get && cu.ctx_set && cu.ptr_attrs;
}

/* What was current on this thread: a context (NULL: none) and, when there was one, its device
 * as the runtime sees it. */
typedef struct {
  CUcontext ctx;
  int dev;
} cu_saved;

/* Makes dev current (its primary context) unless it already is; *s gets what to restore. */
static cudaError_t device_enter(int dev, cu_saved* s) {
  s->ctx = NULL;
  s->dev = -1;
  if (cu.ctx_get(&s->ctx) != CUDA_SUCCESS) s->ctx = NULL;
  if (s->ctx != NULL && cudaGetDevice(&s->dev) != cudaSuccess) {
    (void)cudaGetLastError();
    s->dev = -1;
  }
  if (s->ctx != NULL && s->dev == dev) return cudaSuccess;
  return cudaSetDevice(dev);
}

/* Puts back what device_enter(dev, s) found: the runtime's device, then the exact context (or
 * none). */
static void device_leave(int dev, const cu_saved* s) {
  if (s->ctx != NULL && s->dev == dev) return;
  if (s->dev >= 0) (void)cudaSetDevice(s->dev);
  (void)cu.ctx_set(s->ctx);
  (void)cudaGetLastError();
}

ncclResult_t gs_copy(gs_mr* mr, void* dst, const void* src, size_t size, enum cudaMemcpyKind kind,
                     const char* what) {
  if (size == 0) return ncclSuccess;
  cu_saved saved;
  cudaError_t e = device_enter(mr->device, &saved);
  if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, size, kind, mr->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(mr->stream);
  if (e != cudaSuccess) (void)cudaGetLastError();
  device_leave(mr->device, &saved);
  if (e == cudaSuccess) return ncclSuccess;
  GS_WARN("NET/GdrSim: %s: copying %zu bytes %p -> %p on GPU %d failed: %s", what, size, src, dst,
          mr->device, cudaGetErrorString(e));
  return ncclUnhandledCudaError;
}

cudaError_t gs_stream_create(cudaStream_t* stream, int dev) {
  cu_saved saved;
  cudaError_t e = device_enter(dev, &saved);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) (void)cudaGetLastError();
  device_leave(dev, &saved);
  return e;
}

void gs_stream_destroy(cudaStream_t stream, int dev) {
  cu_saved saved;
  if (device_enter(dev, &saved) == cudaSuccess) (void)cudaStreamDestroy(stream);
  (void)cudaGetLastError();
  device_leave(dev, &saved);
}

enum cudaMemoryType gs_mem_type(const void* p, int* device) {
  CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned int type = 0, managed = 0;
  int ordinal = -1;
  void* data[3] = {&type, &managed, &ordinal};
  *device = -1;
  if (cu.ptr_attrs(3, attrs, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
    return cudaMemoryTypeUnregistered;
  if (managed) {
    *device = ordinal;
    return cudaMemoryTypeManaged;
  }
  if (type == CU_MEMORYTYPE_DEVICE) {
    *device = ordinal;
    return cudaMemoryTypeDevice;
  }
  return type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
}

const char* gs_mem_type_name(enum cudaMemoryType t) {
  switch (t) {
    case cudaMemoryTypeHost: return "pinned host";
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeManaged: return "managed";
    default: return "unregistered host";
  }
}
