/* ncclNetPlugin_v6 (NCCL 2.18): as v7 without device handles on connect/accept and without the
 * device-offload entries; properties stop at maxRecvs. */
#include "plugin_exports.h"

static ncclResult_t v6_get_properties(int dev, ncclNetProperties_v6_t* props) {
  ncclNetProperties_v11_t p;
  ncclResult_t res = net_socket_get_properties(dev, &p);
  if (res != ncclSuccess) return res;
  props->name = p.name;
  props->pciPath = p.pciPath;
  props->guid = p.guid;
  props->ptrSupport = p.ptrSupport;
  props->speed = p.speed;
  props->port = p.port;
  props->latency = p.latency;
  props->maxComms = p.maxComms;
  props->maxRecvs = p.maxRecvs;
  return ncclSuccess;
}

static ncclResult_t v6_connect(int dev, void* handle, void** send_comm) {
  return net_socket_legacy_connect(dev, handle, send_comm, NULL);
}

static ncclResult_t v6_accept(void* listen_comm, void** recv_comm) {
  return net_socket_accept(listen_comm, recv_comm, NULL);
}

NS_EXPORT ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = "Socket",
    .init = net_socket_legacy_init,
    .devices = net_socket_devices,
    .getProperties = v6_get_properties,
    .listen = net_socket_legacy_listen,
    .connect = v6_connect,
    .accept = v6_accept,
    .regMr = net_socket_legacy_reg_mr_int,
    .regMrDmaBuf = net_socket_reg_mr_dmabuf,
    .deregMr = net_socket_dereg_mr,
    .isend = net_socket_legacy_isend_int,
    .irecv = net_socket_legacy_irecv_int,
    .iflush = net_socket_iflush,
    .test = net_socket_test,
    .closeSend = net_socket_close_send,
    .closeRecv = net_socket_close_recv,
    .closeListen = net_socket_close_listen,
};
