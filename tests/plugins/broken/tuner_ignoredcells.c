/* Broken tuner: zeroes its favourite cell even where the core marked it ignored (-1). */
#include "reftuner.h"

static ncclResult_t get_overwrites(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                                   float** table, int numAlgo, int numProto, int regBuff,
                                   int* nCh) {
  (void)ctx, (void)coll, (void)nBytes, (void)numPipeOps, (void)numAlgo, (void)numProto,
      (void)regBuff;
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  cost[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = 0.0f;
  *nCh = 4;
  return ncclSuccess;
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-ignoredcells", .getCollInfo = get_overwrites)
