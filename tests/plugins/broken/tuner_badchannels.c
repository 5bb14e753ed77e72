/* Broken tuner: answers a negative channel count. */
#include "reftuner.h"

static ncclResult_t get_badch(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                              float** table, int numAlgo, int numProto, int regBuff, int* nCh) {
  ncclResult_t r = reftuner_get_v4(ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto,
                                   regBuff, nCh);
  *nCh = -3;
  return r;
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-badchannels", .getCollInfo = get_badch)
