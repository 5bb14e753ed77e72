/* Data types and reduction operators weft-perf knows, with nccl-tests' names, and the host
 * conversions the checker needs for the types C has no arithmetic for (half, bfloat16, fp8):
 * a generic encoder (round to nearest, ties to even) and decoder over exponent/mantissa
 * widths, so that reference values are computed from exactly what was stored. */
#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "perf.h"

const struct perf_type perf_types[] = {
    {"int8", ncclInt8, 1, PERF_KIND_INT, 0, 0, 0},
    {"uint8", ncclUint8, 1, PERF_KIND_UINT, 0, 0, 0},
    {"int32", ncclInt32, 4, PERF_KIND_INT, 0, 0, 0},
    {"uint32", ncclUint32, 4, PERF_KIND_UINT, 0, 0, 0},
    {"int64", ncclInt64, 8, PERF_KIND_INT, 0, 0, 0},
    {"uint64", ncclUint64, 8, PERF_KIND_UINT, 0, 0, 0},
    {"half", ncclFloat16, 2, PERF_KIND_FLOAT, 5, 10, 1},
    {"float", ncclFloat32, 4, PERF_KIND_FLOAT, 8, 23, 1},
    {"double", ncclFloat64, 8, PERF_KIND_FLOAT, 11, 52, 1},
    {"bfloat16", ncclBfloat16, 2, PERF_KIND_FLOAT, 8, 7, 1},
    {"f8e4m3", ncclFloat8e4m3, 1, PERF_KIND_FLOAT, 4, 3, 0},
    {"f8e5m2", ncclFloat8e5m2, 1, PERF_KIND_FLOAT, 5, 2, 1},
};
const int perf_ntypes = (int)(sizeof perf_types / sizeof perf_types[0]);

static const struct {
  const char* alias;
  const char* name;
} type_aliases[] = {
    {"char", "int8"},      {"int", "int32"},      {"fp16", "half"},      {"float16", "half"},
    {"f16", "half"},       {"fp32", "float"},     {"float32", "float"},  {"f32", "float"},
    {"fp64", "double"},    {"float64", "double"}, {"f64", "double"},     {"bf16", "bfloat16"},
    {"fp8e4m3", "f8e4m3"}, {"e4m3", "f8e4m3"},    {"fp8e5m2", "f8e5m2"}, {"e5m2", "f8e5m2"},
};

int perf_type_find(const char* name) {
  for (size_t a = 0; a < sizeof type_aliases / sizeof type_aliases[0]; a++)
    if (!strcasecmp(name, type_aliases[a].alias)) name = type_aliases[a].name;
  for (int i = 0; i < perf_ntypes; i++)
    if (!strcasecmp(name, perf_types[i].name)) return i;
  return -1;
}

int perf_type_default(void) { return perf_type_find("float"); }

const struct perf_op perf_ops[] = {
    {"sum", PERF_OP_SUM, ncclSum}, {"prod", PERF_OP_PROD, ncclProd},
    {"max", PERF_OP_MAX, ncclMax}, {"min", PERF_OP_MIN, ncclMin},
    {"avg", PERF_OP_AVG, ncclAvg}, {"mulsum", PERF_OP_MULSUM, ncclSum},
};
const int perf_nops = (int)(sizeof perf_ops / sizeof perf_ops[0]);

int perf_op_find(const char* name) {
  for (int i = 0; i < perf_nops; i++)
    if (!strcasecmp(name, perf_ops[i].name)) return i;
  return -1;
}

