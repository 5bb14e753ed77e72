/* Adapts a v10 net plugin (ncclNetPlugin_v10) to the current view. v10 takes the comm config in
 * connect rather than init: the view's init keeps a copy in the per-comm ctx and connect hands
 * it over. Otherwise v10 lacks only the per-comm init (it runs once), finalize, setNetAttr and
 * maxMultiRequestSize; isend/irecv already have the current signature. */
#include <string.h>

#include "plugin/net_shim_impl.h"
#include "util/log.h"
#include "util/check.h"

static net_shim_slot slot = NET_SHIM_SLOT_INITIALIZER;
#define RAW ((const ncclNet_v10_t*)slot.raw)

static ncclResult_t first_init(const void* raw, ncclDebugLogger_t log,
                               ncclProfilerCallback_t prof) {
  return ((const ncclNet_v10_t*)raw)->init(log, prof);
}

static ncclResult_t v10_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config,
                             ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  (void)comm_id;
  return net_shim_old_init(&slot, first_init, ctx, config, log, prof);
}

static ncclResult_t v10_finalize(void* ctx) { return net_shim_old_finalize(&slot, ctx); }

static ncclResult_t v10_getProperties(int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v10_t p;
  WEFT_CHECK(RAW->getProperties(dev, &p));
  net_shim_props_defaults(props, dev);
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
  memcpy(props->vProps.devs, p.vProps.devs, sizeof p.vProps.devs);
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  return ncclSuccess;
}

static ncclResult_t v10_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  (void)ctx;
  return RAW->listen(dev, handle, listen_comm);
}

static ncclResult_t v10_connect(void* ctx, int dev, void* handle, void** send_comm,
                                ncclNetDeviceHandle_v12_t** dev_comm) {
  return RAW->connect(dev, net_shim_ctx_config(ctx), handle, send_comm, dev_comm);
}

static ncclResult_t v10_makeVDevice(int* d, ncclNetVDeviceProps_v12_t* props) {
  if (props == NULL) return ncclInvalidArgument;
  if (props->ndevs < 0 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V10) {
    WARN("NET/Plugin: %s (v10) fuses at most %d devices; a virtual device of %d is refused",
         RAW->name, NCCL_NET_MAX_DEVS_PER_NIC_V10, props->ndevs);
    return ncclInvalidArgument;
  }
  ncclNetVDeviceProps_v10_t p;
  memset(&p, 0, sizeof p);
  p.ndevs = props->ndevs;
  memcpy(p.devs, props->devs, sizeof p.devs);
  return RAW->makeVDevice(d, &p);
}

ncclResult_t net_shim_bind_v10(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v10_t* raw = rawp;
  return net_shim_old_bind(&slot, raw, 10, raw->name, raw->init != NULL, v10_init, v10_finalize,
                           out, why, whylen);
}

/* After the plugin's init: the table must be complete now (the slot is bound). */
ncclResult_t net_shim_adapt_v10(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v10_t* raw = rawp;
  const char* missing;
  NET_SHIM_MANDATORY(raw, missing);
  if (missing) return net_shim_missing(missing, why, whylen);
  *out = (weft_net_view){
      .version = 10,
      .raw = raw,
      .api =
          {
              .name = raw->name,
              .init = v10_init,
              .devices = raw->devices,
              .getProperties = v10_getProperties,
              .listen = v10_listen,
              .connect = v10_connect,
              .accept = raw->accept,
              .regMr = raw->regMr,
              .regMrDmaBuf = raw->regMrDmaBuf ? raw->regMrDmaBuf : net_stub_regMrDmaBuf,
              .deregMr = raw->deregMr,
              .isend = raw->isend,
              .irecv = raw->irecv,
              .iflush = raw->iflush,
              .test = raw->test,
              .closeSend = raw->closeSend,
              .closeRecv = raw->closeRecv,
              .closeListen = raw->closeListen,
              .getDeviceMr = raw->getDeviceMr ? raw->getDeviceMr : net_stub_getDeviceMr,
              .irecvConsumed = raw->irecvConsumed ? raw->irecvConsumed : net_stub_irecvConsumed,
              .makeVDevice = raw->makeVDevice ? v10_makeVDevice : net_stub_makeVDevice,
              .finalize = v10_finalize,
              .setNetAttr = net_stub_setNetAttr,
          },
  };
  return ncclSuccess;
}

void net_shim_release_v10(void) { net_shim_slot_unbind(&slot); }
