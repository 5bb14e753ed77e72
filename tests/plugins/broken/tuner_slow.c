/* Broken tuner: spends about 200 us in every getCollInfo call. */
#include <time.h>

#include "reftuner.h"

static ncclResult_t get_slow(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                             float** table, int numAlgo, int numProto, int regBuff, int* nCh) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 200000L);
  return reftuner_get_v4(ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, regBuff, nCh);
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-slow", .getCollInfo = get_slow)
