/* Adapts a v9 net plugin (ncclNetPlugin_v9) to the current view. Against the view, v9 lacks the
 * per-comm context, the profiler handles of isend/irecv and maxMultiRequestSize; its sizes are
 * already size_t and it passes the optional-receive-completion hint through. Entries with the
 * current signature pass through. */
#include <string.h>

#include "plugin/net_shim_impl.h"
#include "util/log.h"
#include "util/check.h"

static net_shim_slot slot = NET_SHIM_SLOT_INITIALIZER;
#define RAW ((const ncclNet_v9_t*)slot.raw)

static ncclResult_t first_init(const void* raw, ncclDebugLogger_t log,
                               ncclProfilerCallback_t prof) {
  (void)prof;
  return ((const ncclNet_v9_t*)raw)->init(log);
}

static ncclResult_t v9_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config,
                            ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  (void)comm_id;
  return net_shim_old_init(&slot, first_init, ctx, config, log, prof);
}

static ncclResult_t v9_finalize(void* ctx) { return net_shim_old_finalize(&slot, ctx); }

static ncclResult_t v9_getProperties(int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v9_t p;
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

static ncclResult_t v9_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  (void)ctx;
  return RAW->listen(dev, handle, listen_comm);
}

static ncclResult_t v9_connect(void* ctx, int dev, void* handle, void** send_comm,
                               ncclNetDeviceHandle_v12_t** dev_comm) {
  (void)ctx;
  return RAW->connect(dev, handle, send_comm, dev_comm);
}

static ncclResult_t v9_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                             void* phandle, void** request) {
  (void)phandle;
  return RAW->isend(send_comm, data, size, tag, mhandle, request);
}

static ncclResult_t v9_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                             void** mhandles, void** phandles, void** request) {
  (void)phandles;
  return RAW->irecv(recv_comm, n, data, sizes, tags, mhandles, request);
}

static ncclResult_t v9_makeVDevice(int* d, ncclNetVDeviceProps_v12_t* props) {
  if (props == NULL) return ncclInvalidArgument;
  if (props->ndevs < 0 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V9) {
    WARN("NET/Plugin: %s (v9) fuses at most %d devices; a virtual device of %d is refused",
         RAW->name, NCCL_NET_MAX_DEVS_PER_NIC_V9, props->ndevs);
    return ncclInvalidArgument;
  }
  ncclNetVDeviceProps_v9_t p;
  memset(&p, 0, sizeof p);
  p.ndevs = props->ndevs;
  memcpy(p.devs, props->devs, sizeof p.devs);
  return RAW->makeVDevice(d, &p);
}

ncclResult_t net_shim_bind_v9(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v9_t* raw = rawp;
  return net_shim_old_bind(&slot, raw, 9, raw->name, raw->init != NULL, v9_init, v9_finalize,
                           out, why, whylen);
}

/* After the plugin's init: the table must be complete now (the slot is bound). */
ncclResult_t net_shim_adapt_v9(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v9_t* raw = rawp;
  const char* missing;
  NET_SHIM_MANDATORY(raw, missing);
  if (missing) return net_shim_missing(missing, why, whylen);
  *out = (weft_net_view){
      .version = 9,
      .raw = raw,
      .api =
          {
              .name = raw->name,
              .init = v9_init,
              .devices = raw->devices,
              .getProperties = v9_getProperties,
              .listen = v9_listen,
              .connect = v9_connect,
              .accept = raw->accept,
              .regMr = raw->regMr,
              .regMrDmaBuf = raw->regMrDmaBuf ? raw->regMrDmaBuf : net_stub_regMrDmaBuf,
              .deregMr = raw->deregMr,
              .isend = v9_isend,
              .irecv = v9_irecv,
              .iflush = raw->iflush,
              .test = raw->test,
              .closeSend = raw->closeSend,
              .closeRecv = raw->closeRecv,
              .closeListen = raw->closeListen,
              .getDeviceMr = raw->getDeviceMr ? raw->getDeviceMr : net_stub_getDeviceMr,
              .irecvConsumed = raw->irecvConsumed ? raw->irecvConsumed : net_stub_irecvConsumed,
              .makeVDevice = raw->makeVDevice ? v9_makeVDevice : net_stub_makeVDevice,
              .finalize = v9_finalize,
              .setNetAttr = net_stub_setNetAttr,
          },
  };
  return ncclSuccess;
}

void net_shim_release_v9(void) { net_shim_slot_unbind(&slot); }
