/* ncclNetPlugin_v6 (NCCL 2.18): as v7 without device handles on connect/accept and without the
 * device-offload entries; properties stop at maxRecvs. */
#include "net_export.h"

static ncclResult_t v6_get_properties(int dev, ncclNetProperties_v6_t* props) {
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
  return ncclSuccess;
}

static ncclResult_t v6_connect(int dev, void* handle, void** send_comm) {
  return net_export_legacy_connect(dev, handle, send_comm, NULL);
}

static ncclResult_t v6_accept(void* listen_comm, void** recv_comm) {
  return net_export_accept(listen_comm, recv_comm, NULL);
}

WEFT_NET_EXPORT ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = weft_net_export_name,
    .init = net_export_legacy_init,
    .devices = net_export_devices,
    .getProperties = v6_get_properties,
    .listen = net_export_legacy_listen,
    .connect = v6_connect,
    .accept = v6_accept,
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
};
