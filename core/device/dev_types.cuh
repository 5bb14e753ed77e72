/* Element arithmetic of the kernels, per datatype and reduction, with the semantics of
 * host/reduce.h (the host executor's reference): integers wrap, float and double compute in
 * their own type, narrow floats (half, bfloat16, fp8) widen to float, combine once and round
 * back to nearest-even; e4m3 saturates to ±448, e5m2 overflows to inf, as on the host.
 * Max/Min ignore a NaN operand (fmaxf/fminf). */
#ifndef WEFT_DEVICE_DEV_TYPES_CUH
#define WEFT_DEVICE_DEV_TYPES_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "device/device.h"

/* ncclDataType_t values (nccl.h), repeated for device code. */
enum {
  DT_INT8 = 0, DT_UINT8 = 1, DT_INT32 = 2, DT_UINT32 = 3, DT_INT64 = 4, DT_UINT64 = 5,
  DT_HALF = 6, DT_FLOAT = 7, DT_DOUBLE = 8, DT_BF16 = 9, DT_E4M3 = 10, DT_E5M2 = 11
};
/* Combining operators; PreMulSum and SumPostDiv are Sum plus a pre or post step. */
enum { OP_SUM = 0, OP_PROD = 1, OP_MAX = 2, OP_MIN = 3 };

template <int DT> struct Ty;

/* Integers: storage type S, arithmetic in the unsigned type U so overflow wraps. */
template <typename S, typename U> struct IntTy {
  typedef S T;
  static __device__ __forceinline__ T sum(T a, T b) { return (T)(U)((U)a + (U)b); }
  static __device__ __forceinline__ T prod(T a, T b) { return (T)(U)((U)a * (U)b); }
  static __device__ __forceinline__ T max(T a, T b) { return a > b ? a : b; }
  static __device__ __forceinline__ T min(T a, T b) { return a < b ? a : b; }
  static __device__ __forceinline__ T premul(T x, T s) { return prod(x, s); }
  static __device__ __forceinline__ T postdiv(T x, int n) { return (T)(x / (T)n); }
};
template <> struct Ty<DT_INT8> : IntTy<int8_t, uint8_t> {};
template <> struct Ty<DT_UINT8> : IntTy<uint8_t, uint8_t> {};
template <> struct Ty<DT_INT32> : IntTy<int32_t, uint32_t> {};
template <> struct Ty<DT_UINT32> : IntTy<uint32_t, uint32_t> {};
template <> struct Ty<DT_INT64> : IntTy<int64_t, uint64_t> {};
template <> struct Ty<DT_UINT64> : IntTy<uint64_t, uint64_t> {};

/* float and double: IEEE operations in the type. */
template <typename S> struct WideTy {
  typedef S T;
  static __device__ __forceinline__ T sum(T a, T b) { return a + b; }
  static __device__ __forceinline__ T prod(T a, T b) { return a * b; }
  static __device__ __forceinline__ T max(T a, T b) { return fmax(a, b); }
  static __device__ __forceinline__ T min(T a, T b) { return fmin(a, b); }
  static __device__ __forceinline__ T premul(T x, T s) { return x * s; }
  static __device__ __forceinline__ T postdiv(T x, int n) { return x / (T)n; }
};
template <> struct Ty<DT_FLOAT> : WideTy<float> {};
template <> struct Ty<DT_DOUBLE> : WideTy<double> {};

/* Narrow floats: raw storage, widened to float for one operation and rounded back. */
template <typename R, typename Conv> struct NarrowTy {
  typedef R T;
  static __device__ __forceinline__ T sum(T a, T b) { return Conv::to(Conv::from(a) + Conv::from(b)); }
  static __device__ __forceinline__ T prod(T a, T b) { return Conv::to(Conv::from(a) * Conv::from(b)); }
  static __device__ __forceinline__ T max(T a, T b) { return Conv::to(fmaxf(Conv::from(a), Conv::from(b))); }
  static __device__ __forceinline__ T min(T a, T b) { return Conv::to(fminf(Conv::from(a), Conv::from(b))); }
  static __device__ __forceinline__ T premul(T x, T s) { return prod(x, s); }
  static __device__ __forceinline__ T postdiv(T x, int n) { return Conv::to(Conv::from(x) / (float)n); }
};
struct HalfConv {
  static __device__ __forceinline__ float from(uint16_t v) { return __half2float(__ushort_as_half(v)); }
  static __device__ __forceinline__ uint16_t to(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
struct Bf16Conv {
  static __device__ __forceinline__ float from(uint16_t v) {
    return __bfloat162float(__ushort_as_bfloat16(v));
  }
  static __device__ __forceinline__ uint16_t to(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
};
template <__nv_fp8_interpretation_t K, __nv_saturation_t SAT> struct Fp8Conv {
  static __device__ __forceinline__ float from(uint8_t v) {
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)v, K);
    return __half2float(__half(h));
  }
  static __device__ __forceinline__ uint8_t to(float f) {
    return (uint8_t)__nv_cvt_float_to_fp8(f, SAT, K);
  }
};
template <> struct Ty<DT_HALF> : NarrowTy<uint16_t, HalfConv> {};
template <> struct Ty<DT_BF16> : NarrowTy<uint16_t, Bf16Conv> {};
template <> struct Ty<DT_E4M3> : NarrowTy<uint8_t, Fp8Conv<__NV_E4M3, __NV_SATFINITE> > {};
template <> struct Ty<DT_E5M2> : NarrowTy<uint8_t, Fp8Conv<__NV_E5M2, __NV_NOSAT> > {};

template <int DT, int OP>
static __device__ __forceinline__ typename Ty<DT>::T combine(typename Ty<DT>::T a,
                                                             typename Ty<DT>::T b) {
  if (OP == OP_SUM) return Ty<DT>::sum(a, b);
  if (OP == OP_PROD) return Ty<DT>::prod(a, b);
  if (OP == OP_MAX) return Ty<DT>::max(a, b);
  return Ty<DT>::min(a, b);
}

/* 8-byte words holding 8 / sizeof(T) elements: the unit of LL lines and of Simple packs
 * (a 16-byte pack is two words). */
template <int DT, int OP>
static __device__ __forceinline__ uint64_t combine_word(uint64_t a, uint64_t b) {
  typedef typename Ty<DT>::T T;
  union { uint64_t w; T e[8 / sizeof(T)]; } x, y;
  x.w = a;
  y.w = b;
#pragma unroll
  for (int i = 0; i < (int)(8 / sizeof(T)); i++) x.e[i] = combine<DT, OP>(x.e[i], y.e[i]);
  return x.w;
}

template <int DT>
static __device__ __forceinline__ uint64_t premul_word(uint64_t a, typename Ty<DT>::T s) {
  typedef typename Ty<DT>::T T;
  union { uint64_t w; T e[8 / sizeof(T)]; } x;
  x.w = a;
#pragma unroll
  for (int i = 0; i < (int)(8 / sizeof(T)); i++) x.e[i] = Ty<DT>::premul(x.e[i], s);
  return x.w;
}

template <int DT>
static __device__ __forceinline__ uint64_t postdiv_word(uint64_t a, int n) {
  typedef typename Ty<DT>::T T;
  union { uint64_t w; T e[8 / sizeof(T)]; } x;
  x.w = a;
#pragma unroll
  for (int i = 0; i < (int)(8 / sizeof(T)); i++) x.e[i] = Ty<DT>::postdiv(x.e[i], n);
  return x.w;
}

#endif
