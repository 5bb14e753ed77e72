/* See cuda_entry.h. */
#include "topo/cuda_entry.h"

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

int cuda_alloc_range(const void* p, uintptr_t* base, size_t* bytes) {
  typedef CUresult (*pfn_range)(CUdeviceptr*, size_t*, CUdeviceptr);
  pfn_range range = (pfn_range)cuda_driver_entry("cuMemGetAddressRange");
  CUdeviceptr b = 0;
  size_t len = 0;
  if (!range || range(&b, &len, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) return 0;
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
