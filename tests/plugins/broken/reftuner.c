/* reftuner (see reftuner.h). */
#include "reftuner.h"

#include <stdlib.h>

typedef struct {
  size_t nranks, nnodes;
} reftuner_ctx;

ncclResult_t reftuner_init_v2(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** ctx) {
  (void)log;
  reftuner_ctx* c = malloc(sizeof *c);
  if (!c) return ncclSystemError;
  c->nranks = nRanks;
  c->nnodes = nNodes;
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t reftuner_init_v5(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                              ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                              ncclTunerConstants_v5_t* constants) {
  (void)commId, (void)nvl, (void)constants;
  return reftuner_init_v2(nRanks, nNodes, log, ctx);
}

ncclResult_t reftuner_fini(void* ctx) {
  free(ctx);
  return ncclSuccess;
}

static void choose(size_t nBytes, int* algo, int* proto) {
  *algo = nBytes > 65536 ? NCCL_ALGO_RING : NCCL_ALGO_TREE;
  *proto = nBytes > 65536 ? NCCL_PROTO_SIMPLE : NCCL_PROTO_LL;
}

ncclResult_t reftuner_get_v2(void* ctx, ncclFunc_t coll, size_t nBytes, int collNetSupport,
                             int nvlsSupport, int numPipeOps, int* algo, int* proto, int* nCh) {
  (void)ctx, (void)coll, (void)collNetSupport, (void)nvlsSupport, (void)numPipeOps;
  choose(nBytes, algo, proto);
  *nCh = 4;
  return ncclSuccess;
}

ncclResult_t reftuner_get_v4(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                             float** table, int numAlgo, int numProto, int regBuff, int* nCh) {
  (void)ctx, (void)coll, (void)numPipeOps, (void)regBuff;
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  int algo, proto;
  choose(nBytes, &algo, &proto);
  if (algo < numAlgo && proto < numProto && cost[algo][proto] != NCCL_ALGO_PROTO_IGNORE) {
    cost[algo][proto] = 0.0f;
    *nCh = 4;
  }
  return ncclSuccess;
}

ncclResult_t reftuner_get_v3(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                             float** table, int numAlgo, int numProto, int* nCh) {
  return reftuner_get_v4(ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, 0, nCh);
}

ncclResult_t reftuner_chunk(void* ctx, ncclFunc_t coll, size_t nBytes, int algo, int proto,
                            int nChannels, size_t* chunkSize) {
  (void)coll, (void)nChannels;
  if (ctx == NULL || chunkSize == NULL) return ncclInvalidArgument;
  if (algo == NCCL_ALGO_RING && proto == NCCL_PROTO_SIMPLE && nBytes > (1u << 20) &&
      *chunkSize <= ((size_t)1 << 30))
    *chunkSize *= 2;
  return ncclSuccess;
}
