/* Broken tuner: allocates and frees a scratch buffer in every getCollInfo call. */
#include <stdlib.h>
#include <string.h>

#include "reftuner.h"

static ncclResult_t get_allocates(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                                  float** table, int numAlgo, int numProto, int regBuff,
                                  int* nCh) {
  float* scratch = malloc(sizeof(float) * (size_t)numAlgo * (size_t)numProto);
  if (!scratch) return ncclSystemError;
  memcpy(scratch, table, sizeof(float) * (size_t)numAlgo * (size_t)numProto);
  ncclResult_t r = reftuner_get_v4(ctx, coll, nBytes, numPipeOps, (float**)(void*)scratch, numAlgo,
                                   numProto, regBuff, nCh);
  memcpy(table, scratch, sizeof(float) * (size_t)numAlgo * (size_t)numProto);
  free(scratch);
  return r;
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-allocates", .getCollInfo = get_allocates)
