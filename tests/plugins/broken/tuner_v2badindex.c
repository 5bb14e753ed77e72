/* Broken tuner: a v2 plugin that answers algorithm 42 for AllReduce. */
#include "reftuner.h"

static ncclResult_t get_badindex(void* ctx, ncclFunc_t coll, size_t nBytes, int collNetSupport,
                                 int nvlsSupport, int numPipeOps, int* algo, int* proto,
                                 int* nCh) {
  ncclResult_t r = reftuner_get_v2(ctx, coll, nBytes, collNetSupport, nvlsSupport, numPipeOps,
                                   algo, proto, nCh);
  if (coll == ncclFuncAllReduce) *algo = 42;
  return r;
}

REFTUNER_EXPORT_V2(ncclTunerPlugin_v2, "broken-v2badindex", .getCollInfo = get_badindex)
