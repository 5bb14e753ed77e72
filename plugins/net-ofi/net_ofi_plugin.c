/* The plugin's v11 table and per-communicator lifecycle: init finds the devices (once per
 * process) and makes a context (comm id, traffic class, profFn, connects under way); finalize
 * frees it, and when it was the last one, closes the NICs no comm uses any more. */
#include "net_ofi.h"

#define OFI_CTX_MAGIC 0x6f66695f63747831ull

static int live_contexts; /* under the global lock */

int net_ofi_live_contexts(void) { return live_contexts; }

ncclResult_t net_ofi_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                          ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  net_ofi_set_logger(logger);
  if (ctx == NULL) {
    OFI_WARN("NET/OFI: init: ctx is NULL");
    return ncclInternalError;
  }
  ncclResult_t res = net_ofi_devices_init();
  if (res != ncclSuccess) return res;
  ofi_ctx* x = weft_net_ctx_new(sizeof *x, OFI_CTX_MAGIC, comm_id, config, prof,
                                net_ofi_logger(), "NET/OFI");
  if (x == NULL) return ncclSystemError;
  net_ofi_global_lock();
  live_contexts++;
  net_ofi_global_unlock();
  /* The endpoints open now, so listen and connect never pay for it. */
  res = net_ofi_nics_open();
  if (res != ncclSuccess) {
    net_ofi_finalize(x);
    return res;
  }
  *ctx = x;
  return ncclSuccess;
}

ofi_ctx* net_ofi_ctx_check(void* ctx, const char* fn) {
  return weft_net_ctx_check(ctx, OFI_CTX_MAGIC, net_ofi_logger(), "NET/OFI", fn);
}

ncclResult_t net_ofi_finalize(void* ctx) {
  ofi_ctx* x = net_ofi_ctx_check(ctx, "finalize");
  if (x == NULL) return ncclInternalError;
  net_ofi_pending_free_all(x);
  weft_net_ctx_free(x);
  net_ofi_global_lock();
  if (--live_contexts == 0) net_ofi_nics_idle_close();
  net_ofi_global_unlock();
  return ncclSuccess;
}

/* Usage hints: nothing is sized by them, so they are accepted and ignored. */
ncclResult_t net_ofi_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr) {
  (void)attr;
  return net_ofi_ctx_check(ctx, "setNetAttr") ? ncclSuccess : ncclInternalError;
}

const ncclNet_v11_t net_ofi_v11 = WEFT_NET_V11_TABLE(net_ofi, "weft-ofi");
