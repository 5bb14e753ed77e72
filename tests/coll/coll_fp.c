/* Number formats for the correctness matrix (see coll_fp.h). One generic encoder and decoder
 * handle every narrow float format from its exponent and fraction widths; float and double go
 * through C's own conversions (round to nearest even in the default rounding mode). */
#include "coll_fp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A narrow binary float format: ebits exponent bits, mbits fraction bits, bias 2^(ebits-1)-1.
 * ieee: the all-ones exponent means inf (fraction 0) or NaN; otherwise (e4m3) only all-ones
 * exponent with all-ones fraction is NaN and the format has no infinity (overflow saturates). */
typedef struct {
  int ebits, mbits, ieee;
} fp_format;

static const fp_format FMT_HALF = {5, 10, 1};
static const fp_format FMT_BF16 = {8, 7, 1};
static const fp_format FMT_E4M3 = {4, 3, 0};
static const fp_format FMT_E5M2 = {5, 2, 1};

double fp_pow2(int k) {
  if (k < -1022) k = -1022;
  if (k > 1023) k = 1023;
  uint64_t b = (uint64_t)(k + 1023) << 52;
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

static uint32_t fmt_encode(const fp_format* f, double x) {
  const uint32_t expmask = (1u << f->ebits) - 1, mantmask = (1u << f->mbits) - 1;
  const uint32_t sign = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
  const uint32_t maxfinite = f->ieee ? ((expmask - 1) << f->mbits) | mantmask
                                     : (expmask << f->mbits) | (mantmask - 1);
  const uint32_t inf = expmask << f->mbits;
  if (isnan(x)) return f->ieee ? sign | inf | (1u << (f->mbits - 1)) : sign | (expmask << f->mbits) | mantmask;
  if (isinf(x)) return sign | (f->ieee ? inf : maxfinite);

  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  int bexp = (int)((bits >> 52) & 0x7ff);
  if (bexp == 0) return sign; /* zero, or a double subnormal: far below any target's spacing */
  uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52); /* x = m * 2^(e-52) */
  int e = bexp - 1023;
  int bias = (1 << (f->ebits - 1)) - 1, emin = 1 - bias;
  int eq = e > emin ? e : emin;  /* the binade whose spacing applies (subnormals: emin) */
  int q = eq - f->mbits;         /* spacing 2^q */
  int shift = 52 + q - e;        /* units of 2^q = m >> shift, before rounding */
  if (shift >= 54) return sign;  /* below half the smallest subnormal */
  uint64_t units = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (units & 1))) units++;
  /* units in [2^mbits, 2^(mbits+1)] for normals, [0, 2^mbits] for subnormals; a carry into the
   * next binade falls out of the addition. */
  uint64_t enc = units + ((uint64_t)(eq - emin) << f->mbits);
  if (enc > maxfinite) enc = f->ieee ? inf : maxfinite;
  return sign | (uint32_t)enc;
}

static double fmt_decode(const fp_format* f, uint32_t v) {
  const uint32_t expmask = (1u << f->ebits) - 1, mantmask = (1u << f->mbits) - 1;
  int neg = (v >> (f->ebits + f->mbits)) & 1;
  uint32_t be = (v >> f->mbits) & expmask, m = v & mantmask;
  int bias = (1 << (f->ebits - 1)) - 1;
  double r;
  if (f->ieee && be == expmask)
    r = m ? NAN : INFINITY;
  else if (!f->ieee && be == expmask && m == mantmask)
    r = NAN;
  else if (be == 0)
    r = (double)m * fp_pow2(1 - bias - f->mbits);
  else
    r = (double)((1u << f->mbits) | m) * fp_pow2((int)be - bias - f->mbits);
  return neg ? -r : r;
}

