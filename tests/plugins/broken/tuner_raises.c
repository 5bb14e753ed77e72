/* Broken tuner: "prefers" a cell by raising every other usable cell to 1e6 instead of lowering
 * the one it wants (legal for the core, which still takes the cheapest, but it hides intent). */
#include "reftuner.h"

static ncclResult_t get_raises(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                               float** table, int numAlgo, int numProto, int regBuff, int* nCh) {
  (void)ctx, (void)coll, (void)nBytes, (void)numPipeOps, (void)regBuff;
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  int kept = 0;
  for (int a = 0; a < numAlgo; a++)
    for (int p = 0; p < numProto; p++) {
      if (cost[a][p] < 0) continue;
      if (kept++) cost[a][p] = 1e6f;
    }
  *nCh = 0;
  return ncclSuccess;
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-raises", .getCollInfo = get_raises)
