/* Reference arithmetic for the reduction tests, computed a different way from core/host: the
 * narrow float formats are described by their field widths and decoded/rounded with
 * frexp/ldexp/floor in double, element values are carried as double or 64-bit integers. */
#ifndef WEFT_TESTS_REDUCE_REF_H
#define WEFT_TESTS_REDUCE_REF_H

#include <stdint.h>

#include "nccl.h"

typedef struct {
  const char* name;
  int bits;      /* total width */
  int mbits;     /* stored mantissa bits */
  int ebits;     /* exponent bits */
  int bias;
  int has_inf;   /* IEEE-like: top exponent is inf/NaN. Otherwise only all-ones is NaN. */
  int saturate;  /* overflow (and ±inf) round to ±max finite instead of ±inf */
} ref_fmt;

extern const ref_fmt REF_HALF, REF_BF16, REF_E4M3, REF_E5M2, REF_F32;

/* The format of a float datatype (NULL for integers and double). */
const ref_fmt* ref_fmt_of(ncclDataType_t type);

int ref_is_nan(const ref_fmt* f, uint32_t bits);
/* The value of a bit pattern (NaN as NAN, signs of zero and inf kept). */
double ref_decode(const ref_fmt* f, uint32_t bits);
/* v rounded to nearest, ties to even, in format f, as a bit pattern. A NaN v gives the
 * format's canonical NaN (callers compare NaN-ness, not payloads). */
uint32_t ref_round(const ref_fmt* f, double v);
/* Largest finite value. */
double ref_max_finite(const ref_fmt* f);

/* Max and min as core/host documents them: NaN operands ignored, -0 < +0. */
double ref_max(double a, double b);
double ref_min(double a, double b);

#endif
