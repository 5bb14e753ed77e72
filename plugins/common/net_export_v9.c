/* ncclNetPlugin_v9 (NCCL 2.24–2.25): init once, no profiler handles, no traffic class. */
#include "net_export.h"

static ncclResult_t v9_get_properties(int dev, ncclNetProperties_v9_t* props) {
  ncclNetProperties_v11_t p;
  ncclResult_t res = weft_net_export_target.net->getProperties(dev, &p);
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

WEFT_NET_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = weft_net_export_name,
    .init = net_export_legacy_init,
    .devices = net_export_devices,
    .getProperties = v9_get_properties,
    .listen = net_export_legacy_listen,
    .connect = net_export_legacy_connect,
    .accept = net_export_accept,
    .regMr = net_export_reg_mr,
    .regMrDmaBuf = net_export_reg_mr_dmabuf,
    .deregMr = net_export_dereg_mr,
    .isend = net_export_legacy_isend,
    .irecv = net_export_legacy_irecv,
    .iflush = net_export_iflush,
    .test = net_export_test,
    .closeSend = net_export_close_send,
    .closeRecv = net_export_close_recv,
    .closeListen = net_export_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
