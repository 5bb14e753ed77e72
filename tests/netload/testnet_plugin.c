/* A net plugin for the loader tests: it moves no data, it counts calls and records arguments
 * in testnet_stats. Built several times (tests/netload/netload.cmake) with options:
 *   TESTNET_NAME "x"      the name every exported table carries
 *   TESTNET_V6/V8/V10/V11 which ncclNetPlugin_vN tables to export
 *   TESTNET_V6_OLD        the v6 table is named TESTNET_NAME "Old"
 *   TESTNET_INIT_FAIL     init returns ncclSystemError
 *   TESTNET_ZERO_DEVS     devices() reports 0
 *   TESTNET_NULL_ISEND    isend is NULL in every table
 * Without any TESTNET_Vn it exports no plugin symbol at all. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_net.h"
#include "testnet.h"

#define EXPORT __attribute__((visibility("default")))

/* Each variant uses a different subset of the helpers below. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"

EXPORT testnet_stats_t testnet_stats;

#ifndef TESTNET_NAME
#define TESTNET_NAME "Test"
#endif
#ifdef TESTNET_V6_OLD
#define TESTNET_V6_NAME TESTNET_NAME "Old"
#else
#define TESTNET_V6_NAME TESTNET_NAME
#endif

static char dev_name[] = "testnet0";
static int listen_obj, send_obj, recv_obj, mr_obj, req_obj;

#ifdef TESTNET_INIT_FAIL
#define INIT_RESULT ncclSystemError
#else
#define INIT_RESULT ncclSuccess
#endif

static ncclResult_t t_devices(int* ndev) {
  testnet_stats.devices_calls++;
#ifdef TESTNET_ZERO_DEVS
  *ndev = 0;
#else
  *ndev = 2;
#endif
  return ncclSuccess;
}

static ncclResult_t t_listen_common(int dev, void* handle, void** listen_comm) {
  (void)dev;
  testnet_stats.listen_calls++;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  *listen_comm = &listen_obj;
  return ncclSuccess;
}

static ncclResult_t t_connect_common(void** send_comm) {
  testnet_stats.connect_calls++;
  *send_comm = &send_obj;
  return ncclSuccess;
}

static ncclResult_t t_accept_common(void** recv_comm) {
  testnet_stats.accept_calls++;
  *recv_comm = &recv_obj;
  return ncclSuccess;
}

static ncclResult_t t_regmr_common(long long size, void** mhandle) {
  testnet_stats.regmr_calls++;
  testnet_stats.last_regmr_size = size;
  *mhandle = &mr_obj;
  return ncclSuccess;
}

static ncclResult_t t_deregMr(void* comm, void* mhandle) {
  (void)comm, (void)mhandle;
  return ncclSuccess;
}

static ncclResult_t t_isend_common(long long size, void** request) {
  testnet_stats.isend_calls++;
  testnet_stats.last_isend_size = size;
  *request = &req_obj;
  return ncclSuccess;
}

static void t_irecv_begin(int n, void** request) {
  testnet_stats.irecv_calls++;
  testnet_stats.last_irecv_n = n;
  testnet_stats.last_irecv_request_in = *request;
}

static ncclResult_t t_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                             void** request) {
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL;
  return ncclSuccess;
}

static ncclResult_t t_test(void* request, int* done, int* sizes) {
  (void)request;
  testnet_stats.test_calls++;
  *done = 1;
  if (sizes) sizes[0] = (int)testnet_stats.last_isend_size;
  return ncclSuccess;
}

static ncclResult_t t_close(void* comm) {
  (void)comm;
  testnet_stats.close_calls++;
  return ncclSuccess;
}

static ncclResult_t t_regMrDmaBuf(void* comm, void* data, size_t size, int type,
                                  uint64_t offset, int fd, void** mhandle) {
  (void)comm, (void)data, (void)type, (void)offset, (void)fd;
  return t_regmr_common((long long)size, mhandle);
}

/* Fields common to every version's properties. */
#define FILL_COMMON_PROPS(p, dev)                                                         \
  do {                                                                                    \
    memset((p), 0, sizeof *(p));                                                          \
    (p)->name = dev_name;                                                                 \
    (p)->pciPath = NULL;                                                                  \
    (p)->guid = 0x1234 + (uint64_t)(dev);                                                 \
    (p)->ptrSupport = NCCL_PTR_HOST;                                                      \
    (p)->speed = TESTNET_DUMMY_SIZE;                                                      \
    (p)->port = (dev);                                                                    \
    (p)->latency = 1.5f;                                                                  \
    (p)->maxComms = 65536;                                                                \
    (p)->maxRecvs = 4;                                                                    \
  } while (0)

