/* The IB plugin's per-communicator lifecycle: init makes a context (comm id, traffic class, the
 * connects under way) and, for the first live context, opens the devices; finalize frees the
 * context and, with the last one, closes the devices again. init succeeds with 0 devices when
 * this host has no usable RDMA port (the INFO line says why): the host library then skips the
 * plugin, as NCCL does for its own IB transport. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "net_ib.h"
#include "net_ib_internal.h"
#include "util/clock.h"

#define IB_CTX_MAGIC 0x69625f6374785f31ull

static pthread_mutex_t ib_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int ib_live_ctxs;

uint64_t net_ib_random64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v && v != 0) return v;
  static uint64_t counter;
  uint64_t z = clock_ns() ^ ((uint64_t)getpid() << 32) ^
               __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 1;
}

ncclResult_t net_ib_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                         ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)prof; /* the plugin emits no profiler events */
  net_ib_set_logger(logger);
  if (ctx == NULL) {
    IB_WARN("NET/IB: init: ctx is NULL");
    return ncclInternalError;
  }
  ib_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) {
    IB_WARN("NET/IB: out of memory allocating a context");
    return ncclSystemError;
  }
  c->magic = IB_CTX_MAGIC;
  c->comm_id = comm_id;
  c->traffic_class = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_lock(&ib_init_lock);
  if (ib_live_ctxs++ == 0) net_ib_devices_open();
  pthread_mutex_unlock(&ib_init_lock);
  *ctx = c;
  return ncclSuccess;
}

ib_ctx* net_ib_ctx_check(void* ctx, const char* fn) {
  ib_ctx* c = ctx;
  if (c == NULL || c->magic != IB_CTX_MAGIC) {
    IB_WARN("NET/IB: %s: invalid context %p (init not called, or finalized)", fn, ctx);
    return NULL;
  }
  return c;
}

ncclResult_t net_ib_finalize(void* ctx) {
  ib_ctx* c = net_ib_ctx_check(ctx, "finalize");
  if (c == NULL) return ncclInternalError;
  net_ib_pending_free_all(c);
  c->magic = 0;
  pthread_mutex_destroy(&c->lock);
  free(c);
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

const ncclNet_v11_t weft_net_ib_v11 = {
    .name = "weft-ib",
    .init = net_ib_init,
    .devices = net_ib_devices,
    .getProperties = net_ib_get_properties,
    .listen = net_ib_listen,
    .connect = net_ib_connect,
    .accept = net_ib_accept,
    .regMr = net_ib_reg_mr,
    .regMrDmaBuf = net_ib_reg_mr_dmabuf,
    .deregMr = net_ib_dereg_mr,
    .isend = net_ib_isend,
    .irecv = net_ib_irecv,
    .iflush = net_ib_iflush,
    .test = net_ib_test,
    .closeSend = net_ib_close_send,
    .closeRecv = net_ib_close_recv,
    .closeListen = net_ib_close_listen,
    .getDeviceMr = NULL,   /* no device offload */
    .irecvConsumed = NULL, /* no device offload */
    .makeVDevice = NULL,   /* no NIC fusion */
    .finalize = net_ib_finalize,
    .setNetAttr = net_ib_set_net_attr,
};
