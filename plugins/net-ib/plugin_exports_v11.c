/* ncclNetPlugin_v11: the implementation itself (NCCL 2.28+). */
#include "plugin_exports.h"

IB_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "IB",
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
