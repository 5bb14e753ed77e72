/* What libnccl-net-example.so exports: ncclNetPlugin_v11, the plugin's own table (NCCL 2.28+,
 * weft), and — through weft::net_export, linked whole — ncclNetPlugin_v10 … _v6 adapted from it
 * (NCCL 2.18 … 2.27). The export library asks for the two hidden objects below: the v11 table
 * it adapts with the name of the tables, and three helpers it cannot derive from the table. */
#include <weft_net_export.h>

#include "example_net.h"

const char weft_net_export_name[] = EX_NAME;

const struct weft_net_export_target weft_net_export_target = {
    .net = &ncclNetPlugin_v11,
    .set_logger = ex_set_logger, /* older inits each hand over a logger: keep the latest */
    .logger = ex_logger,
    .connect_tc = ex_connect_tc, /* v10 passes the traffic class per connect */
};

WEFT_NET_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = EX_NAME,
    .init = ex_init,
    .devices = ex_devices,
    .getProperties = ex_get_properties,
    .listen = ex_listen,
    .connect = ex_connect,
    .accept = ex_accept,
    .regMr = ex_reg_mr,
    .regMrDmaBuf = ex_reg_mr_dmabuf,
    .deregMr = ex_dereg_mr,
    .isend = ex_isend,
    .irecv = ex_irecv,
    .iflush = ex_iflush,
    .test = ex_test,
    .closeSend = ex_close_send,
    .closeRecv = ex_close_recv,
    .closeListen = ex_close_listen,
    .getDeviceMr = NULL,   /* no device offload */
    .irecvConsumed = NULL, /* idem */
    .makeVDevice = NULL,   /* no NIC fusion */
    .finalize = ex_finalize,
    .setNetAttr = ex_set_net_attr,
};
