/* The plugin's v11 table and per-communicator lifecycle: init finds the devices (once per
 * process) and makes a context (comm id, traffic class, connects under way); finalize frees it,
 * and when it was the last one, closes the NICs no comm uses any more. */
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include "net_ofi.h"
#include "util/clock.h"

#define OFI_CTX_MAGIC 0x6f66695f63747831ull

static int live_contexts; /* under the global lock */

int net_ofi_live_contexts(void) { return live_contexts; }

uint64_t net_ofi_random64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v && v != 0) return v;
  /* No entropy: time, pid and a counter through splitmix64 (enough to tell connections apart). */
  static uint64_t counter;
  uint64_t z = clock_ns() ^ ((uint64_t)getpid() << 32) ^
               __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 1;
}

ncclResult_t net_ofi_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                          ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)prof; /* the plugin emits no profiler events */
  net_ofi_set_logger(logger);
  if (ctx == NULL) {
    OFI_WARN("NET/OFI: init: ctx is NULL");
    return ncclInternalError;
  }
  ncclResult_t res = net_ofi_devices_init();
  if (res != ncclSuccess) return res;
  ofi_ctx* x = calloc(1, sizeof *x);
  if (x == NULL) {
    OFI_WARN("NET/OFI: out of memory allocating a context");
    return ncclSystemError;
  }
  x->magic = OFI_CTX_MAGIC;
  x->comm_id = comm_id;
  x->traffic_class = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  pthread_mutex_init(&x->lock, NULL);
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
  ofi_ctx* x = ctx;
  if (x == NULL || x->magic != OFI_CTX_MAGIC) {
    OFI_WARN("NET/OFI: %s: invalid context %p (init not called, or finalized)", fn, ctx);
    return NULL;
  }
  return x;
}

ncclResult_t net_ofi_finalize(void* ctx) {
  ofi_ctx* x = net_ofi_ctx_check(ctx, "finalize");
  if (x == NULL) return ncclInternalError;
  net_ofi_pending_free_all(x);
  x->magic = 0;
  pthread_mutex_destroy(&x->lock);
  free(x);
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

const ncclNet_v11_t net_ofi_v11 = {
    .name = "weft-ofi",
    .init = net_ofi_init,
    .devices = net_ofi_devices,
    .getProperties = net_ofi_get_properties,
    .listen = net_ofi_listen,
    .connect = net_ofi_connect,
    .accept = net_ofi_accept,
    .regMr = net_ofi_reg_mr,
    .regMrDmaBuf = net_ofi_reg_mr_dmabuf,
    .deregMr = net_ofi_dereg_mr,
    .isend = net_ofi_isend,
    .irecv = net_ofi_irecv,
    .iflush = net_ofi_iflush,
    .test = net_ofi_test,
    .closeSend = net_ofi_close_send,
    .closeRecv = net_ofi_close_recv,
    .closeListen = net_ofi_close_listen,
    .getDeviceMr = NULL,   /* no device offload */
    .irecvConsumed = NULL, /* no device offload */
    .makeVDevice = NULL,   /* no NIC fusion */
    .finalize = net_ofi_finalize,
    .setNetAttr = net_ofi_set_net_attr,
};
