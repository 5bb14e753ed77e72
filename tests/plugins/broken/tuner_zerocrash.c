/* Broken tuner: crashes on a 0-byte operation (writes through a NULL pointer, as code that
 * indexes a table by nBytes-derived values without checking can). */
#include "reftuner.h"

static int* volatile nowhere;

static ncclResult_t get_zero(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                             float** table, int numAlgo, int numProto, int regBuff, int* nCh) {
  if (nBytes == 0) *nowhere = 1;
  return reftuner_get_v4(ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, regBuff, nCh);
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-zerocrash", .getCollInfo = get_zero)
