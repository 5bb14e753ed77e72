/* Loads and inits, finds no device, and says why through the logger at INFO (as net-ib does on
 * a host without RDMA): weft-conformance must show that reason on its "# 0 devices" line
 * without -v. Not broken: a plugin on a host without its NIC. */
#include "refnet.h"

static ncclResult_t init_nodevice(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                                  ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  if (log)
    log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__,
        "NET/NoDevice: 0 devices: no FooNIC on this host (/sys/class/foonic is empty)");
  return refnet_init(ctx, commId, config, log, prof);
}

static ncclResult_t devices_none(int* ndev) {
  *ndev = 0;
  return ncclSuccess;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "nodevice", .init = init_nodevice, .devices = devices_none)
