/* What the v6..v10 exports share: the process-wide context their init creates once, entry points
 * whose argument types differ from v11 only in width or in a missing context, and straight calls
 * for the entries every version kept as they are. All of it goes through the plugin's v11 table,
 * weft_net_export_target.net. */
#include <pthread.h>

#include "net_export.h"

#define NX_WARN(fmt, ...)                                                            \
  weft_net_export_target.logger()(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "NET/%s: " fmt, \
                                  weft_net_export_name, __VA_ARGS__)

static const ncclNet_v11_t* net(void) { return weft_net_export_target.net; }

static pthread_mutex_t legacy_lock = PTHREAD_MUTEX_INITIALIZER;
static void* legacy_ctx;
static int legacy_inits;

ncclResult_t net_export_legacy_init_prof(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&legacy_lock);
  if (legacy_ctx == NULL) {
    void* ctx = NULL;
    res = net()->init(&ctx, 0, NULL, logger, prof);
    if (res == ncclSuccess) __atomic_store_n(&legacy_ctx, ctx, __ATOMIC_RELEASE);
  } else {
    weft_net_export_target.set_logger(logger);
  }
  if (res == ncclSuccess) legacy_inits++;
  pthread_mutex_unlock(&legacy_lock);
  return res;
}

ncclResult_t net_export_legacy_init(ncclDebugLogger_t logger) {
  return net_export_legacy_init_prof(logger, NULL);
}

void* net_export_legacy_ctx(void) { return __atomic_load_n(&legacy_ctx, __ATOMIC_ACQUIRE); }

ncclResult_t net_export_legacy_listen(int dev, void* handle, void** listen_comm) {
  return net()->listen(net_export_legacy_ctx(), dev, handle, listen_comm);
}

ncclResult_t net_export_legacy_connect(int dev, void* handle, void** send_comm,
                                       ncclNetDeviceHandle_v11_t** dev_comm) {
  return net()->connect(net_export_legacy_ctx(), dev, handle, send_comm, dev_comm);
}

ncclResult_t net_export_legacy_reg_mr_int(void* comm, void* data, int size, int type,
                                          void** mhandle) {
  if (size < 0) {
    NX_WARN("regMr: negative size %d", size);
    return ncclInternalError;
  }
  return net()->regMr(comm, data, (size_t)size, type, mhandle);
}

ncclResult_t net_export_legacy_isend_int(void* send_comm, void* data, int size, int tag,
                                         void* mhandle, void** request) {
  if (size < 0) {
    NX_WARN("isend: negative size %d", size);
    return ncclInternalError;
  }
  return net()->isend(send_comm, data, (size_t)size, tag, mhandle, NULL, request);
}

ncclResult_t net_export_legacy_irecv_int(void* recv_comm, int n, void** data, int* sizes,
                                         int* tags, void** mhandles, void** request) {
  if (n < 1 || n > WEFT_NET_EXPORT_MAX_RECVS || sizes == NULL) {
    NX_WARN("irecv: n = %d (1 to %d) with sizes %p", n, WEFT_NET_EXPORT_MAX_RECVS, (void*)sizes);
    return ncclInternalError;
  }
  size_t wide[WEFT_NET_EXPORT_MAX_RECVS];
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      NX_WARN("irecv: negative size %d for receive %d", sizes[i], i);
      return ncclInternalError;
    }
    wide[i] = (size_t)sizes[i];
  }
  return net()->irecv(recv_comm, n, data, wide, tags, mhandles, NULL, request);
}

ncclResult_t net_export_legacy_isend(void* send_comm, void* data, size_t size, int tag,
                                     void* mhandle, void** request) {
  return net()->isend(send_comm, data, size, tag, mhandle, NULL, request);
}

ncclResult_t net_export_legacy_irecv(void* recv_comm, int n, void** data, size_t* sizes,
                                     int* tags, void** mhandles, void** request) {
  return net()->irecv(recv_comm, n, data, sizes, tags, mhandles, NULL, request);
}

ncclResult_t net_export_devices(int* ndev) { return net()->devices(ndev); }

ncclResult_t net_export_accept(void* listen_comm, void** recv_comm,
                               ncclNetDeviceHandle_v11_t** dev_comm) {
  return net()->accept(listen_comm, recv_comm, dev_comm);
}

ncclResult_t net_export_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return net()->regMr(comm, data, size, type, mhandle);
}

ncclResult_t net_export_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                      uint64_t offset, int fd, void** mhandle) {
  return net()->regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
}

ncclResult_t net_export_dereg_mr(void* comm, void* mhandle) {
  return net()->deregMr(comm, mhandle);
}

ncclResult_t net_export_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                              void* phandle, void** request) {
  return net()->isend(send_comm, data, size, tag, mhandle, phandle, request);
}

ncclResult_t net_export_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                              void** mhandles, void** phandles, void** request) {
  return net()->irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
}

ncclResult_t net_export_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                               void** request) {
  return net()->iflush(recv_comm, n, data, sizes, mhandles, request);
}

ncclResult_t net_export_test(void* request, int* done, int* sizes) {
  return net()->test(request, done, sizes);
}

ncclResult_t net_export_close_send(void* send_comm) { return net()->closeSend(send_comm); }
ncclResult_t net_export_close_recv(void* recv_comm) { return net()->closeRecv(recv_comm); }
ncclResult_t net_export_close_listen(void* listen_comm) {
  return net()->closeListen(listen_comm);
}
