/* The other-ABI exports of a net plugin .so, written once for every plugin. net_export_vN.c
 * defines the exported ncclNetPlugin_vN (v6 … v10, and v12) by adapting the plugin's v11 table;
 * net_export_legacy.c holds what those versions share. A plugin links weft_net_export into its
 * .so and, in its plugin_exports.c, defines the two hidden objects below and its own
 * ncclNetPlugin_v11. Each .so links its own copy, so these globals are per plugin.
 *
 * Versions up to v10 have no per-communicator context: their init runs the v11 init once, for a
 * process-wide context that lives until exit (those ABIs have no finalize); later inits only
 * hand the plugin their logger. They offer no device offload and no NIC fusion (getDeviceMr,
 * irecvConsumed, makeVDevice are NULL). */
#ifndef WEFT_NET_EXPORT_H
#define WEFT_NET_EXPORT_H

#include "nccl_net.h"

#define WEFT_NET_EXPORT __attribute__((visibility("default")))
#define WEFT_NET_EXPORT_HIDDEN __attribute__((visibility("hidden")))

/* What a plugin provides. net: its v11 table; every entry from init to closeListen is set. */
struct weft_net_export_target {
  const ncclNet_v11_t* net;
  /* Makes logger the plugin's logger (a later legacy init's, after the first created the
   * context), and returns the one in use (the shared code's warnings go through it). */
  void (*set_logger)(ncclDebugLogger_t logger);
  ncclDebugLogger_t (*logger)(void);
  /* net->connect with the traffic class given per connect (v10), not at init (v11);
   * NCCL_NET_TRAFFIC_CLASS_UNDEF when v10's config is NULL. */
  ncclResult_t (*connect_tc)(void* ctx, int dev, void* handle, void** send_comm,
                             ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class);
  /* May be NULL: the rail and plane ids of device dev for v12's properties, written only where
   * the plugin knows them (they start at NCCL_NET_ID_UNDEF). */
  void (*rail_plane)(int dev, int16_t* rail_id, int16_t* plane_id);
};

/* Defined by the plugin (plugin_exports.c): the target, and the name of the exported tables
 * (the same as net->name; an array, so that static initializers can point at it). */
extern WEFT_NET_EXPORT_HIDDEN const struct weft_net_export_target weft_net_export_target;
extern WEFT_NET_EXPORT_HIDDEN const char weft_net_export_name[];

extern WEFT_NET_EXPORT ncclNet_v12_t ncclNetPlugin_v12; /* net_export_v12.c, over v11 */
extern WEFT_NET_EXPORT ncclNet_v11_t ncclNetPlugin_v11; /* the plugin's, in plugin_exports.c */
extern WEFT_NET_EXPORT ncclNet_v10_t ncclNetPlugin_v10;
extern WEFT_NET_EXPORT ncclNet_v9_t ncclNetPlugin_v9;
extern WEFT_NET_EXPORT ncclNet_v8_t ncclNetPlugin_v8;
extern WEFT_NET_EXPORT ncclNet_v7_t ncclNetPlugin_v7;
extern WEFT_NET_EXPORT ncclNet_v6_t ncclNetPlugin_v6;

/* The most receives one int-sized irecv (v6..v8) may group: maxRecvs of every weft plugin. */
#define WEFT_NET_EXPORT_MAX_RECVS 8

/* ---- net_export_legacy.c: what versions 6..10 share (hidden) ---- */
ncclResult_t net_export_legacy_init(ncclDebugLogger_t logger); /* v6..v9: no profFn */
/* v10: the first init's profFn goes to the process-wide context (NetPlugin events). */
ncclResult_t net_export_legacy_init_prof(ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
void* net_export_legacy_ctx(void);
ncclResult_t net_export_legacy_listen(int dev, void* handle, void** listen_comm);
ncclResult_t net_export_legacy_connect(int dev, void* handle, void** send_comm,
                                       ncclNetDeviceHandle_v11_t** dev_comm);
/* int-sized entries (v6..v8): a negative size is refused with ncclInternalError. */
ncclResult_t net_export_legacy_reg_mr_int(void* comm, void* data, int size, int type,
                                          void** mhandle);
ncclResult_t net_export_legacy_isend_int(void* send_comm, void* data, int size, int tag,
                                         void* mhandle, void** request);
ncclResult_t net_export_legacy_irecv_int(void* recv_comm, int n, void** data, int* sizes,
                                         int* tags, void** mhandles, void** request);
/* size_t entries without profiler handles (v9). */
ncclResult_t net_export_legacy_isend(void* send_comm, void* data, size_t size, int tag,
                                     void* mhandle, void** request);
ncclResult_t net_export_legacy_irecv(void* recv_comm, int n, void** data, size_t* sizes,
                                     int* tags, void** mhandles, void** request);
/* Entries whose v11 signature every older version kept: straight calls into the v11 table. */
ncclResult_t net_export_devices(int* ndev);
ncclResult_t net_export_accept(void* listen_comm, void** recv_comm,
                               ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t net_export_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t net_export_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                      uint64_t offset, int fd, void** mhandle);
ncclResult_t net_export_dereg_mr(void* comm, void* mhandle);
ncclResult_t net_export_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                              void* phandle, void** request);
ncclResult_t net_export_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                              void** mhandles, void** phandles, void** request);
ncclResult_t net_export_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                               void** request);
ncclResult_t net_export_test(void* request, int* done, int* sizes);
ncclResult_t net_export_close_send(void* send_comm);
ncclResult_t net_export_close_recv(void* recv_comm);
ncclResult_t net_export_close_listen(void* listen_comm);

#endif
