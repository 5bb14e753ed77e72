/* ncclNetPlugin_v7 (NCCL 2.19): as v8 but regMr takes an int size and the properties have no
 * regIsGlobal. */
#include "net_export.h"

static ncclResult_t v7_get_properties(int dev, ncclNetProperties_v7_t* props) {
  ncclNetProperties_v11_t p;
  ncclResult_t res = weft_net_export_target.net->getProperties(dev, &p);
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
  props->netDeviceType = p.netDeviceType;
  props->netDeviceVersion = p.netDeviceVersion;
  return ncclSuccess;
}

WEFT_NET_EXPORT ncclNet_v7_t ncclNetPlugin_v7 = {
    .name = weft_net_export_name,
    .init = net_export_legacy_init,
    .devices = net_export_devices,
    .getProperties = v7_get_properties,
    .listen = net_export_legacy_listen,
    .connect = net_export_legacy_connect,
    .accept = net_export_accept,
    .regMr = net_export_legacy_reg_mr_int,
    .regMrDmaBuf = net_export_reg_mr_dmabuf,
    .deregMr = net_export_dereg_mr,
    .isend = net_export_legacy_isend_int,
    .irecv = net_export_legacy_irecv_int,
    .iflush = net_export_iflush,
    .test = net_export_test,
    .closeSend = net_export_close_send,
    .closeRecv = net_export_close_recv,
    .closeListen = net_export_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
};
