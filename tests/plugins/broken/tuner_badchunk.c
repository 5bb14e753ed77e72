/* Broken tuner: ncclTunerPlugin_v6 whose getChunkSize answers 0 bytes for AllReduce on LL. */
#include "reftuner.h"

static ncclResult_t chunk_zero(void* ctx, ncclFunc_t coll, size_t nBytes, int algo, int proto,
                               int nChannels, size_t* chunkSize) {
  ncclResult_t r = reftuner_chunk(ctx, coll, nBytes, algo, proto, nChannels, chunkSize);
  if (coll == ncclFuncAllReduce && proto == NCCL_PROTO_LL) *chunkSize = 0;
  return r;
}

REFTUNER_EXPORT_V6(ncclTunerPlugin_v6, "broken-badchunk", .getChunkSize = chunk_zero)
