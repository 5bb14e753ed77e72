/* refnet: a small, correct TCP net plugin (ABI v11, loopback only) that the deliberately broken
 * test plugins wrap, each breaking one thing. Test-only: one device bound to 127.0.0.1, one TCP
 * connection per comm, every call non-blocking, progress made inside isend/irecv/test, grouped
 * receives matched by tag (maxRecvs 8), NULL requests past the request window.
 *
 * A broken plugin is one file:
 *   #include "refnet.h"
 *   static ncclResult_t my_test(void* r, int* done, int* sizes) { … }
 *   REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-x", .test = my_test)
 * Entries after the name replace refnet's. */
#ifndef WEFT_TEST_REFNET_H
#define WEFT_TEST_REFNET_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_net.h"

ncclResult_t refnet_init(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                         ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
ncclResult_t refnet_devices(int* ndev);
ncclResult_t refnet_getProperties(int dev, ncclNetProperties_v11_t* props);
ncclResult_t refnet_listen(void* ctx, int dev, void* handle, void** listenComm);
ncclResult_t refnet_connect(void* ctx, int dev, void* handle, void** sendComm,
                            ncclNetDeviceHandle_v11_t** sendDevComm);
ncclResult_t refnet_accept(void* listenComm, void** recvComm,
                           ncclNetDeviceHandle_v11_t** recvDevComm);
ncclResult_t refnet_regMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t refnet_deregMr(void* comm, void* mhandle);
ncclResult_t refnet_isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                          void* phandle, void** request);
ncclResult_t refnet_irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                          void** mhandles, void** phandles, void** request);
ncclResult_t refnet_iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                           void** request);
ncclResult_t refnet_test(void* request, int* done, int* sizes);
ncclResult_t refnet_closeSend(void* sendComm);
ncclResult_t refnet_closeRecv(void* recvComm);
ncclResult_t refnet_closeListen(void* listenComm);
ncclResult_t refnet_finalize(void* ctx);

/* For wrappers. isend that sends payload bytes but announces `reported` to the receiver. */
ncclResult_t refnet_isend_sized(void* sendComm, void* data, size_t payload, size_t reported,
                                int tag, void** request);
/* What a pending request is: 1 for a receive (posted sizes copied to posted, n to *n), 0 for a
 * send, -1 for an unknown pointer. */
int refnet_request_info(void* request, int* n, size_t* posted);
/* The TCP socket of a send or receive comm (a wrapper may pass its own bytes back on it: refnet
 * never reads on a send comm nor writes on a receive comm). */
int refnet_comm_fd(void* comm);

#define REFNET_V11_ENTRIES                                                                    \
  .init = refnet_init, .devices = refnet_devices, .getProperties = refnet_getProperties,     \
  .listen = refnet_listen, .connect = refnet_connect, .accept = refnet_accept,               \
  .regMr = refnet_regMr, .regMrDmaBuf = NULL, .deregMr = refnet_deregMr,                     \
  .isend = refnet_isend, .irecv = refnet_irecv, .iflush = refnet_iflush, .test = refnet_test, \
  .closeSend = refnet_closeSend, .closeRecv = refnet_closeRecv,                              \
  .closeListen = refnet_closeListen, .getDeviceMr = NULL, .irecvConsumed = NULL,             \
  .makeVDevice = NULL, .finalize = refnet_finalize, .setNetAttr = NULL

/* Defines the exported table `sym` (any symbol name) from refnet's entries, then the given
 * replacements (designated initializers; the later one wins). */
#define REFNET_EXPORT_V11(sym, plugin_name, ...)                                         \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Woverride-init\"")  \
  __attribute__((visibility("default"))) const ncclNet_v11_t sym = {                     \
      .name = plugin_name, REFNET_V11_ENTRIES, __VA_ARGS__};                             \
  _Pragma("GCC diagnostic pop")

#endif
