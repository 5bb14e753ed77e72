/* libnccl-net-weft-ofi.so's exports: ncclNetPlugin_v11, the implementation itself (NCCL 2.28+), and
 * the target that weft_net_export (plugins/common) adapts into ncclNetPlugin_v10 … _v6. Not part
 * of weft_net_ofi_impl, which tests link directly. */
#include "net_export.h"
#include "net_ofi.h"

const char weft_net_export_name[] = "weft-ofi";

/* v10 hands a traffic class to each connect. The comms of a device share one endpoint, whose
 * traffic class is fixed when it opens, so a per-connection class is not applied. */
static ncclResult_t ofi_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                                   ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class) {
  (void)traffic_class;
  return net_ofi_connect(ctx, dev, handle, send_comm, dev_comm);
}

const struct weft_net_export_target weft_net_export_target = {
    .net = &net_ofi_v11,
    .set_logger = net_ofi_set_logger,
    .logger = net_ofi_logger,
    .connect_tc = ofi_connect_tc,
};

WEFT_NET_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "weft-ofi",
    .init = net_ofi_init,
    .devices = net_ofi_devices,
    .getProperties = net_ofi_get_properties,
    .listen = net_ofi_listen,
    .connect = net_ofi_connect,
    .accept = net_ofi_accept,
    .regMr = net_ofi_reg_mr,
    .regMrDmaBuf = net_ofi_reg_mr_dmabuf,
    .deregMr = net_ofi_dereg_mr,
    .isend = net_ofi_isend,
    .irecv = net_ofi_irecv,
    .iflush = net_ofi_iflush,
    .test = net_ofi_test,
    .closeSend = net_ofi_close_send,
    .closeRecv = net_ofi_close_recv,
    .closeListen = net_ofi_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = net_ofi_finalize,
    .setNetAttr = net_ofi_set_net_attr,
};
