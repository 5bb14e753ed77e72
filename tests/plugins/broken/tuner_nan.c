/* Broken tuner: leaves NaN in the first usable cell. */
#include <math.h>

#include "reftuner.h"

static ncclResult_t get_nan(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                            float** table, int numAlgo, int numProto, int regBuff, int* nCh) {
  (void)ctx, (void)coll, (void)nBytes, (void)numPipeOps, (void)regBuff;
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  for (int a = 0; a < numAlgo; a++)
    for (int p = 0; p < numProto; p++)
      if (cost[a][p] >= 0) {
        cost[a][p] = NAN;
        *nCh = 0;
        return ncclSuccess;
      }
  return ncclSuccess;
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-nan", .getCollInfo = get_nan)
