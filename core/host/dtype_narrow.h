/* Conversions between float and the narrow float types (IEEE binary16, bfloat16, fp8 e4m3 and
 * e5m2), written as straight-line integer code with selects so that loops over them vectorise.
 * Private to core/host: the reduction kernels inline these; dtype_convert.c exports them.
 *
 * Rules, for every type: widening is exact (subnormals included; NaN payload bits move to the
 * top of the float payload). Narrowing rounds to nearest, ties to even, with subnormal results
 * rounded at their own precision (never twice). A NaN keeps the top payload bits that fit and
 * stays a NaN (the quiet bit is set only if nothing else would be left), so every narrow bit
 * pattern survives narrow → float → narrow unchanged. Overflow gives inf for half, bfloat16
 * and e5m2; e4m3 ("fn" flavour: no inf, NaN = S.1111.111) saturates to ±448 from any finite
 * or infinite input, as CUDA's __NV_SATFINITE conversion does.
 *
 * The subnormal paths add a power of two in float and rely on the default rounding mode
 * (round to nearest). They never produce or depend on float subnormals, so FTZ/DAZ modes do
 * not change the results of the conversions themselves. */
#ifndef WEFT_HOST_DTYPE_NARROW_H
#define WEFT_HOST_DTYPE_NARROW_H

#include <stdint.h>
#include <string.h>

/* Forced inline: GCC will not otherwise inline these into the AVX2 clones of the kernels
 * (reduce_kernels.h, RED_CLONES), and a call per element costs ten times the work. */
#if defined(__GNUC__)
#define WEFT_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define WEFT_ALWAYS_INLINE static inline
#endif

WEFT_ALWAYS_INLINE uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

WEFT_ALWAYS_INLINE float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

WEFT_ALWAYS_INLINE uint64_t f64_bits(double f) {
  uint64_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

WEFT_ALWAYS_INLINE double f64_from_bits(uint64_t u) {
  double f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* c ? a : b on 32-bit lanes, as masks: compilers keep this branch-free and vectorise it where
 * they would turn a ?: with float work on one side into a branch. c is 0 or 1. Signed lanes
 * because SSE2 compares only signed integers. */
WEFT_ALWAYS_INLINE int32_t narrow_sel(int32_t c, int32_t a, int32_t b) {
  int32_t m = -c;
  return (a & m) | (b & ~m);
}

/* ---- IEEE binary16: 1.5.10, bias 15 ---- */

WEFT_ALWAYS_INLINE float cvt_f16_to_f32(uint16_t h) {
  int32_t em = h & 0x7fff;
  int32_t normal = (em << 13) + (112 << 23); /* rebias 15 → 127 */
  int32_t sub = (int32_t)f32_bits((float)em * 0x1p-24f); /* exact: em < 2^10 */
  int32_t special = (em << 13) | 0x7f800000;             /* inf, NaN with its payload */
  int32_t r = narrow_sel(em < 0x0400, sub, normal);
  r = narrow_sel(em >= 0x7c00, special, r);
  return f32_from_bits((uint32_t)r | ((uint32_t)(h & 0x8000u) << 16));
}

WEFT_ALWAYS_INLINE uint16_t cvt_f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  int32_t ax = (int32_t)(x & 0x7fffffffu);
  /* Normal result: drop 13 bits with ties to even; a carry moves into the exponent. */
  int32_t normal = (int32_t)(((uint32_t)ax + 0xfffu + (((uint32_t)ax >> 13) & 1u) -
                              (112u << 23)) >> 13);
  /* Subnormal result: |f| < 2^-14; adding 0.5 leaves exactly the 2^-24 steps in the low bits. */
  int32_t sub = (int32_t)(f32_bits(f32_from_bits((uint32_t)ax) + 0.5f) - 0x3f000000u);
  int32_t payload = (ax >> 13) & 0x3ff;
  int32_t nan = 0x7c00 | payload | ((payload == 0) << 9);
  int32_t r = narrow_sel(ax < 0x38800000, sub, normal);
  r = narrow_sel(ax >= 0x477ff000, 0x7c00, r); /* ≥ 65520 rounds past 65504 */
  r = narrow_sel(ax > 0x7f800000, nan, r);
  return (uint16_t)((uint32_t)r | ((x >> 16) & 0x8000u));
}

/* ---- bfloat16: 1.8.7, the top half of a float ---- */

WEFT_ALWAYS_INLINE float cvt_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

WEFT_ALWAYS_INLINE uint16_t cvt_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16; /* overflow carries into inf */
  uint32_t top = x >> 16;
  uint32_t nan = top | ((uint32_t)((top & 0x7fu) == 0) << 6);
  int32_t is_nan = (x & 0x7fffffffu) > 0x7f800000u;
  return (uint16_t)narrow_sel(is_nan, (int32_t)nan, (int32_t)rounded);
}

