/* Reduction kernels for the narrow float types (half, bfloat16, fp8 e4m3 and e5m2): each
 * operand is widened to float exactly, the operation runs in float, and the result is rounded
 * back to the type (dtype_narrow.h) — once per operation, as a GPU kernel does. For a single
 * add or multiply, float carries at least twice the narrow precision plus two bits, so this
 * equals rounding the exact result directly. Max/Min pick one operand, unchanged.
 *
 * fp8 has only 256 values, so its kernels look results up instead of converting: one 64 KiB
 * table per type and binary op, filled on first use from the same element functions, and a
 * 256-entry table per call for the PreMulSum product and the SumPostDiv quotient (when the
 * call is long enough to pay for it). Lookups run several times faster than the conversions
 * and give the same bits by construction. */
#include <math.h>
#include <pthread.h>

#include "host/reduce.h"
#include "host/reduce_kernels.h"

/* The conversion loops are compute-bound with SSE2: build them for AVX2 as well. */
#undef RED_ATTR
#define RED_ATTR RED_CLONES

#define NARROW_ADD(x, y) ((x) + (y))
#define NARROW_MUL(x, y) ((x) * (y))

/* SumPostDiv (never produced by redop_from_builtin for float types, but defined): the quotient
 * is computed in double, where every int divisor is exact, then narrowed through float rounded
 * to odd, which keeps the sticky information a second rounding needs; the result is the exact
 * quotient correctly rounded to the type. */
WEFT_ALWAYS_INLINE float f64_to_f32_odd(double d) {
  float f = (float)d; /* |d| never exceeds the narrow maximum here: no overflow */
  uint32_t u = f32_bits(f);
  if ((double)f != d) {
    if (fabs((double)f) > fabs(d)) u -= 1; /* step back to the truncated neighbour */
    u |= 1;
  }
  return f32_from_bits(u);
}
WEFT_ALWAYS_INLINE uint16_t f16_quot(uint16_t x, int nd) {
  return cvt_f32_to_f16(f64_to_f32_odd((double)cvt_f16_to_f32(x) / nd));
}
WEFT_ALWAYS_INLINE uint16_t bf16_quot(uint16_t x, int nd) {
  return cvt_f32_to_bf16(f64_to_f32_odd((double)cvt_bf16_to_f32(x) / nd));
}
WEFT_ALWAYS_INLINE uint8_t e4m3_quot(uint8_t x, int nd) {
  return cvt_f32_to_e4m3(f64_to_f32_odd((double)cvt_e4m3_to_f32(x) / nd));
}
WEFT_ALWAYS_INLINE uint8_t e5m2_quot(uint8_t x, int nd) {
  return cvt_f32_to_e5m2(f64_to_f32_odd((double)cvt_e5m2_to_f32(x) / nd));
}

RED_DEFINE_FAMILY(f16, uint16_t, float, cvt_f16_to_f32, cvt_f32_to_f16, NARROW_ADD, NARROW_MUL,
                  red_max_f32, red_min_f32, f16_quot);
RED_DEFINE_FAMILY(bf16, uint16_t, float, cvt_bf16_to_f32, cvt_f32_to_bf16, NARROW_ADD,
                  NARROW_MUL, red_max_f32, red_min_f32, bf16_quot);
RED_DEFINE_FAMILY(e4m3c, uint8_t, float, cvt_e4m3_to_f32, cvt_f32_to_e4m3, NARROW_ADD,
                  NARROW_MUL, red_max_f32, red_min_f32, e4m3_quot);
RED_DEFINE_FAMILY(e5m2c, uint8_t, float, cvt_e5m2_to_f32, cvt_f32_to_e5m2, NARROW_ADD,
                  NARROW_MUL, red_max_f32, red_min_f32, e5m2_quot);

/* ---- fp8 lookup kernels ---- */

typedef uint8_t fp8_pairs[256][256]; /* [a][b] = a ⊕ b */

/* Below this many elements a per-call 256-entry table costs more than it saves. */
#define FP8_UNARY_TABLE_MIN 1024