#ifdef TESTNET_NULL_ISEND
#define ISEND(fn) NULL
#else
#define ISEND(fn) fn
#endif

/* ---------------- v6 ---------------- */
#ifdef TESTNET_V6
static ncclResult_t v6_init(ncclDebugLogger_t log) {
  testnet_stats.init_calls++;
  testnet_stats.logger_given = log != NULL;
  return INIT_RESULT;
}
static ncclResult_t v6_getProperties(int dev, ncclNetProperties_v6_t* p) {
  FILL_COMMON_PROPS(p, dev);
  return ncclSuccess;
}
static ncclResult_t v6_listen(int dev, void* handle, void** l) {
  return t_listen_common(dev, handle, l);
}
static ncclResult_t v6_connect(int dev, void* handle, void** s) {
  (void)dev, (void)handle;
  return t_connect_common(s);
}
static ncclResult_t v6_accept(void* l, void** r) {
  (void)l;
  return t_accept_common(r);
}
static ncclResult_t v6_regMr(void* comm, void* data, int size, int type, void** mh) {
  (void)comm, (void)data, (void)type;
  return t_regmr_common(size, mh);
}
static ncclResult_t v6_isend(void* s, void* data, int size, int tag, void* mh, void** req) {
  (void)s, (void)data, (void)tag, (void)mh;
  return t_isend_common(size, req);
}
static ncclResult_t v6_irecv(void* r, int n, void** data, int* sizes, int* tags, void** mh,
                             void** req) {
  (void)r, (void)data, (void)tags, (void)mh;
  t_irecv_begin(n, req);
  for (int i = 0; i < n && i < 4; i++) testnet_stats.last_irecv_sizes[i] = sizes[i];
  *req = &req_obj;
  return ncclSuccess;
}
EXPORT const ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = TESTNET_V6_NAME,
    .init = v6_init,
    .devices = t_devices,
    .getProperties = v6_getProperties,
    .listen = v6_listen,
    .connect = v6_connect,
    .accept = v6_accept,
    .regMr = v6_regMr,
    .regMrDmaBuf = NULL,
    .deregMr = t_deregMr,
    .isend = ISEND(v6_isend),
    .irecv = v6_irecv,
    .iflush = t_iflush,
    .test = t_test,
    .closeSend = t_close,
    .closeRecv = t_close,
    .closeListen = t_close,
};
#endif

