/* Broken: a v12 table (refnet's calls) whose device 0 reports railId -5, which is neither
 * NCCL_NET_ID_UNDEF nor an index. */
#include <string.h>

#include "refnet.h"

static ncclResult_t init12(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config,
                           ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  ncclNetCommConfig_v11_t c;
  if (config) c.trafficClass = config->trafficClass;
  return refnet_init(ctx, comm_id, config ? &c : NULL, log, prof);
}

static ncclResult_t props12(int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v11_t p;
  ncclResult_t r = refnet_getProperties(dev, &p);
  if (r != ncclSuccess) return r;
  memset(props, 0, sizeof *props);
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
  props->vProps.ndevs = p.vProps.ndevs;
  props->vProps.devs[0] = p.vProps.devs[0];
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  props->maxMultiRequestSize = p.maxMultiRequestSize;
  props->railId = dev == 0 ? -5 : NCCL_NET_ID_UNDEF;
  props->planeId = NCCL_NET_ID_UNDEF;
  return ncclSuccess;
}

__attribute__((visibility("default"))) const ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = "broken-badrail",
    .init = init12,
    .devices = refnet_devices,
    .getProperties = props12,
    .listen = refnet_listen,
    .connect = refnet_connect,
    .accept = refnet_accept,
    .regMr = refnet_regMr,
    .deregMr = refnet_deregMr,
    .isend = refnet_isend,
    .irecv = refnet_irecv,
    .iflush = refnet_iflush,
    .test = refnet_test,
    .closeSend = refnet_closeSend,
    .closeRecv = refnet_closeRecv,
    .closeListen = refnet_closeListen,
    .finalize = refnet_finalize,
};
