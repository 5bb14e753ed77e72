/* The kernels of the one-rank path (plan/plan_local.c).
 *
 * weft_dev_scale: dst[i] = scalar * src[i] in the datatype's own arithmetic (dev_types.cuh's
 * premul, the same rounding as the collectives' PreMulSum). The scalar is the datatype's own
 * bytes, or read on the GPU from scalar_ptr when the op was made with ncclScalarDevice (so a
 * captured graph reads the value current at replay). dst may equal src.
 *
 * weft_dev_copy: a plain SM copy, 16-byte loads four deep, for the cases where it beats the
 * copy engine: very large copies inside a CUDA graph, whose memcpy nodes run at ~1.4 TB/s on an
 * H200 against ~2 TB/s for this kernel, and small launched copies, where a kernel launch costs
 * less than a copy-engine one (docs/perf-notes.md). Both pointers 16-byte aligned. */
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

__global__ void copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, size_t n,
                            unsigned char* __restrict__ tdst, const unsigned char* __restrict__ tsrc,
                            unsigned tail) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) tdst[threadIdx.x] = tsrc[threadIdx.x];
}

/* Up to this many blocks a copy launches what it fills without asking the SM count: any grid
 * is correct (the loop strides over it), and one above two blocks per SM, on a GPU of fewer
 * than 32 SMs, is only slower. */
#define COPY_BLOCKS_UNCAPPED 64

extern "C" int weft_dev_copy(void* dst, const void* src, size_t bytes, void* stream) {
  size_t n = bytes / 16;
  unsigned tail = (unsigned)(bytes % 16);
  /* A small copy gets the blocks it fills (4 loads deep), a large one two per SM; the SM count
   * is asked for only then (small launched copies are on the latency path). */
  size_t want = (n + 4 * 512 - 1) / (4 * 512);
  if (want == 0) want = 1;
  if (want > COPY_BLOCKS_UNCAPPED) {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      sms = 132;
    if (want > (size_t)(2 * sms)) want = (size_t)(2 * sms);
  }
  unsigned blocks = (unsigned)want;
  copy_kernel<<<blocks, 512, 0, (cudaStream_t)stream>>>(
      (uint4*)dst, (const uint4*)src, n, (unsigned char*)dst + 16 * n,
      (const unsigned char*)src + 16 * n, tail);
  return (int)cudaGetLastError();
}
