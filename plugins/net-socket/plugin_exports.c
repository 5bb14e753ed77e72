/* libnccl-net-weft-socket.so's exports: ncclNetPlugin_v11, the implementation itself (NCCL 2.28+),
 * and the target that weft_net_export (plugins/common) adapts into ncclNetPlugin_v10 … _v6.
 * Not part of weft_net_socket_impl, so libweft exports none of this. */
#include "net_export.h"
#include "net_socket.h"
#include "net_socket_internal.h"

const char weft_net_export_name[] = "weft-socket";

const struct weft_net_export_target weft_net_export_target = {
    .net = &weft_net_socket_v11,
    .set_logger = net_socket_set_logger,
    .logger = net_socket_logger,
    .connect_tc = net_socket_connect_tc,
};

WEFT_NET_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "weft-socket",
    .init = net_socket_init,
    .devices = net_socket_devices,
    .getProperties = net_socket_get_properties,
    .listen = net_socket_listen,
    .connect = net_socket_connect,
    .accept = net_socket_accept,
    .regMr = net_socket_reg_mr,
    .regMrDmaBuf = net_socket_reg_mr_dmabuf,
    .deregMr = net_socket_dereg_mr,
    .isend = net_socket_isend,
    .irecv = net_socket_irecv,
    .iflush = net_socket_iflush,
    .test = net_socket_test,
    .closeSend = net_socket_close_send,
    .closeRecv = net_socket_close_recv,
    .closeListen = net_socket_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = net_socket_finalize,
    .setNetAttr = net_socket_set_net_attr,
};
