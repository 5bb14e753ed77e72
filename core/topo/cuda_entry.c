/* See cuda_entry.h. */
#include "topo/cuda_entry.h"

#include <stddef.h>

#ifdef WEFT_HAVE_CUDA
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

#else
void* cuda_driver_entry(const char* name) {
  (void)name;
  return NULL;
}
#endif
