/* libnccl-net-weft-ib.so's exports: ncclNetPlugin_v11, the implementation itself (NCCL 2.28+),
 * and the target that weft_net_export (plugins/common) adapts into ncclNetPlugin_v10 … _v6.
 * Not part of weft_net_ib_impl. */
#include "net_export.h"
#include "net_ib.h"
#include "net_ib_internal.h"

const char weft_net_export_name[] = "weft-ib";

const struct weft_net_export_target weft_net_export_target = {
    .net = &weft_net_ib_v11,
    .set_logger = net_ib_set_logger,
    .logger = net_ib_logger,
    .connect_tc = net_ib_connect_tc,
};

WEFT_NET_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "weft-ib",
    .init = net_ib_init,
    .devices = net_ib_devices,
    .getProperties = net_ib_get_properties,
    .listen = net_ib_listen,
    .connect = net_ib_connect,
    .accept = net_ib_accept,
    .regMr = net_ib_reg_mr,
    .regMrDmaBuf = net_ib_reg_mr_dmabuf,
    .deregMr = net_ib_dereg_mr,
    .isend = net_ib_isend,
    .irecv = net_ib_irecv,
    .iflush = net_ib_iflush,
    .test = net_ib_test,
    .closeSend = net_ib_close_send,
    .closeRecv = net_ib_close_recv,
    .closeListen = net_ib_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = net_ib_finalize,
    .setNetAttr = net_ib_set_net_attr,
};
