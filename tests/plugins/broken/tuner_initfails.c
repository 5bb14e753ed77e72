/* Broken tuner: init fails (ncclSystemError) for every communicator. */
#include "reftuner.h"

static ncclResult_t init_fails(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                               ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                               ncclTunerConstants_v5_t* constants) {
  (void)ctx, (void)commId, (void)nRanks, (void)nNodes, (void)log, (void)nvl, (void)constants;
  return ncclSystemError;
}

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-initfails", .init = init_fails)
