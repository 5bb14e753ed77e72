/* The random plan of the one-sided tests (rma_ref.h). */
#include "rma_ref.h"

#include <string.h>

#include "testutil.h"

static const ncclDataType_t types[] = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64,
                                       ncclInt64};

size_t rma_ref_type_size(ncclDataType_t t) {
  return t == ncclInt8 ? 1 : t == ncclFloat16 ? 2 : t == ncclFloat32 ? 4 : 8;
}

uint64_t rma_ref_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t s = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull) ^
               (c * 0x94d049bb133111ebull);
  return s ? s : 1;
}

void rma_ref_fill(void* p, size_t n, uint64_t state) {
  unsigned char* b = p;
  for (size_t i = 0; i < n; i++) {
    if (i % 8 == 0) state = test_rand(&state);
    b[i] = (unsigned char)(state >> (8 * (i % 8)));
  }
}

int rma_ref_plan(uint64_t seed, int round, int s, int t, size_t region, size_t src_bytes,
                 rma_ref_op* ops) {
  uint64_t st = rma_ref_mix(seed, (uint64_t)round + 1, (uint64_t)s + 1, (uint64_t)t + 1);
  int n = 1 + (int)(test_rand(&st) % RMA_REF_MAX_OPS);
  size_t maxb = region < src_bytes ? region : src_bytes;
  for (int i = 0; i < n; i++) {
    rma_ref_op* o = &ops[i];
    memset(o, 0, sizeof *o);
    if (i > 0 && test_rand(&st) % 4 == 0) {
      o->signal_only = 1;
      continue;
    }
    o->type = types[test_rand(&st) % (sizeof types / sizeof types[0])];
    size_t es = rma_ref_type_size(o->type);
    size_t bytes = test_rand(&st) % 3 == 0 ? test_rand(&st) % (maxb + 1) : test_rand(&st) % 4096;
    if (bytes > maxb) bytes = maxb;
    if (test_rand(&st) % 10 == 0) bytes = 0;
    o->count = bytes / es;
    bytes = o->count * es;
    o->src_off = (test_rand(&st) % (src_bytes - bytes + 1)) / es * es;
    o->dst_off = test_rand(&st) % (region - bytes + 1);
  }
  return n;
}
