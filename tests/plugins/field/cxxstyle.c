/* Field case: a plugin written like a C++ one: linked -z nodelete (a C++ library with unique
 * symbols stays loaded after dlclose too) and holding a process-wide instance that its first
 * init creates and that outlives every finalize. Loading it again after dlclose therefore finds
 * the old instance; init must still work. FIELDNET_REINIT_FAILS=1 makes this copy refuse an
 * init once every context was finalized (the defect the reload test must catch). */
#include <stdlib.h>

#include "refnet.h"

static struct {
  int made;  /* the instance exists (made by the first init ever) */
  int users; /* contexts not finalized yet */
  int inits;
} instance;
static ncclDebugLogger_t logger;

static ncclResult_t cxx_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                             ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  logger = log;
  instance.inits++;
  if (instance.made && instance.users == 0 && getenv("FIELDNET_REINIT_FAILS")) {
    if (logger)
      logger(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
             "field-cxxstyle: init #%d finds the instance of an earlier load torn down; refusing",
             instance.inits);
    return ncclSystemError;
  }
  if (logger)
    logger(NCCL_LOG_INFO, NCCL_NET, __FILE__, __LINE__, "field-cxxstyle: init #%d (%s)",
           instance.inits, instance.made ? "instance kept from before" : "new instance");
  instance.made = 1;
  ncclResult_t r = refnet_init(ctx, comm_id, config, log, prof);
  if (r == ncclSuccess) instance.users++;
  return r;
}

static ncclResult_t cxx_finalize(void* ctx) {
  instance.users--;
  return refnet_finalize(ctx);
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "field-cxxstyle", .init = cxx_init,
                  .finalize = cxx_finalize)
