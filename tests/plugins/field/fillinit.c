/* Field case: a plugin whose exported tables hold only a name and init (as
 * nccl-rdma-sharp-plugins ships); init copies the working table in, name included, as stock
 * NCCL's loading order allows. v11 and v6. */
#include "fieldnet_v6.h"

static ncclResult_t init11(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                           ncclDebugLogger_t log, ncclProfilerCallback_t prof);
static ncclResult_t init6(ncclDebugLogger_t log);

__attribute__((visibility("default"))) ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "field-fillinit-unready", .init = init11};
__attribute__((visibility("default"))) ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = "field-fillinit-unready", .init = init6};

static const ncclNet_v11_t full11 = {.name = "field-fillinit", REFNET_V11_ENTRIES};
static const ncclNet_v6_t full6 = {.name = "field-fillinit", FIELDNET_V6_ENTRIES};

static ncclResult_t init11(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                           ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  ncclNetPlugin_v11 = full11;
  return full11.init(ctx, comm_id, config, log, prof);
}

static ncclResult_t init6(ncclDebugLogger_t log) {
  ncclNetPlugin_v6 = full6;
  return full6.init(log);
}
