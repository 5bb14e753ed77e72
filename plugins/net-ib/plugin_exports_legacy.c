/* Shared pieces of the v6..v10 exports: the process-wide context their init creates once, and
 * entry points whose argument types differ from v11 only in width or in a missing context. */
#include <pthread.h>

#include "plugin_exports.h"

static pthread_mutex_t legacy_lock = PTHREAD_MUTEX_INITIALIZER;
static void* legacy_ctx;
static int legacy_inits;

ncclResult_t net_ib_legacy_init(ncclDebugLogger_t logger) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&legacy_lock);
  if (legacy_ctx == NULL) {
    void* ctx = NULL;
    res = net_ib_init(&ctx, 0, NULL, logger, NULL);
    if (res == ncclSuccess) __atomic_store_n(&legacy_ctx, ctx, __ATOMIC_RELEASE);
  } else {
    net_ib_set_logger(logger);
  }
  if (res == ncclSuccess) legacy_inits++;
  pthread_mutex_unlock(&legacy_lock);
  return res;
}

void* net_ib_legacy_ctx(void) { return __atomic_load_n(&legacy_ctx, __ATOMIC_ACQUIRE); }

ncclResult_t net_ib_legacy_listen(int dev, void* handle, void** listen_comm) {
  return net_ib_listen(net_ib_legacy_ctx(), dev, handle, listen_comm);
}

ncclResult_t net_ib_legacy_connect(int dev, void* handle, void** send_comm,
                                   ncclNetDeviceHandle_v11_t** dev_comm) {
  return net_ib_connect(net_ib_legacy_ctx(), dev, handle, send_comm, dev_comm);
}

ncclResult_t net_ib_legacy_reg_mr_int(void* comm, void* data, int size, int type, void** mhandle) {
  if (size < 0) {
    IB_WARN("NET/IB: regMr: negative size %d", size);
    return ncclInternalError;
  }
  return net_ib_reg_mr(comm, data, (size_t)size, type, mhandle);
}

ncclResult_t net_ib_legacy_isend_int(void* send_comm, void* data, int size, int tag, void* mhandle,
                                     void** request) {
  if (size < 0) {
    IB_WARN("NET/IB: isend: negative size %d", size);
    return ncclInternalError;
  }
  return net_ib_isend(send_comm, data, (size_t)size, tag, mhandle, NULL, request);
}

ncclResult_t net_ib_legacy_irecv_int(void* recv_comm, int n, void** data, int* sizes, int* tags,
                                     void** mhandles, void** request) {
  if (n < 1 || n > IB_MAX_RECVS || sizes == NULL) {
    IB_WARN("NET/IB: irecv: n = %d (1 to %d) with sizes %p", n, IB_MAX_RECVS, (void*)sizes);
    return ncclInternalError;
  }
  size_t wide[IB_MAX_RECVS];
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      IB_WARN("NET/IB: irecv: negative size %d for receive %d", sizes[i], i);
      return ncclInternalError;
    }
    wide[i] = (size_t)sizes[i];
  }
  return net_ib_irecv(recv_comm, n, data, wide, tags, mhandles, NULL, request);
}

ncclResult_t net_ib_legacy_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                                 void** request) {
  return net_ib_isend(send_comm, data, size, tag, mhandle, NULL, request);
}

ncclResult_t net_ib_legacy_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                                 void** mhandles, void** request) {
  return net_ib_irecv(recv_comm, n, data, sizes, tags, mhandles, NULL, request);
}
