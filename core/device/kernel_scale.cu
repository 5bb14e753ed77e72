/* The one kernel a one-rank communicator runs: dst[i] = scalar * src[i] in the datatype's own
 * arithmetic (dev_types.cuh's premul, the same rounding as the collectives' PreMulSum), for
 * the one-rank path of plan/plan_local.c. The scalar is the datatype's own bytes, or read on
 * the GPU from scalar_ptr when the op was made with ncclScalarDevice (so a captured graph reads
 * the value current at replay). dst may equal src. */
#include <cuda_runtime.h>

#include "device/dev_types.cuh"

template <int DT>
__global__ void scale_kernel(typename Ty<DT>::T* dst, const typename Ty<DT>::T* src, size_t n,
                             uint64_t scalar, const typename Ty<DT>::T* scalar_ptr) {
  typedef typename Ty<DT>::T T;
  T s;
  if (scalar_ptr) {
    s = *scalar_ptr;
  } else {
    union { uint64_t w; T e; } u;
    u.w = scalar;
    s = u.e;
  }
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = Ty<DT>::premul(src[i], s);
}

template <int DT>
static int launch_scale(void* dst, const void* src, size_t n, uint64_t scalar,
                        const void* scalar_ptr, cudaStream_t st) {
  typedef typename Ty<DT>::T T;
  const unsigned threads = 512;
  size_t blocks = (n + threads - 1) / threads;
  if (blocks > 1024) blocks = 1024; /* grid-stride beyond: enough to fill an H200 */
  if (blocks == 0) blocks = 1;
  scale_kernel<DT><<<(unsigned)blocks, threads, 0, st>>>((T*)dst, (const T*)src, n, scalar,
                                                         (const T*)scalar_ptr);
  return (int)cudaGetLastError();
}

extern "C" int weft_dev_scale(int dtype, void* dst, const void* src, size_t n, uint64_t scalar,
                              const void* scalar_ptr, void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  switch (dtype) {
    case DT_INT8: return launch_scale<DT_INT8>(dst, src, n, scalar, scalar_ptr, st);
    case DT_UINT8: return launch_scale<DT_UINT8>(dst, src, n, scalar, scalar_ptr, st);
    case DT_INT32: return launch_scale<DT_INT32>(dst, src, n, scalar, scalar_ptr, st);
    case DT_UINT32: return launch_scale<DT_UINT32>(dst, src, n, scalar, scalar_ptr, st);
    case DT_INT64: return launch_scale<DT_INT64>(dst, src, n, scalar, scalar_ptr, st);
    case DT_UINT64: return launch_scale<DT_UINT64>(dst, src, n, scalar, scalar_ptr, st);
    case DT_HALF: return launch_scale<DT_HALF>(dst, src, n, scalar, scalar_ptr, st);
    case DT_FLOAT: return launch_scale<DT_FLOAT>(dst, src, n, scalar, scalar_ptr, st);
    case DT_DOUBLE: return launch_scale<DT_DOUBLE>(dst, src, n, scalar, scalar_ptr, st);
    case DT_BF16: return launch_scale<DT_BF16>(dst, src, n, scalar, scalar_ptr, st);
    case DT_E4M3: return launch_scale<DT_E4M3>(dst, src, n, scalar, scalar_ptr, st);
    case DT_E5M2: return launch_scale<DT_E5M2>(dst, src, n, scalar, scalar_ptr, st);
    default: return (int)cudaErrorInvalidValue;
  }
}