static void fp8_pair_bin(const fp8_pairs* t, uint8_t* restrict d, const uint8_t* restrict a,
                         const uint8_t* restrict b, size_t n) {
  for (size_t k = 0; k < n; k++) d[k] = (*t)[a[k]][b[k]];
}

static void fp8_pair_acc(const fp8_pairs* t, uint8_t* restrict d, const uint8_t* restrict b,
                         size_t n) {
  for (size_t k = 0; k < n; k++) d[k] = (*t)[d[k]][b[k]];
}

static void fp8_unary(const uint8_t* t, uint8_t* restrict d, const uint8_t* restrict a,
                      size_t n) {
  for (size_t k = 0; k < n; k++) d[k] = t[a[k]];
}

static void fp8_unary_ip(const uint8_t* t, uint8_t* restrict d, size_t n) {
  for (size_t k = 0; k < n; k++) d[k] = t[d[k]];
}

/* d = sum[a][pre[b]], and the two aliased forms. */
static void fp8_fma(const fp8_pairs* sum, const uint8_t* pre, uint8_t* restrict d,
                    const uint8_t* restrict a, const uint8_t* restrict b, size_t n) {
  for (size_t k = 0; k < n; k++) d[k] = (*sum)[a[k]][pre[b[k]]];
}

static void fp8_fma_acc(const fp8_pairs* sum, const uint8_t* pre, uint8_t* restrict d,
                        const uint8_t* restrict b, size_t n) {
  for (size_t k = 0; k < n; k++) d[k] = (*sum)[d[k]][pre[b[k]]];
}

static void fp8_fma_rev(const fp8_pairs* sum, const uint8_t* pre, uint8_t* restrict d,
                        const uint8_t* restrict a, size_t n) {
  for (size_t k = 0; k < n; k++) d[k] = (*sum)[a[k]][pre[d[k]]];
}

