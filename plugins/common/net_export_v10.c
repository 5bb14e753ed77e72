/* ncclNetPlugin_v10 (NCCL 2.26–2.27): init once with a profiler callback (kept: the plugin's
 * NetPlugin events go through it), the traffic class arrives with each connect, properties
 * without maxMultiRequestSize. */
#include "net_export.h"

static ncclResult_t v10_init(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  return net_export_legacy_init_prof(logger, prof);
}

static ncclResult_t v10_get_properties(int dev, ncclNetProperties_v10_t* props) {
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
  for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC_V10; i++) props->vProps.devs[i] = p.vProps.devs[i];
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  return ncclSuccess;
}

static ncclResult_t v10_connect(int dev, ncclNetCommConfig_v10_t* config, void* handle,
                                void** send_comm, ncclNetDeviceHandle_v10_t** dev_comm) {
  return weft_net_export_target.connect_tc(
      net_export_legacy_ctx(), dev, handle, send_comm, dev_comm,
      config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF);
}

WEFT_NET_EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = weft_net_export_name,
    .init = v10_init,
    .devices = net_export_devices,
    .getProperties = v10_get_properties,
    .listen = net_export_legacy_listen,
    .connect = v10_connect,
    .accept = net_export_accept,
    .regMr = net_export_reg_mr,
    .regMrDmaBuf = net_export_reg_mr_dmabuf,
    .deregMr = net_export_dereg_mr,
    .isend = net_export_isend,
    .irecv = net_export_irecv,
    .iflush = net_export_iflush,
    .test = net_export_test,
    .closeSend = net_export_close_send,
    .closeRecv = net_export_close_recv,
    .closeListen = net_export_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
