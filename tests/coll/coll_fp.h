/* The correctness matrix's own number formats: round-to-nearest-even conversion from double to
 * half, bfloat16, fp8 e4m3 and fp8 e5m2, decoding back to double, and the ulp of a magnitude in
 * every float datatype. Written from the format definitions, independently of weft (the
 * library under test), so a bug shared by both cannot hide.
 *
 * Overflow: half, bfloat16 and e5m2 round to ±inf (IEEE); e4m3 has no infinity and saturates to
 * ±448 (the "satfinite" rule), also for ±inf. NaN stays NaN (a canonical quiet NaN). */
#ifndef COLL_FP_H
#define COLL_FP_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

uint16_t fp_to_half(double x);
uint16_t fp_to_bf16(double x);
uint8_t fp_to_e4m3(double x);
uint8_t fp_to_e5m2(double x);

double fp_from_half(uint16_t v);
double fp_from_bf16(uint16_t v);
double fp_from_e4m3(uint8_t v);
double fp_from_e5m2(uint8_t v);

/* 2^k as a double for -1022 <= k <= 1023 (clamped outside). */
double fp_pow2(int k);

/* 1 for half, float, double, bfloat16, e4m3, e5m2; 0 for the integer types. */
int fp_is_float(ncclDataType_t type);
/* 1 for int8, int32, int64. */
int fp_is_signed_int(ncclDataType_t type);
/* Bytes per element (1, 2, 4 or 8). */
size_t fp_type_size(ncclDataType_t type);
/* Stored fraction bits of a float type (half 10, float 23, double 52, bf16 7, e4m3 3, e5m2 2). */
int fp_mant_bits(ncclDataType_t type);
/* Unit roundoff 2^-(mant_bits+1): the largest relative error of one rounding in normal range. */
double fp_unit_roundoff(ncclDataType_t type);

/* Distance between adjacent representable values of a float type around magnitude mag
 * (mag >= 0): 2^(floor(log2 mag) - mant_bits), never less than the subnormal spacing. Monotonic
 * in mag, so ulp(p) <= ulp(s) whenever |p| <= s. */
double fp_ulp(ncclDataType_t type, double mag);

/* The value of a float type's element stored in bits (low bytes used) as a double (exact). */
double fp_decode(ncclDataType_t type, uint64_t bits);
/* The value of every code of half, bfloat16, e4m3, e5m2 (indexed by the code); NULL for other
 * types. Built on first use; not thread-safe the first time. */
const double* fp_decode_table(ncclDataType_t type);
/* Round x to a float type (round to nearest even) and return its bit pattern. */
uint64_t fp_encode(ncclDataType_t type, double x);

#endif
