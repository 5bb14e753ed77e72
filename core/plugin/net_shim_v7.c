/* Adapts a v7 net plugin (ncclNetPlugin_v7) to the current view. Against the view, v7 lacks the
 * per-comm context, has int sizes in regMr/isend/irecv, and properties without regIsGlobal,
 * forceFlush, vProps and the byte limits. Entries with the current signature pass through. */
#include "plugin/net_shim_impl.h"
#include "util/check.h"

static net_shim_slot slot = NET_SHIM_SLOT_INITIALIZER;
#define RAW ((const ncclNet_v7_t*)slot.raw)

static ncclResult_t first_init(const void* raw, ncclDebugLogger_t log,
                               ncclProfilerCallback_t prof) {
  (void)prof;
  return ((const ncclNet_v7_t*)raw)->init(log);
}

static ncclResult_t v7_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config,
                            ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  (void)comm_id;
  return net_shim_old_init(&slot, first_init, ctx, config, log, prof);
}

static ncclResult_t v7_finalize(void* ctx) { return net_shim_old_finalize(&slot, ctx); }

static ncclResult_t v7_getProperties(int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v7_t p;
  WEFT_CHECK(RAW->getProperties(dev, &p));
  net_shim_props_defaults(props, dev);
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

static ncclResult_t v7_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  (void)ctx;
  return RAW->listen(dev, handle, listen_comm);
}

static ncclResult_t v7_connect(void* ctx, int dev, void* handle, void** send_comm,
                               ncclNetDeviceHandle_v12_t** dev_comm) {
  (void)ctx;
  return RAW->connect(dev, handle, send_comm, dev_comm);
}

static ncclResult_t v7_regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  int n;
  WEFT_CHECK(net_shim_int_size(7, "regMr", size, &n));
  return RAW->regMr(comm, data, n, type, mhandle);
}

static ncclResult_t v7_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                             void* phandle, void** request) {
  (void)phandle;
  int n;
  WEFT_CHECK(net_shim_int_size(7, "isend", size, &n));
  return RAW->isend(send_comm, data, n, tag, mhandle, request);
}

static ncclResult_t v7_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                             void** mhandles, void** phandles, void** request) {
  (void)phandles;
  int isizes[NET_SHIM_MAX_RECVS];
  WEFT_CHECK(net_shim_int_sizes(7, n, sizes, isizes));
  net_shim_clear_recv_hint(request);
  return RAW->irecv(recv_comm, n, data, isizes, tags, mhandles, request);
}

ncclResult_t net_shim_bind_v7(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v7_t* raw = rawp;
  return net_shim_old_bind(&slot, raw, 7, raw->name, raw->init != NULL, v7_init, v7_finalize,
                           out, why, whylen);
}

/* After the plugin's init: the table must be complete now (the slot is bound). */
ncclResult_t net_shim_adapt_v7(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v7_t* raw = rawp;
  const char* missing;
  NET_SHIM_MANDATORY(raw, missing);
  if (missing) return net_shim_missing(missing, why, whylen);
  *out = (weft_net_view){
      .version = 7,
      .raw = raw,
      .api =
          {
              .name = raw->name,
              .init = v7_init,
              .devices = raw->devices,
              .getProperties = v7_getProperties,
              .listen = v7_listen,
              .connect = v7_connect,
              .accept = raw->accept,
              .regMr = v7_regMr,
              .regMrDmaBuf = raw->regMrDmaBuf ? raw->regMrDmaBuf : net_stub_regMrDmaBuf,
              .deregMr = raw->deregMr,
              .isend = v7_isend,
              .irecv = v7_irecv,
              .iflush = raw->iflush,
              .test = raw->test,
              .closeSend = raw->closeSend,
              .closeRecv = raw->closeRecv,
              .closeListen = raw->closeListen,
              .getDeviceMr = raw->getDeviceMr ? raw->getDeviceMr : net_stub_getDeviceMr,
              .irecvConsumed = raw->irecvConsumed ? raw->irecvConsumed : net_stub_irecvConsumed,
              .makeVDevice = net_stub_makeVDevice,
              .finalize = v7_finalize,
              .setNetAttr = net_stub_setNetAttr,
          },
  };
  return ncclSuccess;
}

void net_shim_release_v7(void) { net_shim_slot_unbind(&slot); }