/* ---- fp8 e4m3 (fn): 1.4.3, bias 7, no inf, NaN = S.1111.111, max ±448 ---- */

WEFT_ALWAYS_INLINE float cvt_e4m3_to_f32(uint8_t v) {
  int32_t em = v & 0x7f;
  int32_t normal = (em << 20) + (120 << 23); /* rebias 7 → 127 */
  int32_t sub = (int32_t)f32_bits((float)em * 0x1p-9f);
  int32_t r = narrow_sel(em < 0x08, sub, normal);
  r = narrow_sel(em == 0x7f, 0x7fc00000, r);
  return f32_from_bits((uint32_t)r | ((uint32_t)(v & 0x80u) << 24));
}

WEFT_ALWAYS_INLINE uint8_t cvt_f32_to_e4m3(float f) {
  uint32_t x = f32_bits(f);
  int32_t ax = (int32_t)(x & 0x7fffffffu);
  int32_t normal = (int32_t)(((uint32_t)ax + 0x7ffffu + (((uint32_t)ax >> 20) & 1u) -
                              (120u << 23)) >> 20);
  normal = narrow_sel(normal > 0x7e, 0x7e, normal); /* satfinite: everything beyond is 448 */
  /* |f| < 2^-6; 2^14 has 2^-9 (the e4m3 subnormal step) as its float ulp. */
  int32_t sub = (int32_t)(f32_bits(f32_from_bits((uint32_t)ax) + 0x1p14f) - 0x46800000u);
  int32_t r = narrow_sel(ax < 0x3c800000, sub, normal);
  r = narrow_sel(ax >= 0x7f800000, 0x7e, r); /* ±inf → ±448 */
  r = narrow_sel(ax > 0x7f800000, 0x7f, r);
  return (uint8_t)((uint32_t)r | ((x >> 24) & 0x80u));
}

/* ---- fp8 e5m2: 1.5.2, bias 15, the top byte of a binary16 ---- */

WEFT_ALWAYS_INLINE float cvt_e5m2_to_f32(uint8_t v) {
  int32_t em = v & 0x7f;
  int32_t normal = (em << 21) + (112 << 23);
  int32_t sub = (int32_t)f32_bits((float)em * 0x1p-16f);
  int32_t special = (em << 21) | 0x7f800000;
  int32_t r = narrow_sel(em < 0x04, sub, normal);
  r = narrow_sel(em >= 0x7c, special, r);
  return f32_from_bits((uint32_t)r | ((uint32_t)(v & 0x80u) << 24));
}

WEFT_ALWAYS_INLINE uint8_t cvt_f32_to_e5m2(float f) {
  uint32_t x = f32_bits(f);
  int32_t ax = (int32_t)(x & 0x7fffffffu);
  int32_t normal = (int32_t)(((uint32_t)ax + 0xfffffu + (((uint32_t)ax >> 21) & 1u) -
                              (112u << 23)) >> 21);
  /* |f| < 2^-14; 2^7 has 2^-16 (the e5m2 subnormal step) as its float ulp. */
  int32_t sub = (int32_t)(f32_bits(f32_from_bits((uint32_t)ax) + 0x1p7f) - 0x43000000u);
  int32_t payload = (ax >> 21) & 0x3;
  int32_t nan = 0x7c | payload | ((payload == 0) << 1);
  int32_t r = narrow_sel(ax < 0x38800000, sub, normal);
  r = narrow_sel(ax >= 0x47700000, 0x7c, r); /* ≥ 61440 rounds past 57344 */
  r = narrow_sel(ax > 0x7f800000, nan, r);
  return (uint8_t)((uint32_t)r | ((x >> 24) & 0x80u));
}

#endif
