/* Broken: init always fails (after saying why through the logger, as a plugin should). */
#include "refnet.h"

static ncclResult_t init_fails(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                               ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  (void)ctx, (void)commId, (void)config, (void)prof;
  if (log) log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "broken-initfails: no device here");
  return ncclSystemError;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-initfails", .init = init_fails)
