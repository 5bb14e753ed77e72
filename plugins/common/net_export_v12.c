/* ncclNetPlugin_v12 (NCCL 2.30): the plugin's v11 table with v12's property and virtual-device
 * types. The calls are v11's, so the table is filled from the v11 one when the library loads
 * (a constructor: v11's optional entries may be NULL, and v12's must then be NULL too); only
 * init, getProperties, makeVDevice and setNetAttr go through an adapter. Properties gain the
 * device's rail and plane ids: the plugin's rail_plane hook answers them where it knows the
 * topology, else they are NCCL_NET_ID_UNDEF. A v12 virtual device may name up to 8 devices; the
 * v11 implementation fuses at most 4, so a larger one is refused with ncclInvalidArgument. */
#include <string.h>

#include "net_export.h"

WEFT_NET_EXPORT ncclNet_v12_t ncclNetPlugin_v12;

static const ncclNet_v11_t* net(void) { return weft_net_export_target.net; }

static ncclResult_t v12_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config,
                             ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  ncclNetCommConfig_v11_t c11;
  if (config) c11.trafficClass = config->trafficClass;
  return net()->init(ctx, comm_id, config ? &c11 : NULL, logger, prof);
}

static ncclResult_t v12_get_properties(int dev, ncclNetProperties_v12_t* props) {
  if (props == NULL) return ncclInvalidArgument;
  ncclNetProperties_v11_t p;
  ncclResult_t res = net()->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof *props);
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
  for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC_V11; i++) props->vProps.devs[i] = p.vProps.devs[i];
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  props->maxMultiRequestSize = p.maxMultiRequestSize;
  props->railId = NCCL_NET_ID_UNDEF;
  props->planeId = NCCL_NET_ID_UNDEF;
  if (weft_net_export_target.rail_plane)
    weft_net_export_target.rail_plane(dev, &props->railId, &props->planeId);
  return ncclSuccess;
}

static ncclResult_t v12_make_vdevice(int* d, ncclNetVDeviceProps_v12_t* props) {
  if (d == NULL || props == NULL) return ncclInvalidArgument;
  if (props->ndevs < 0 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V11) {
    ncclDebugLogger_t log = weft_net_export_target.logger();
    if (log)
      log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
          "NET/%s: makeVDevice: %d devices; this plugin fuses 1 to %d", weft_net_export_name,
          props->ndevs, NCCL_NET_MAX_DEVS_PER_NIC_V11);
    return ncclInvalidArgument;
  }
  ncclNetVDeviceProps_v11_t p;
  p.ndevs = props->ndevs;
  for (int i = 0; i < p.ndevs; i++) p.devs[i] = props->devs[i];
  return net()->makeVDevice(d, &p);
}

static ncclResult_t v12_set_net_attr(void* ctx, ncclNetAttr_v12_t* attr) {
  if (attr == NULL) return net()->setNetAttr(ctx, NULL);
  ncclNetAttr_v11_t a;
  a.sendCommAttr.maxConcurrentPeers = attr->sendCommAttr.maxConcurrentPeers;
  a.sendCommAttr.minConcurrentPeers = attr->sendCommAttr.minConcurrentPeers;
  a.sendCommAttr.maxFlowsPerPeer = attr->sendCommAttr.maxFlowsPerPeer;
  a.sendCommAttr.minFlowsPerPeer = attr->sendCommAttr.minFlowsPerPeer;
  a.recvCommAttr.maxConcurrentPeers = attr->recvCommAttr.maxConcurrentPeers;
  a.recvCommAttr.minConcurrentPeers = attr->recvCommAttr.minConcurrentPeers;
  a.recvCommAttr.maxFlowsPerPeer = attr->recvCommAttr.maxFlowsPerPeer;
  a.recvCommAttr.minFlowsPerPeer = attr->recvCommAttr.minFlowsPerPeer;
  a.op = attr->op;
  a.algo = attr->algo;
  a.proto = attr->proto;
  return net()->setNetAttr(ctx, &a);
}

__attribute__((constructor)) static void v12_fill(void) {
  const ncclNet_v11_t* n = net();
  ncclNet_v12_t* t = &ncclNetPlugin_v12;
  t->name = weft_net_export_name;
  t->init = v12_init;
  t->devices = n->devices;
  t->getProperties = v12_get_properties;
  t->listen = n->listen;
  t->connect = n->connect;
  t->accept = n->accept;
  t->regMr = n->regMr;
  t->regMrDmaBuf = n->regMrDmaBuf;
  t->deregMr = n->deregMr;
  t->isend = n->isend;
  t->irecv = n->irecv;
  t->iflush = n->iflush;
  t->test = n->test;
  t->closeSend = n->closeSend;
  t->closeRecv = n->closeRecv;
  t->closeListen = n->closeListen;
  t->getDeviceMr = n->getDeviceMr;
  t->irecvConsumed = n->irecvConsumed;
  t->makeVDevice = n->makeVDevice ? v12_make_vdevice : NULL;
  t->finalize = n->finalize;
  t->setNetAttr = n->setNetAttr ? v12_set_net_attr : NULL;
}