/* The lookup kernels of one fp8 type F, built on its compute family F##c. */
#define FP8_DEFINE_TABLE_KERNELS(F)                                                        \
  static fp8_pairs F##_pairs[RED_NBIN];                                                    \
  static pthread_once_t F##_pairs_once = PTHREAD_ONCE_INIT;                                \
  static void F##_pairs_build(void) {                                                      \
    for (unsigned x = 0; x < 256; x++)                                                     \
      for (unsigned y = 0; y < 256; y++) {                                                 \
        F##_pairs[RED_BIN_SUM][x][y] = F##c_sum((uint8_t)x, (uint8_t)y);                   \
        F##_pairs[RED_BIN_PROD][x][y] = F##c_prod((uint8_t)x, (uint8_t)y);                 \
        F##_pairs[RED_BIN_MAX][x][y] = F##c_max((uint8_t)x, (uint8_t)y);                   \
        F##_pairs[RED_BIN_MIN][x][y] = F##c_min((uint8_t)x, (uint8_t)y);                   \
      }                                                                                    \
  }                                                                                        \
  static const fp8_pairs* F##_table(int op) {                                              \
    pthread_once(&F##_pairs_once, F##_pairs_build);                                        \
    return &F##_pairs[op];                                                                 \
  }                                                                                        \
  static void F##_pre_table(const void* s, uint8_t* t) {                                   \
    float sc = F##c_scalar(s);                                                             \
    for (unsigned x = 0; x < 256; x++) t[x] = F##c_pre(sc, (uint8_t)x);                    \
  }                                                                                        \
  FP8_DEFINE_BIN(F, sum, RED_BIN_SUM)                                                      \
  FP8_DEFINE_BIN(F, prod, RED_BIN_PROD)                                                    \
  FP8_DEFINE_BIN(F, max, RED_BIN_MAX)                                                      \
  FP8_DEFINE_BIN(F, min, RED_BIN_MIN)                                                      \
  static void F##_scale(void* d, const void* a, const void* s, size_t n) {                 \
    if (n < FP8_UNARY_TABLE_MIN) {                                                         \
      red_kernels_##F##c.scale(d, a, s, n);                                                \
      return;                                                                              \
    }                                                                                      \
    uint8_t t[256];                                                                        \
    F##_pre_table(s, t);                                                                   \
    fp8_unary(t, d, a, n);                                                                 \
  }                                                                                        \
  static void F##_scale_ip(void* d, const void* s, size_t n) {                             \
    if (n < FP8_UNARY_TABLE_MIN) {                                                         \
      red_kernels_##F##c.scale_ip(d, s, n);                                                \
      return;                                                                              \
    }                                                                                      \
    uint8_t t[256];                                                                        \
    F##_pre_table(s, t);                                                                   \
    fp8_unary_ip(t, d, n);                                                                 \
  }                                                                                        \
  static void F##_fmav(void* d, const void* a, const void* b, const void* s, size_t n) {   \
    uint8_t t[256];                                                                        \
    F##_pre_table(s, t);                                                                   \
    fp8_fma(F##_table(RED_BIN_SUM), t, d, a, b, n);                                        \
  }                                                                                        \
  static void F##_fma_acc(void* d, const void* b, const void* s, size_t n) {               \
    uint8_t t[256];                                                                        \
    F##_pre_table(s, t);                                                                   \
    fp8_fma_acc(F##_table(RED_BIN_SUM), t, d, b, n);                                       \
  }                                                                                        \
  static void F##_fma_rev(void* d, const void* a, const void* s, size_t n) {               \
    uint8_t t[256];                                                                        \
    F##_pre_table(s, t);                                                                   \
    fp8_fma_rev(F##_table(RED_BIN_SUM), t, d, a, n);                                       \
  }                                                                                        \
  static void F##_div(void* d, const void* a, int nd, size_t n) {                          \
    if (n < FP8_UNARY_TABLE_MIN) {                                                         \
      red_kernels_##F##c.div(d, a, nd, n);                                                 \
      return;                                                                              \
    }                                                                                      \
    uint8_t t[256];                                                                        \
    for (unsigned x = 0; x < 256; x++) t[x] = F##_quot((uint8_t)x, nd);                    \
    fp8_unary(t, d, a, n);                                                                 \
  }                                                                                        \
  static void F##_div_ip(void* d, int nd, size_t n) {                                      \
    if (n < FP8_UNARY_TABLE_MIN) {                                                         \
      red_kernels_##F##c.div_ip(d, nd, n);                                                 \
      return;                                                                              \
    }                                                                                      \
    uint8_t t[256];                                                                        \
    for (unsigned x = 0; x < 256; x++) t[x] = F##_quot((uint8_t)x, nd);                    \
    fp8_unary_ip(t, d, n);                                                                 \
  }                                                                                        \
  const red_kernels red_kernels_##F = {                                                    \
    .bin = {F##_bin_sum, F##_bin_prod, F##_bin_max, F##_bin_min},                          \
    .acc = {F##_acc_sum, F##_acc_prod, F##_acc_max, F##_acc_min},                          \
    .scale = F##_scale,                                                                    \
    .scale_ip = F##_scale_ip,                                                              \
    .fma = F##_fmav,                                                                       \
    .fma_acc = F##_fma_acc,                                                                \
    .fma_rev = F##_fma_rev,                                                                \
    .div = F##_div,                                                                        \
    .div_ip = F##_div_ip,                                                                  \
  }

#define FP8_DEFINE_BIN(F, OP, IDX)                                                         \
  static void F##_bin_##OP(void* d, const void* a, const void* b, size_t n) {              \
    fp8_pair_bin(F##_table(IDX), d, a, b, n);                                              \
  }                                                                                        \
  static void F##_acc_##OP(void* d, const void* b, size_t n) {                             \
    fp8_pair_acc(F##_table(IDX), d, b, n);                                                 \
  }

FP8_DEFINE_TABLE_KERNELS(e4m3);
FP8_DEFINE_TABLE_KERNELS(e5m2);
