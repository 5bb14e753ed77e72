/* Narrow float conversions (core/host/dtype_convert.c) against an independent reference
 * (reduce_ref.c: frexp/ldexp in double): every bit pattern widens exactly and round-trips;
 * narrowing matches the reference for a stride through all floats, every midpoint between
 * neighbours (ties to even), the floats next to each midpoint, overflow and subnormal edges,
 * and random floats. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host/reduce.h"
#include "reduce_ref.h"
#include "testutil.h"

typedef struct {
  const ref_fmt* fmt;
  float (*widen)(uint32_t);
  uint32_t (*narrow)(float);
} conv;

static float w_half(uint32_t b) { return half_to_float((uint16_t)b); }
static uint32_t n_half(float f) { return float_to_half(f); }
static float w_bf16(uint32_t b) { return bf16_to_float((uint16_t)b); }
static uint32_t n_bf16(float f) { return float_to_bf16(f); }
static float w_e4m3(uint32_t b) { return fp8e4m3_to_float((uint8_t)b); }
static uint32_t n_e4m3(float f) { return float_to_fp8e4m3(f); }
static float w_e5m2(uint32_t b) { return fp8e5m2_to_float((uint8_t)b); }
static uint32_t n_e5m2(float f) { return float_to_fp8e5m2(f); }

static float f_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static long checked;

/* One narrowing against the reference; NaN results only need to be NaN with the input's sign
 * ignored. */
static void check_narrow(const conv* c, float f) {
  uint32_t got = c->narrow(f), want = ref_round(c->fmt, (double)f);
  checked++;
  if (isnan(f)) {
    if (!ref_is_nan(c->fmt, got)) {
      fprintf(stderr, "%s: narrow(NaN 0x%08x) = 0x%x, not a NaN\n", c->fmt->name, f_bits(f),
              got);
      exit(1);
    }
    return;
  }
  if (got != want) {
    fprintf(stderr, "%s: narrow(%a = 0x%08x) = 0x%x, reference 0x%x\n", c->fmt->name, (double)f,
            f_bits(f), got, want);
    exit(1);
  }
}

static void test_patterns(const conv* c) {
  uint32_t n = 1u << c->fmt->bits;
  for (uint32_t p = 0; p < n; p++) {
    float f = c->widen(p);
    double ref = ref_decode(c->fmt, p);
    if (isnan(ref)) {
      EXPECT(isnan(f));
    } else if ((double)f != ref || !signbit(f) != !signbit(ref)) {
      fprintf(stderr, "%s: widen(0x%x) = %a, reference %a\n", c->fmt->name, p, (double)f, ref);
      exit(1);
    }
    /* Every pattern, NaN payloads included, survives the round trip bit for bit. */
    if (c->narrow(f) != p) {
      fprintf(stderr, "%s: 0x%x → %a → 0x%x\n", c->fmt->name, p, (double)f, c->narrow(f));
      exit(1);
    }
  }
}

/* Ties and their neighbours: the midpoint between every pair of adjacent finite values
 * (exact in float), one float either side of it, and the same past the largest value. */
static void test_midpoints(const conv* c) {
  uint32_t n = 1u << (c->fmt->bits - 1); /* positive patterns; the sign is symmetric */
  for (uint32_t p = 0; p + 1 < n; p++) {
    double lo = ref_decode(c->fmt, p), hi = ref_decode(c->fmt, p + 1);
    if (isnan(lo) || isnan(hi) || isinf(hi)) continue;
    float mid = (float)((lo + hi) / 2);
    EXPECT((double)mid == (lo + hi) / 2);
    float around[] = {mid, nextafterf(mid, 0), nextafterf(mid, INFINITY)};
    for (int i = 0; i < 3; i++) {
      check_narrow(c, around[i]);
      check_narrow(c, -around[i]);
    }
  }
  /* Overflow: half an ulp past the largest value, and around it. */
  double maxf = ref_max_finite(c->fmt);
  double ulp = maxf - ref_decode(c->fmt, ref_round(c->fmt, maxf) - 1);
  float edge[] = {(float)maxf, (float)(maxf + ulp / 2), (float)(maxf + ulp), (float)(2 * maxf),
                  FLT_MAX, INFINITY, f_from_bits(0x7f800001u), NAN};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    float e = edge[i];
    check_narrow(c, e);
    check_narrow(c, -e);
    if (!isinf(e) && !isnan(e)) {
      check_narrow(c, nextafterf(e, 0));
      check_narrow(c, nextafterf(e, INFINITY));
    }
  }
  /* Float subnormals and the smallest narrow subnormal's neighbourhood. */
  float tiny[] = {0.0f, f_from_bits(1), f_from_bits(0x007fffffu), FLT_MIN,
                  (float)ref_decode(c->fmt, 1), (float)ref_decode(c->fmt, 1) / 2};
  for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
    check_narrow(c, tiny[i]);
    check_narrow(c, -tiny[i]);
    check_narrow(c, nextafterf(tiny[i], 0));
    check_narrow(c, nextafterf(tiny[i], INFINITY));
  }
}

