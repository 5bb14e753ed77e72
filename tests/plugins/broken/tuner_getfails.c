/* Broken tuner: getCollInfo returns ncclInternalError for AllReduce (answers the others). */
#include "reftuner.h"

static ncclResult_t get_fails(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                              float** table, int numAlgo, int numProto, int regBuff, int* nCh) {
  if (coll == ncclFuncAllReduce) return ncclInternalError;
  return reftuner_get_v4(ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, regBuff, nCh);
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-getfails", .getCollInfo = get_fails)
