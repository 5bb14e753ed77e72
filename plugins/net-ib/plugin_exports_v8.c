/* ncclNetPlugin_v8 (NCCL 2.20–2.23): init once, int sizes in isend/irecv, properties up to
 * regIsGlobal. */
#include "plugin_exports.h"

static ncclResult_t v8_get_properties(int dev, ncclNetProperties_v8_t* props) {
  ncclNetProperties_v11_t p;
  ncclResult_t res = net_ib_get_properties(dev, &p);
  if (res != ncclSuccess) return res;
  props->name = p.name;
  props->pciPath = p.pciPath;
  props->guid = p.guid;
  props->ptrSupport = p.ptrSupport;
  props->regIsGlobal = p.regIsGlobal;
  props->speed = p.speed;
  props->port = p.port;
  props->latency = p.latency;
  props->maxComms = p.maxComms;
  props->maxRecvs = p.maxRecvs;
  props->netDeviceType = p.netDeviceType;
  props->netDeviceVersion = p.netDeviceVersion;
  return ncclSuccess;
}

IB_EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "IB",
    .init = net_ib_legacy_init,
    .devices = net_ib_devices,
    .getProperties = v8_get_properties,
    .listen = net_ib_legacy_listen,
    .connect = net_ib_legacy_connect,
    .accept = net_ib_accept,
    .regMr = net_ib_reg_mr,
    .regMrDmaBuf = net_ib_reg_mr_dmabuf,
    .deregMr = net_ib_dereg_mr,
    .isend = net_ib_legacy_isend_int,
    .irecv = net_ib_legacy_irecv_int,
    .iflush = net_ib_iflush,
    .test = net_ib_test,
    .closeSend = net_ib_close_send,
    .closeRecv = net_ib_close_recv,
    .closeListen = net_ib_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
};
