/* libnccl-net-weft-ofi.so's exports: ncclNetPlugin_v11, the implementation itself (NCCL 2.28+), and
 * the target that weft_net_export (plugins/common) adapts into ncclNetPlugin_v10 … _v6 and _v12.
 * Not part of weft_net_ofi_impl, which tests link directly. */
#include "net_common.h"
#include "net_export.h"
#include "net_ofi.h"

/* v10 hands a traffic class to each connect. The comms of a device share one endpoint, whose
 * traffic class is fixed when it opens, so a per-connection class is not applied. */
static ncclResult_t ofi_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                                   ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class) {
  (void)traffic_class;
  return net_ofi_connect(ctx, dev, handle, send_comm, dev_comm);
}

WEFT_NET_PLUGIN_EXPORTS(net_ofi, "weft-ofi", &net_ofi_v11, ofi_connect_tc);
