/* Result checking (-c): every rank fills its input from a seed with values that depend only on
 * (seed, rank, element index), so any rank can regenerate any other rank's input and compute
 * the exact expected output of a collective itself, without trusting the library for anything.
 * Integers are compared bit for bit; floats within a bound derived from the number of ranks
 * and the type's precision (the library may sum in any order). Data is random and never zero. */
#ifndef WEFT_PERF_CHECK_H
#define WEFT_PERF_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "perf.h"

struct perf_check {
  enum perf_coll_id coll;
  const struct perf_type* type;
  const struct perf_op* op; /* ignored by collectives without an op */
  int root;
  int rank, nranks;
  uint64_t seed;
  struct perf_counts counts;
};

/* The premultiplier of mulsum for `rank` (1 + rank % 3), in the type's representation, into
 * buf (at least 8 bytes), for ncclRedOpCreatePreMulSum(…, ncclScalarHostImmediate, …). */
void perf_check_premul_scalar(const struct perf_type* t, int rank, void* buf);

/* Writes this rank's input: counts.sendcount elements at in. */
void perf_check_fill(const struct perf_check* c, void* in);

/* Overwrites bytes with a pattern (NaN for floats) so an output left unwritten shows. */
void perf_check_poison(void* buf, size_t bytes);

/* Number of wrong elements among this rank's counts.recvcount output elements at out. Outputs
 * a collective leaves undefined (reduce on a non-root) count as right. */
size_t perf_check_verify(const struct perf_check* c, const void* out);

/* The same on elements [first, end) only; and split over up to nthreads threads (at least
 * 2^20 elements each; fewer threads, or none, for small buffers). Checking is host work
 * proportional to the size, so large GPU buffers need the cores. */
void perf_check_fill_range(const struct perf_check* c, void* in, size_t first, size_t end);
size_t perf_check_verify_range(const struct perf_check* c, const void* out, size_t first,
                               size_t end);
void perf_check_fill_par(const struct perf_check* c, void* in, int nthreads);
size_t perf_check_verify_par(const struct perf_check* c, const void* out, int nthreads);

/* One input element, as the rank would have written it (exposed for tests). */
void perf_check_element(const struct perf_check* c, int rank, size_t index, void* dst);

#endif
