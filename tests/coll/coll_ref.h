/* Inputs and expected results of the correctness matrix, computed by every rank on its own.
 *
 * Inputs: element i of rank r's send buffer is a function of (seed, case, r, i) only, so any rank
 * can regenerate any rank's input (counter-based hashing, no stored streams). Values are random
 * and never zero, in a domain chosen per (operation, datatype):
 *   data movement (no reduction): random bit patterns (NaN payloads included: must arrive intact)
 *   integers, sum/max/min/premulsum/custom: random bits (sum, prod, premulsum wrap around)
 *   integers, prod: random odd values (a product of odd values is never 0 mod 2^w)
 *   integers, avg: |x| <= max/nranks, so the sum cannot overflow
 *   floats, sum/avg/premulsum: +-[0.25, 4) rounded to the type (no overflow, even in e4m3)
 *   floats, prod: +-[0.75, 1.5) rounded to the type (every partial product stays normal)
 *   floats, max/min/custom: random finite non-zero bit patterns (subnormals included)
 *
 * Expected results: integers in 64-bit arithmetic, bit exact (wraparound modulo 2^w for sum, prod
 * and premulsum; avg is the sum divided by nranks, truncated toward zero, as NCCL's SumPostDiv).
 * Floats: in double, then rounded to the type with coll_fp.h's own conversion; max, min and
 * custom must match bit for bit, the others within coll_tolerance().
 *
 * The custom operator (weftRedOpCreateCustom) is XOR for integers and, for floats, "the element
 * of larger magnitude, the positive one on a tie": associative, commutative, exact, and distinct
 * from every built-in reduction. */
#ifndef COLL_REF_H
#define COLL_REF_H

#include <stddef.h>
#include <stdint.h>

#include "coll_case.h"

/* How inputs are drawn (see above). */
typedef enum { DOM_BITS, DOM_ODD, DOM_SMALL, DOM_WIDE, DOM_NEAR_ONE, DOM_FINITE } coll_domain;

typedef struct {
  ncclDataType_t type;
  coll_op op; /* OP_NONE: data movement, raw bits */
  int nranks;
  int esz;
  uint64_t mask; /* low esz*8 bits */
  coll_domain domain;
  uint64_t avg_bound; /* DOM_SMALL: |x| <= avg_bound */
  int is_float, mbits, bias;
  uint64_t expmask, fracmask;
  const double* table; /* decoding table of narrow float types, else NULL */
  uint64_t key; /* the case's key (coll_case_key); a rank's inputs derive from it and the rank */
  uint64_t scalar_bits; /* PreMulSum scalar, an element of the type */
  double scalar;        /* its value (float types) */
} coll_gen;

void coll_gen_init(coll_gen* g, const coll_case* c, uint64_t seed);
/* Bits of element i of rank r's input. */
uint64_t coll_gen_value(const coll_gen* g, int rank, size_t i);

/* The expected value of one reduced element. */
typedef struct {
  uint64_t bits; /* expected element (rounded to the type for floats) */
  int exact;     /* 1: bits must match exactly; 0: within tol */
  double tol;    /* bound on |result - expected| (floats) */
  double ref;    /* the reference in double before rounding (floats) */
  int inf_ok;    /* Prod: some order's partial product leaves the type's finite range, so an
                  * infinity of the reference's sign is a right answer too */
} coll_expect;

/* Reduce element i of every rank's input with g->op. */
void coll_ref_reduce(const coll_gen* g, size_t i, coll_expect* out);
/* 1 when got (element bits) satisfies e. */
int coll_ref_ok(const coll_gen* g, const coll_expect* e, uint64_t got);

/* Bound on |library result - reference rounded to the type| for a float reduction of nranks
 * inputs, for ANY reduction order (ring, tree, anything else). The terms t_i are x_i (sum),
 * x_i/n (avg), x_i*s (premulsum). Every partial result of a sum, in any order, is the sum of a
 * subset of the terms, so its magnitude is at most part = max(sum of positive t_i, sum of |negative
 * t_i|); one rounding of it costs at most ulp(part)/2 (ulp taken at part widened by 2(n+1)u, for
 * the errors already made). sabs = sum of |t_i| (prod: |exact product|).
 *   sum:       n-1 roundings of partial sums               (n-1) * ulp(part)/2
 *   premulsum: n roundings of x_i*s and n-1 of partials    (2n-1) * ulp(part)/2
 *   avg:       as premulsum with s = 1/n, plus the rounding of 1/n to the type (relative error
 *              <= u on every term: u*sabs); a sum-then-divide implementation is also within it
 *   prod:      n-1 roundings, each a relative error <= u = 2^-(p+1) (normal range guaranteed by
 *              the input domain): sabs * ((1+u)^(n-1) - 1)
 *   max, min, custom: 0 (exact)
 * plus the reference's own errors: its rounding to the type, ulp(|ref|)/2, and its double
 * arithmetic, 4n * 2^-53 * sabs (matters only for float64).
 * With few mantissa bits and many ranks the bound is wide (e5m2, 8 ranks: several units);
 * there the exact ops (max, min, custom) and the data-movement collectives carry the weight. */
double coll_tolerance(ncclDataType_t type, coll_op op, int nranks, double part, double sabs,
                      double ref);

/* The custom operator on element bits (see above). */
uint64_t coll_custom_combine(ncclDataType_t type, uint64_t a, uint64_t b);

/* Sign-extended value of integer element bits. */
int64_t coll_sext(ncclDataType_t type, uint64_t bits);

#endif