static void test_floats(const conv* c, uint64_t* rng) {
  /* A stride through every float bit pattern (the stride is odd, so all exponents and low
   * mantissa bits are visited). */
  for (uint64_t u = 0; u < (1ull << 32); u += 1021) check_narrow(c, f_from_bits((uint32_t)u));
  /* Random floats near the format's range, where rounding does real work. */
  int emin = 1 - c->fmt->bias - c->fmt->mbits - 3;
  int emax = ilogb(ref_max_finite(c->fmt)) + 2;
  for (int i = 0; i < 1000000; i++) {
    uint64_t r = test_rand(rng);
    int e = emin + (int)(r % (uint64_t)(emax - emin + 1));
    float f = ldexpf(1.0f + (float)((r >> 16) & 0x7fffff) / 8388608.0f, e);
    if (r & (1ull << 60)) f = -f;
    check_narrow(c, f);
  }
}

int main(void) {
  test_require_weft_lib();
  uint64_t rng = test_seed(0x5eed1);
  const conv convs[] = {
    {&REF_HALF, w_half, n_half},
    {&REF_BF16, w_bf16, n_bf16},
    {&REF_E4M3, w_e4m3, n_e4m3},
    {&REF_E5M2, w_e5m2, n_e5m2},
  };
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
    checked = 0;
    test_patterns(&convs[i]);
    test_midpoints(&convs[i]);
    test_floats(&convs[i], &rng);
    printf("%s: all %u patterns widen and round-trip; %ld narrowings match the reference\n",
           convs[i].fmt->name, 1u << convs[i].fmt->bits, checked);
  }

  /* Spot values that pin the documented rules. */
  EXPECT_EQ_INT(float_to_fp8e4m3(448.0f), 0x7e);
  EXPECT_EQ_INT(float_to_fp8e4m3(464.0f), 0x7e);      /* tie between 448 and (NaN) 480 */
  EXPECT_EQ_INT(float_to_fp8e4m3(1e9f), 0x7e);        /* satfinite */
  EXPECT_EQ_INT(float_to_fp8e4m3(-INFINITY), 0xfe);   /* ±inf → ±448 */
  EXPECT_EQ_INT(float_to_fp8e4m3(NAN) & 0x7f, 0x7f);
  EXPECT_EQ_INT(float_to_fp8e5m2(57344.0f), 0x7b);
  EXPECT_EQ_INT(float_to_fp8e5m2(61440.0f), 0x7c);    /* tie rounds to even: inf */
  EXPECT_EQ_INT(float_to_fp8e5m2(61439.0f), 0x7b);
  EXPECT_EQ_INT(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ_INT(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ_INT(float_to_half(0x1p-25f), 0x0000);     /* tie to even: 0 */
  EXPECT_EQ_INT(float_to_half(0x1.8p-25f), 0x0001);
  EXPECT_EQ_INT(float_to_half(0x1.8p-24f), 0x0002);   /* tie 1.5 ulp → 2 */
  EXPECT_EQ_INT(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ_INT(float_to_bf16(0x1.008p0f), 0x3f80);   /* tie to even, down */
  EXPECT_EQ_INT(float_to_bf16(0x1.03p0f), 0x3f82);   /* tie to even, up */
  EXPECT_EQ_INT(float_to_bf16(FLT_MAX), 0x7f80);
  EXPECT(isnan(bf16_to_float(float_to_bf16(f_from_bits(0x7f800001u))))); /* low payload */
  EXPECT(isnan(half_to_float(float_to_half(f_from_bits(0xff800001u)))));
  return 0;
}
