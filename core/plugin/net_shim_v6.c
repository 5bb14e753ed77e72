/* Adapts a v6 net plugin (ncclNetPlugin_v6) to the current view. v6 has no per-comm context,
 * no device handles (connect/accept), int sizes in regMr/isend/irecv, and properties that stop
 * at maxRecvs. Entries with the current signature (devices, deregMr, iflush, test, close*,
 * regMrDmaBuf) are passed through; the rest forward to the struct in this file's slot. */
#include "plugin/net_shim_impl.h"
#include "util/check.h"

static net_shim_slot slot = NET_SHIM_SLOT_INITIALIZER;
#define RAW ((const ncclNet_v6_t*)slot.raw)

static ncclResult_t first_init(const void* raw, ncclDebugLogger_t log,
                               ncclProfilerCallback_t prof) {
  (void)prof;
  return ((const ncclNet_v6_t*)raw)->init(log);
}

static ncclResult_t v6_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config,
                            ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  (void)comm_id;
  return net_shim_old_init(&slot, first_init, ctx, config, log, prof);
}

static ncclResult_t v6_finalize(void* ctx) { return net_shim_old_finalize(&slot, ctx); }

static ncclResult_t v6_getProperties(int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v6_t p;
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
  return ncclSuccess;
}

static ncclResult_t v6_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  (void)ctx;
  return RAW->listen(dev, handle, listen_comm);
}

static ncclResult_t v6_connect(void* ctx, int dev, void* handle, void** send_comm,
                               ncclNetDeviceHandle_v12_t** dev_comm) {
  (void)ctx;
  if (dev_comm) *dev_comm = NULL;
  return RAW->connect(dev, handle, send_comm);
}

static ncclResult_t v6_accept(void* listen_comm, void** recv_comm,
                              ncclNetDeviceHandle_v12_t** dev_comm) {
  if (dev_comm) *dev_comm = NULL;
  return RAW->accept(listen_comm, recv_comm);
}

static ncclResult_t v6_regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  int n;
  WEFT_CHECK(net_shim_int_size(6, "regMr", size, &n));
  return RAW->regMr(comm, data, n, type, mhandle);
}

static ncclResult_t v6_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                             void* phandle, void** request) {
  (void)phandle;
  int n;
  WEFT_CHECK(net_shim_int_size(6, "isend", size, &n));
  return RAW->isend(send_comm, data, n, tag, mhandle, request);
}

static ncclResult_t v6_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                             void** mhandles, void** phandles, void** request) {
  (void)phandles;
  int isizes[NET_SHIM_MAX_RECVS];
  WEFT_CHECK(net_shim_int_sizes(6, n, sizes, isizes));
  net_shim_clear_recv_hint(request);
  return RAW->irecv(recv_comm, n, data, isizes, tags, mhandles, request);
}

ncclResult_t net_shim_bind_v6(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v6_t* raw = rawp;
  return net_shim_old_bind(&slot, raw, 6, raw->name, raw->init != NULL, v6_init, v6_finalize,
                           out, why, whylen);
}

/* After the plugin's init: the table must be complete now (the slot is bound). */
ncclResult_t net_shim_adapt_v6(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v6_t* raw = rawp;
  const char* missing;
  NET_SHIM_MANDATORY(raw, missing);
  if (missing) return net_shim_missing(missing, why, whylen);
  *out = (weft_net_view){
      .version = 6,
      .raw = raw,
      .api =
          {
              .name = raw->name,
              .init = v6_init,
              .devices = raw->devices,
              .getProperties = v6_getProperties,
              .listen = v6_listen,
              .connect = v6_connect,
              .accept = v6_accept,
              .regMr = v6_regMr,
              .regMrDmaBuf = raw->regMrDmaBuf ? raw->regMrDmaBuf : net_stub_regMrDmaBuf,
              .deregMr = raw->deregMr,
              .isend = v6_isend,
              .irecv = v6_irecv,
              .iflush = raw->iflush,
              .test = raw->test,
              .closeSend = raw->closeSend,
              .closeRecv = raw->closeRecv,
              .closeListen = raw->closeListen,
              .getDeviceMr = net_stub_getDeviceMr,
              .irecvConsumed = net_stub_irecvConsumed,
              .makeVDevice = net_stub_makeVDevice,
              .finalize = v6_finalize,
              .setNetAttr = net_stub_setNetAttr,
          },
  };
  return ncclSuccess;
}

void net_shim_release_v6(void) { net_shim_slot_unbind(&slot); }