uint16_t fp_to_half(double x) { return (uint16_t)fmt_encode(&FMT_HALF, x); }
uint16_t fp_to_bf16(double x) { return (uint16_t)fmt_encode(&FMT_BF16, x); }
uint8_t fp_to_e4m3(double x) { return (uint8_t)fmt_encode(&FMT_E4M3, x); }
uint8_t fp_to_e5m2(double x) { return (uint8_t)fmt_encode(&FMT_E5M2, x); }
double fp_from_half(uint16_t v) { return fmt_decode(&FMT_HALF, v); }
double fp_from_bf16(uint16_t v) { return fmt_decode(&FMT_BF16, v); }
double fp_from_e4m3(uint8_t v) { return fmt_decode(&FMT_E4M3, v); }
double fp_from_e5m2(uint8_t v) { return fmt_decode(&FMT_E5M2, v); }

int fp_is_float(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 ||
         t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

int fp_is_signed_int(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

size_t fp_type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

int fp_mant_bits(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return 10;
    case ncclFloat32: return 23;
    case ncclFloat64: return 52;
    case ncclBfloat16: return 7;
    case ncclFloat8e4m3: return 3;
    case ncclFloat8e5m2: return 2;
    default: return 0;
  }
}

static int exp_bits(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return 5;
    case ncclFloat32: return 8;
    case ncclFloat64: return 11;
    case ncclBfloat16: return 8;
    case ncclFloat8e4m3: return 4;
    case ncclFloat8e5m2: return 5;
    default: return 0;
  }
}

double fp_unit_roundoff(ncclDataType_t t) { return fp_pow2(-(fp_mant_bits(t) + 1)); }

double fp_ulp(ncclDataType_t t, double mag) {
  int emin = 2 - (1 << (exp_bits(t) - 1)); /* 1 - bias */
  int e = emin;
  if (mag > 0 && isfinite(mag)) {
    uint64_t bits;
    memcpy(&bits, &mag, sizeof bits);
    int be = (int)((bits >> 52) & 0x7ff);
    if (be != 0 && be - 1023 > emin) e = be - 1023;
  }
  if (!isfinite(mag)) return INFINITY;
  return fp_pow2(e - fp_mant_bits(t));
}

/* Decoding tables of the narrow types, filled on first use (the harness is single-threaded
 * where it decodes). */
const double* fp_decode_table(ncclDataType_t t) {
  if (t != ncclFloat16 && t != ncclBfloat16 && t != ncclFloat8e4m3 && t != ncclFloat8e5m2)
    return NULL;
  static double *half, *bf16, *e4m3, *e5m2;
  double** slot = t == ncclFloat16 ? &half : t == ncclBfloat16 ? &bf16 : t == ncclFloat8e4m3 ? &e4m3 : &e5m2;
  if (*slot) return *slot;
  unsigned n = fp_type_size(t) == 1 ? 256 : 65536;
  double* tab = malloc(n * sizeof *tab);
  if (!tab) abort();
  for (unsigned v = 0; v < n; v++)
    tab[v] = t == ncclFloat16     ? fp_from_half((uint16_t)v)
             : t == ncclBfloat16  ? fp_from_bf16((uint16_t)v)
             : t == ncclFloat8e4m3 ? fp_from_e4m3((uint8_t)v)
                                   : fp_from_e5m2((uint8_t)v);
  return *slot = tab;
}

double fp_decode(ncclDataType_t t, uint64_t bits) {
  switch (t) {
    case ncclFloat16:
    case ncclBfloat16: return fp_decode_table(t)[(uint16_t)bits];
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return fp_decode_table(t)[(uint8_t)bits];
    case ncclFloat32: {
      uint32_t b = (uint32_t)bits;
      float f;
      memcpy(&f, &b, sizeof f);
      return f;
    }
    case ncclFloat64: {
      double d;
      memcpy(&d, &bits, sizeof d);
      return d;
    }
    default: return NAN;
  }
}

uint64_t fp_encode(ncclDataType_t t, double x) {
  switch (t) {
    case ncclFloat16: return fp_to_half(x);
    case ncclBfloat16: return fp_to_bf16(x);
    case ncclFloat8e4m3: return fp_to_e4m3(x);
    case ncclFloat8e5m2: return fp_to_e5m2(x);
    case ncclFloat32: {
      float f = (float)x;
      uint32_t b;
      memcpy(&b, &f, sizeof b);
      return b;
    }
    case ncclFloat64: {
      uint64_t b;
      memcpy(&b, &x, sizeof b);
      return b;
    }
    default: return 0;
  }
}
