/* The IB plugin's per-communicator lifecycle: init makes a context (comm id, traffic class,
 * profFn, the connects under way) and, for the first live context, opens the devices; finalize
 * frees the context and, with the last one, closes the devices again. init succeeds with 0
 * devices when this host has no usable RDMA port (the INFO line says why): the host library then
 * skips the plugin, as NCCL does for its own IB transport. */
#include "net_ib.h"
#include "net_ib_internal.h"

#define IB_CTX_MAGIC 0x69625f6374785f31ull

static pthread_mutex_t ib_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int ib_live_ctxs;

ncclResult_t net_ib_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                         ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  net_ib_set_logger(logger);
  if (ctx == NULL) {
    IB_WARN("NET/IB: init: ctx is NULL");
    return ncclInternalError;
  }
  ib_ctx* c = weft_net_ctx_new(sizeof *c, IB_CTX_MAGIC, comm_id, config, prof, net_ib_logger(),
                               "NET/IB");
  if (c == NULL) return ncclSystemError;
  pthread_mutex_lock(&ib_init_lock);
  if (ib_live_ctxs++ == 0) net_ib_devices_open();
  pthread_mutex_unlock(&ib_init_lock);
  *ctx = c;
  return ncclSuccess;
}

ib_ctx* net_ib_ctx_check(void* ctx, const char* fn) {
  return weft_net_ctx_check(ctx, IB_CTX_MAGIC, net_ib_logger(), "NET/IB", fn);
}

ncclResult_t net_ib_finalize(void* ctx) {
  ib_ctx* c = net_ib_ctx_check(ctx, "finalize");
  if (c == NULL) return ncclInternalError;
  net_ib_pending_free_all(c);
  weft_net_ctx_free(c);
  pthread_mutex_lock(&ib_init_lock);
  if (--ib_live_ctxs == 0) net_ib_devices_close();
  pthread_mutex_unlock(&ib_init_lock);
  return ncclSuccess;
}

/* Usage hints: nothing is sized by them, so they are accepted and ignored. */
ncclResult_t net_ib_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr) {
  (void)attr;
  return net_ib_ctx_check(ctx, "setNetAttr") ? ncclSuccess : ncclInternalError;
}

const ncclNet_v11_t weft_net_ib_v11 = WEFT_NET_V11_TABLE(net_ib, "weft-ib");