/* ---------------- v8 ---------------- */
#ifdef TESTNET_V8
static ncclResult_t v8_init(ncclDebugLogger_t log) {
  testnet_stats.init_calls++;
  testnet_stats.logger_given = log != NULL;
  return INIT_RESULT;
}
static ncclResult_t v8_getProperties(int dev, ncclNetProperties_v8_t* p) {
  FILL_COMMON_PROPS(p, dev);
  p->regIsGlobal = 1;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  return ncclSuccess;
}
static ncclResult_t v8_listen(int dev, void* handle, void** l) {
  return t_listen_common(dev, handle, l);
}
static ncclResult_t v8_connect(int dev, void* handle, void** s, ncclNetDeviceHandle_v8_t** dc) {
  (void)dev, (void)handle, (void)dc;
  return t_connect_common(s);
}
static ncclResult_t v8_accept(void* l, void** r, ncclNetDeviceHandle_v8_t** dc) {
  (void)l, (void)dc;
  return t_accept_common(r);
}
static ncclResult_t v8_regMr(void* comm, void* data, size_t size, int type, void** mh) {
  (void)comm, (void)data, (void)type;
  return t_regmr_common((long long)size, mh);
}
static ncclResult_t v8_isend(void* s, void* data, int size, int tag, void* mh, void** req) {
  (void)s, (void)data, (void)tag, (void)mh;
  return t_isend_common(size, req);
}
static ncclResult_t v8_irecv(void* r, int n, void** data, int* sizes, int* tags, void** mh,
                             void** req) {
  (void)r, (void)data, (void)tags, (void)mh;
  t_irecv_begin(n, req);
  for (int i = 0; i < n && i < 4; i++) testnet_stats.last_irecv_sizes[i] = sizes[i];
  *req = &req_obj;
  return ncclSuccess;
}
EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = TESTNET_NAME,
    .init = v8_init,
    .devices = t_devices,
    .getProperties = v8_getProperties,
    .listen = v8_listen,
    .connect = v8_connect,
    .accept = v8_accept,
    .regMr = v8_regMr,
    .regMrDmaBuf = t_regMrDmaBuf,
    .deregMr = t_deregMr,
    .isend = ISEND(v8_isend),
    .irecv = v8_irecv,
    .iflush = t_iflush,
    .test = t_test,
    .closeSend = t_close,
    .closeRecv = t_close,
    .closeListen = t_close,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
};
#endif

/* ---------------- v10 ---------------- */
#ifdef TESTNET_V10
static ncclResult_t v10_init(ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  testnet_stats.init_calls++;
  testnet_stats.logger_given = log != NULL;
  testnet_stats.profiler_given = prof != NULL;
  return INIT_RESULT;
}
static ncclResult_t v10_getProperties(int dev, ncclNetProperties_v10_t* p) {
  FILL_COMMON_PROPS(p, dev);
  p->regIsGlobal = 1;
  p->forceFlush = 1;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = (size_t)4 << 30;
  p->maxCollBytes = (size_t)2 << 30;
  return ncclSuccess;
}
static ncclResult_t v10_listen(int dev, void* handle, void** l) {
  return t_listen_common(dev, handle, l);
}
static ncclResult_t v10_connect(int dev, ncclNetCommConfig_v10_t* config, void* handle,
                                void** s, ncclNetDeviceHandle_v10_t** dc) {
  (void)dev, (void)handle, (void)dc;
  testnet_stats.last_traffic_class = config ? config->trafficClass : -999;
  return t_connect_common(s);
}
static ncclResult_t v10_accept(void* l, void** r, ncclNetDeviceHandle_v10_t** dc) {
  (void)l, (void)dc;
  return t_accept_common(r);
}
static ncclResult_t v10_regMr(void* comm, void* data, size_t size, int type, void** mh) {
  (void)comm, (void)data, (void)type;
  return t_regmr_common((long long)size, mh);
}
static ncclResult_t v10_isend(void* s, void* data, size_t size, int tag, void* mh, void* ph,
                              void** req) {
  (void)s, (void)data, (void)tag, (void)mh, (void)ph;
  return t_isend_common((long long)size, req);
}
static ncclResult_t v10_irecv(void* r, int n, void** data, size_t* sizes, int* tags, void** mh,
                              void** ph, void** req) {
  (void)r, (void)data, (void)tags, (void)mh, (void)ph;
  t_irecv_begin(n, req);
  for (int i = 0; i < n && i < 4; i++) testnet_stats.last_irecv_sizes[i] = (long long)sizes[i];
  *req = &req_obj;
  return ncclSuccess;
}
EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = TESTNET_NAME,
    .init = v10_init,
    .devices = t_devices,
    .getProperties = v10_getProperties,
    .listen = v10_listen,
    .connect = v10_connect,
    .accept = v10_accept,
    .regMr = v10_regMr,
    .regMrDmaBuf = t_regMrDmaBuf,
    .deregMr = t_deregMr,
    .isend = ISEND(v10_isend),
    .irecv = v10_irecv,
    .iflush = t_iflush,
    .test = t_test,
    .closeSend = t_close,
    .closeRecv = t_close,
    .closeListen = t_close,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
