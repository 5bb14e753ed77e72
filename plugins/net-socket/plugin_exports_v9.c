/* ncclNetPlugin_v9 (NCCL 2.24–2.25): init once, no profiler handles, no traffic class. */
#include "plugin_exports.h"

static ncclResult_t v9_get_properties(int dev, ncclNetProperties_v9_t* props) {
  ncclNetProperties_v11_t p;
  ncclResult_t res = net_socket_get_properties(dev, &p);
  if (res != ncclSuccess) return res;
  props->name = p.name;
  props->pciPath = p.pciPath;
  props->guid = p.guid;
  props->ptrSupport = p.ptrSupport;
  props->regIsGlobal = p.regIsGlobal;
  props->forceFlush = p.forceFlush;
  props->speed = p.speed;
  props->port = p.port;
  props->latency = p.latency;
  props->maxComms = p.maxComms;
  props->maxRecvs = p.maxRecvs;
  props->netDeviceType = p.netDeviceType;
  props->netDeviceVersion = p.netDeviceVersion;
  props->vProps.ndevs = p.vProps.ndevs;
  for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC_V9; i++) props->vProps.devs[i] = p.vProps.devs[i];
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  return ncclSuccess;
}

NS_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = "Socket",
    .init = net_socket_legacy_init,
    .devices = net_socket_devices,
    .getProperties = v9_get_properties,
    .listen = net_socket_legacy_listen,
    .connect = net_socket_legacy_connect,
    .accept = net_socket_accept,
    .regMr = net_socket_reg_mr,
    .regMrDmaBuf = net_socket_reg_mr_dmabuf,
    .deregMr = net_socket_dereg_mr,
    .isend = net_socket_legacy_isend,
    .irecv = net_socket_legacy_irecv,
    .iflush = net_socket_iflush,
    .test = net_socket_test,
    .closeSend = net_socket_close_send,
    .closeRecv = net_socket_close_recv,
    .closeListen = net_socket_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
