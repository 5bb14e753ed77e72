/* See cuda_entry.h. */
#include "topo/cuda_entry.h"

#include <pthread.h>
#include <stddef.h>

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

/* The ABI every symbol weft asks for has had since CUDA 12.0 (cuMem* since 10.2, dma-buf
 * handles since 11.7): asking for 12.0 keeps the lookup valid on any driver a CUDA 12+ runtime
 * runs on. */
#define DRV_ABI_VERSION 12000

void* cuda_driver_entry(const char* name) {
  void* fn = NULL;
#if CUDART_VERSION >= 12000
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &fn, DRV_ABI_VERSION, cudaEnableDefault, &q);
#else
  cudaError_t e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q);
#endif
  int found = e == cudaSuccess && q == cudaDriverEntryPointSuccess;
#else
  cudaError_t e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault);
  int found = e == cudaSuccess;
#endif
  if (e != cudaSuccess) cudaGetLastError();
  return found ? fn : NULL;
}

static weft_cuda_drv drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void drv_load(void) {
#define LOOKUP(field, sym) *(void**)&drv.field = cuda_driver_entry(#sym)
  LOOKUP(get_error_string, cuGetErrorString);
  LOOKUP(device_get_attribute, cuDeviceGetAttribute);
  LOOKUP(address_range, cuMemGetAddressRange);
  LOOKUP(granularity, cuMemGetAllocationGranularity);
  LOOKUP(create, cuMemCreate);
  LOOKUP(release, cuMemRelease);
  LOOKUP(retain_handle, cuMemRetainAllocationHandle);
  LOOKUP(export_handle, cuMemExportToShareableHandle);
  LOOKUP(import_handle, cuMemImportFromShareableHandle);
  LOOKUP(reserve, cuMemAddressReserve);
  LOOKUP(address_free, cuMemAddressFree);
  LOOKUP(map, cuMemMap);
  LOOKUP(unmap, cuMemUnmap);
  LOOKUP(set_access, cuMemSetAccess);
  LOOKUP(range_handle, cuMemGetHandleForAddressRange);
#undef LOOKUP
}

const weft_cuda_drv* cuda_drv(void) {
  pthread_once(&drv_once, drv_load);
  return &drv;
}

const char* cuda_drv_error(CUresult r) {
  const char* text = NULL;
  const weft_cuda_drv* d = cuda_drv();
  if (!d->get_error_string || d->get_error_string(r, &text) != CUDA_SUCCESS || !text)
    return "unknown error";
  return text;
}

int cuda_alloc_range(const void* p, uintptr_t* base, size_t* bytes) {
  const weft_cuda_drv* d = cuda_drv();
  CUdeviceptr b = 0;
  size_t len = 0;
  if (!d->address_range || d->address_range(&b, &len, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
    return 0;
  *base = (uintptr_t)b;
  *bytes = len;
  return 1;
}

#else
void* cuda_driver_entry(const char* name) {
  (void)name;
  return NULL;
}

int cuda_alloc_range(const void* p, uintptr_t* base, size_t* bytes) {
  (void)p, (void)base, (void)bytes;
  return 0;
}
#endif
