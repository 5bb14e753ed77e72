/* What the one-sided tests put where: the random plan of a round, from which the source issues
 * its calls and the target computes the reference, each on its own. */
#ifndef WEFT_TEST_RMA_REF_H
#define WEFT_TEST_RMA_REF_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

#define RMA_REF_MAX_OPS 6

typedef struct {
  int signal_only; /* ncclSignal; otherwise ncclPutSignal of: */
  ncclDataType_t type;
  size_t count, src_off, dst_off; /* offsets in bytes; dst_off within the source's region */
} rma_ref_op;

/* A state for xorshift from the seed and three numbers. */
uint64_t rma_ref_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
/* n bytes at p, random from state. */
void rma_ref_fill(void* p, size_t n, uint64_t state);
size_t rma_ref_type_size(ncclDataType_t t);
/* What source s sends target t in round (1 to RMA_REF_MAX_OPS calls; the first is a put):
 * random datatypes, sizes (mostly small, sometimes up to a whole region, now and then empty)
 * and offsets within src_bytes and region. Returns the number of calls. */
int rma_ref_plan(uint64_t seed, int round, int s, int t, size_t region, size_t src_bytes,
                 rma_ref_op* ops);

#endif
