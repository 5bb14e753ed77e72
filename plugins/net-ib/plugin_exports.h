/* libnccl-net-ib.so: one exported ncclNetPlugin_vN per ABI version (plugin_exports_vN.c), each
 * adapting the v11 implementation. Versions up to v10 have no per-communicator context: their
 * init runs the v11 init once, for a process-wide context that lives until exit (those ABIs
 * have no finalize); later inits only count. These files are not part of weft_net_ib_impl. */
#ifndef WEFT_NET_IB_PLUGIN_EXPORTS_H
#define WEFT_NET_IB_PLUGIN_EXPORTS_H

#include "net_ib_internal.h"

#define IB_EXPORT __attribute__((visibility("default")))

extern IB_EXPORT ncclNet_v11_t ncclNetPlugin_v11;
extern IB_EXPORT ncclNet_v10_t ncclNetPlugin_v10;
extern IB_EXPORT ncclNet_v9_t ncclNetPlugin_v9;
extern IB_EXPORT ncclNet_v8_t ncclNetPlugin_v8;
extern IB_EXPORT ncclNet_v7_t ncclNetPlugin_v7;
extern IB_EXPORT ncclNet_v6_t ncclNetPlugin_v6;

/* plugin_exports_legacy.c: what versions 6..10 share. */
ncclResult_t net_ib_legacy_init(ncclDebugLogger_t logger);
void* net_ib_legacy_ctx(void);
ncclResult_t net_ib_legacy_listen(int dev, void* handle, void** listen_comm);
ncclResult_t net_ib_legacy_connect(int dev, void* handle, void** send_comm,
                                   ncclNetDeviceHandle_v11_t** dev_comm);
/* int-sized entries (v6..v8): a negative size is refused. */
ncclResult_t net_ib_legacy_reg_mr_int(void* comm, void* data, int size, int type, void** mhandle);
ncclResult_t net_ib_legacy_isend_int(void* send_comm, void* data, int size, int tag, void* mhandle,
                                     void** request);
ncclResult_t net_ib_legacy_irecv_int(void* recv_comm, int n, void** data, int* sizes, int* tags,
                                     void** mhandles, void** request);
/* size_t entries without profiler handles (v9). */
ncclResult_t net_ib_legacy_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                                 void** request);
ncclResult_t net_ib_legacy_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                                 void** mhandles, void** request);

#endif