#endif

/* ---------------- v11 ---------------- */
#ifdef TESTNET_V11
typedef struct {
  int traffic_class;
} v11_ctx;
static ncclResult_t v11_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                             ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  testnet_stats.init_calls++;
  testnet_stats.logger_given = log != NULL;
  testnet_stats.profiler_given = prof != NULL;
  testnet_stats.last_comm_id = comm_id;
  testnet_stats.last_traffic_class = config ? config->trafficClass : -999;
  if (INIT_RESULT != ncclSuccess) return INIT_RESULT;
  v11_ctx* c = malloc(sizeof *c);
  if (c == NULL) return ncclSystemError;
  c->traffic_class = testnet_stats.last_traffic_class;
  *ctx = c;
  return ncclSuccess;
}
static ncclResult_t v11_finalize(void* ctx) {
  testnet_stats.finalize_calls++;
  free(ctx);
  return ncclSuccess;
}
static ncclResult_t v11_getProperties(int dev, ncclNetProperties_v11_t* p) {
  FILL_COMMON_PROPS(p, dev);
  p->regIsGlobal = 1;
  p->forceFlush = 1;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = (size_t)4 << 30;
  p->maxCollBytes = (size_t)2 << 30;
  p->maxMultiRequestSize = 4;
  return ncclSuccess;
}
static ncclResult_t v11_listen(void* ctx, int dev, void* handle, void** l) {
  (void)ctx;
  return t_listen_common(dev, handle, l);
}
static ncclResult_t v11_connect(void* ctx, int dev, void* handle, void** s,
                                ncclNetDeviceHandle_v11_t** dc) {
  (void)dev, (void)handle, (void)dc;
  testnet_stats.last_traffic_class = ctx ? ((v11_ctx*)ctx)->traffic_class : -999;
  return t_connect_common(s);
}
static ncclResult_t v11_accept(void* l, void** r, ncclNetDeviceHandle_v11_t** dc) {
  (void)l, (void)dc;
  return t_accept_common(r);
}
static ncclResult_t v11_regMr(void* comm, void* data, size_t size, int type, void** mh) {
  (void)comm, (void)data, (void)type;
  return t_regmr_common((long long)size, mh);
}
static ncclResult_t v11_isend(void* s, void* data, size_t size, int tag, void* mh, void* ph,
                              void** req) {
  (void)s, (void)data, (void)tag, (void)mh, (void)ph;
  return t_isend_common((long long)size, req);
}
static ncclResult_t v11_irecv(void* r, int n, void** data, size_t* sizes, int* tags, void** mh,
                              void** ph, void** req) {
  (void)r, (void)data, (void)tags, (void)mh, (void)ph;
  t_irecv_begin(n, req);
  for (int i = 0; i < n && i < 4; i++) testnet_stats.last_irecv_sizes[i] = (long long)sizes[i];
  *req = &req_obj;
  return ncclSuccess;
}
EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = TESTNET_NAME,
    .init = v11_init,
    .devices = t_devices,
    .getProperties = v11_getProperties,
    .listen = v11_listen,
    .connect = v11_connect,
    .accept = v11_accept,
    .regMr = v11_regMr,
    .regMrDmaBuf = t_regMrDmaBuf,
    .deregMr = t_deregMr,
    .isend = ISEND(v11_isend),
    .irecv = v11_irecv,
    .iflush = t_iflush,
    .test = t_test,
    .closeSend = t_close,
    .closeRecv = t_close,
    .closeListen = t_close,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = v11_finalize,
    .setNetAttr = NULL,
};
#endif

/* Keeps a symbol-less build (the "no symbol" variant) from being an empty library. */
EXPORT int testnet_has_no_plugin_symbol(void) {
#if defined(TESTNET_V6) || defined(TESTNET_V8) || defined(TESTNET_V10) || defined(TESTNET_V11)
  return 0;
#else
  return 1;
#endif
}
