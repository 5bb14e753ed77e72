/* Reference arithmetic for the reduction tests (see reduce_ref.h). */
#include "reduce_ref.h"

#include <math.h>
#include <stddef.h>

const ref_fmt REF_HALF = {"float16", 16, 10, 5, 15, 1, 0};
const ref_fmt REF_BF16 = {"bfloat16", 16, 7, 8, 127, 1, 0};
const ref_fmt REF_E4M3 = {"f8e4m3", 8, 3, 4, 7, 0, 1};
const ref_fmt REF_E5M2 = {"f8e5m2", 8, 2, 5, 15, 1, 0};
const ref_fmt REF_F32 = {"float32", 32, 23, 8, 127, 1, 0};

const ref_fmt* ref_fmt_of(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16: return &REF_HALF;
    case ncclBfloat16: return &REF_BF16;
    case ncclFloat8e4m3: return &REF_E4M3;
    case ncclFloat8e5m2: return &REF_E5M2;
    case ncclFloat32: return &REF_F32;
    default: return NULL;
  }
}

static uint32_t field_mask(int bits) { return bits >= 32 ? 0xffffffffu : (1u << bits) - 1u; }

int ref_is_nan(const ref_fmt* f, uint32_t bits) {
  uint32_t m = bits & field_mask(f->mbits);
  uint32_t e = (bits >> f->mbits) & field_mask(f->ebits);
  if (f->has_inf) return e == field_mask(f->ebits) && m != 0;
  return e == field_mask(f->ebits) && m == field_mask(f->mbits);
}

double ref_decode(const ref_fmt* f, uint32_t bits) {
  int neg = (bits >> (f->bits - 1)) & 1;
  uint32_t m = bits & field_mask(f->mbits);
  uint32_t e = (bits >> f->mbits) & field_mask(f->ebits);
  double v;
  if (ref_is_nan(f, bits)) return NAN;
  if (f->has_inf && e == field_mask(f->ebits))
    v = INFINITY;
  else if (e == 0)
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  else
    v = ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
  return neg ? -v : v;
}

double ref_max_finite(const ref_fmt* f) {
  uint32_t e = field_mask(f->ebits), m = field_mask(f->mbits);
  if (f->has_inf)
    e -= 1;
  else
    m -= 1;
  return ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
}

uint32_t ref_round(const ref_fmt* f, double v) {
  uint32_t sign = signbit(v) ? 1u << (f->bits - 1) : 0;
  uint32_t inf = field_mask(f->ebits) << f->mbits;
  if (isnan(v)) return inf | field_mask(f->mbits) | sign;
  double a = fabs(v), maxf = ref_max_finite(f);
  if (isinf(a)) {
    if (f->saturate) a = maxf;
    else return sign | inf;
  }
  if (a == 0) return sign;
  /* Quantum of the binade that holds a (or of the subnormals), then round the count of quanta. */
  int e2;
  frexp(a, &e2); /* a = frac · 2^e2, frac in [0.5, 1): leading bit at 2^(e2-1) */
  int emin = 1 - f->bias;
  int lead = e2 - 1 < emin ? emin : e2 - 1;
  int q = lead - f->mbits;
  double scaled = ldexp(a, -q);
  double n = floor(scaled), rest = scaled - n;
  if (rest > 0.5 || (rest == 0.5 && fmod(n, 2.0) != 0)) n += 1;
  double r = ldexp(n, q);
  if (r > maxf) {
    if (f->saturate) r = maxf;
    else return sign | inf;
  }
  if (r == 0) return sign;
  frexp(r, &e2);
  if (e2 - 1 < emin) return sign | (uint32_t)ldexp(r, f->bias - 1 + f->mbits);
  uint32_t e = (uint32_t)(e2 - 1 + f->bias);
  uint32_t m = (uint32_t)(ldexp(r, f->mbits - (e2 - 1)) - ldexp(1.0, f->mbits));
  return sign | (e << f->mbits) | m;
}

double ref_max(double a, double b) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  if (a > b) return a;
  if (b > a) return b;
  if (a == 0) return signbit(a) && signbit(b) ? -0.0 : 0.0;
  return a;
}

double ref_min(double a, double b) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  if (a < b) return a;
  if (b < a) return b;
  if (a == 0) return signbit(a) || signbit(b) ? -0.0 : 0.0;
  return a;
}