uint32_t perf_float_encode(double v, int exp_bits, int mant_bits, int ieee) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t exp_all = (1u << exp_bits) - 1;
  const uint32_t sign = signbit(v) ? 1u << (exp_bits + mant_bits) : 0;
  const uint32_t nan = sign | (exp_all << mant_bits) | ((1u << mant_bits) - 1);
  if (isnan(v)) return nan;
  double a = fabs(v);
  /* Largest finite: IEEE-like formats keep the all-ones exponent for inf/NaN; e4m3 only the
   * all-ones mantissa at the all-ones exponent (NaN), so its top exponent holds numbers. */
  uint32_t top_field = ieee ? exp_all - 1 : exp_all;
  uint32_t top_mant = ieee ? (1u << mant_bits) - 1 : (1u << mant_bits) - 2;
  double maxv = ldexp(1.0 + ldexp((double)top_mant, -mant_bits), (int)top_field - bias);
  uint32_t overflow = ieee ? sign | (exp_all << mant_bits) : nan;
  if (isinf(a)) return overflow;
  if (a == 0) return sign;
  int e;
  (void)frexp(a, &e);
  int unbiased = e - 1;      /* a = 1.f * 2^unbiased */
  if (unbiased < 1 - bias) { /* subnormal: fixed quantum; m may round up into the normals */
    double m = nearbyint(ldexp(a, bias - 1 + mant_bits));
    return sign | (uint32_t)m;
  }
  double m = nearbyint(ldexp(a, mant_bits - unbiased)); /* in [2^mant, 2^(mant+1)] */
  if (m >= ldexp(1.0, mant_bits + 1)) {
    m = ldexp(m, -1);
    unbiased++;
  }
  double rounded = ldexp(m, unbiased - mant_bits);
  if (rounded > maxv) return overflow;
  uint32_t field = (uint32_t)(unbiased + bias);
  return sign | (field << mant_bits) | ((uint32_t)m - (1u << mant_bits));
}

double perf_float_decode(uint32_t bits, int exp_bits, int mant_bits, int ieee) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t exp_all = (1u << exp_bits) - 1;
  const uint32_t mant_all = (1u << mant_bits) - 1;
  uint32_t field = (bits >> mant_bits) & exp_all;
  uint32_t mant = bits & mant_all;
  double sign = (bits >> (exp_bits + mant_bits)) & 1 ? -1.0 : 1.0;
  if (field == exp_all) {
    if (ieee) return mant ? NAN : sign * INFINITY;
    if (mant == mant_all) return NAN;
  }
  if (field == 0) return sign * ldexp((double)mant, 1 - bias - mant_bits);
  return sign * ldexp(1.0 + ldexp((double)mant, -mant_bits), (int)field - bias);
}

double perf_type_eps(const struct perf_type* t) { return ldexp(1.0, -(t->mant_bits + 1)); }

void perf_store_float(const struct perf_type* t, void* buf, size_t i, double f) {
  if (t->nccl == ncclFloat32) {
    ((float*)buf)[i] = (float)f;
  } else if (t->nccl == ncclFloat64) {
    ((double*)buf)[i] = f;
  } else {
    uint32_t bits = perf_float_encode(f, t->exp_bits, t->mant_bits, t->ieee);
    if (t->size == 2) {
      uint16_t b16 = (uint16_t)bits;
      memcpy((char*)buf + i * 2, &b16, 2);
    } else {
      ((uint8_t*)buf)[i] = (uint8_t)bits;
    }
  }
}

double perf_load_float(const struct perf_type* t, const void* buf, size_t i) {
  if (t->nccl == ncclFloat32) return ((const float*)buf)[i];
  if (t->nccl == ncclFloat64) return ((const double*)buf)[i];
  uint32_t bits;
  if (t->size == 2) {
    uint16_t b16;
    memcpy(&b16, (const char*)buf + i * 2, 2);
    bits = b16;
  } else {
    bits = ((const uint8_t*)buf)[i];
  }
  return perf_float_decode(bits, t->exp_bits, t->mant_bits, t->ieee);
}

void perf_store_int(const struct perf_type* t, void* buf, size_t i, uint64_t u) {
  switch (t->size) {
    case 1: ((uint8_t*)buf)[i] = (uint8_t)u; break;
    case 4: ((uint32_t*)buf)[i] = (uint32_t)u; break;
    default: ((uint64_t*)buf)[i] = u; break;
  }
}

uint64_t perf_load_int(const struct perf_type* t, const void* buf, size_t i) {
  switch (t->size) {
    case 1: return ((const uint8_t*)buf)[i];
    case 4: return ((const uint32_t*)buf)[i];
    default: return ((const uint64_t*)buf)[i];
  }
}
