/* The socket plugin's v11 table and its per-communicator lifecycle: init makes a context
 * (comm id, traffic class, the connects still under way), finalize frees it. Devices are found
 * once per process at the first init. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "net_socket.h"
#include "net_socket_internal.h"
#include "util/clock.h"

#define NS_CTX_MAGIC 0x6e735f6374785f31ull

uint64_t net_socket_random64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v && v != 0) return v;
  /* No entropy source: mix time, pid and a counter (splitmix64). Good enough to tell stray
   * connections apart, which is all the secret is for. */
  static uint64_t counter;
  uint64_t z = clock_ns() ^ ((uint64_t)getpid() << 32) ^
               __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 1;
}

ncclResult_t net_socket_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                             ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)prof; /* the plugin emits no profiler events */
  net_socket_set_logger(logger);
  if (ctx == NULL) {
    NS_WARN("NET/Socket: init: ctx is NULL");
    return ncclInternalError;
  }
  ncclResult_t res = net_socket_devices_init();
  if (res != ncclSuccess) return res;
  if (net_socket_ndevs() == 0) {
    NS_WARN("NET/Socket: no usable network interface");
    return ncclSystemError;
  }
  ns_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) {
    NS_WARN("NET/Socket: out of memory allocating a context");
    return ncclSystemError;
  }
  c->magic = NS_CTX_MAGIC;
  c->comm_id = comm_id;
  c->traffic_class = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  pthread_mutex_init(&c->lock, NULL);
  *ctx = c;
  return ncclSuccess;
}

ns_ctx* net_socket_ctx_check(void* ctx, const char* fn) {
  ns_ctx* c = ctx;
  if (c == NULL || c->magic != NS_CTX_MAGIC) {
    NS_WARN("NET/Socket: %s: invalid context %p (init not called, or finalized)", fn, ctx);
    return NULL;
  }
  return c;
}

ncclResult_t net_socket_finalize(void* ctx) {
  ns_ctx* c = net_socket_ctx_check(ctx, "finalize");
  if (c == NULL) return ncclInternalError;
  net_socket_pending_free_all(c);
  c->magic = 0;
  pthread_mutex_destroy(&c->lock);
  free(c);
  return ncclSuccess;
}

/* Usage hints: the socket plugin sizes nothing by them, so they are accepted and ignored. */
ncclResult_t net_socket_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr) {
  (void)attr;
  return net_socket_ctx_check(ctx, "setNetAttr") ? ncclSuccess : ncclInternalError;
}

const ncclNet_v11_t weft_net_socket_v11 = {
    .name = "Socket",
    .init = net_socket_init,
    .devices = net_socket_devices,
    .getProperties = net_socket_get_properties,
    .listen = net_socket_listen,
    .connect = net_socket_connect,
    .accept = net_socket_accept,
    .regMr = net_socket_reg_mr,
    .regMrDmaBuf = net_socket_reg_mr_dmabuf,
    .deregMr = net_socket_dereg_mr,
    .isend = net_socket_isend,
    .irecv = net_socket_irecv,
    .iflush = net_socket_iflush,
    .test = net_socket_test,
    .closeSend = net_socket_close_send,
    .closeRecv = net_socket_close_recv,
    .closeListen = net_socket_close_listen,
    .getDeviceMr = NULL,   /* no device offload */
    .irecvConsumed = NULL, /* no device offload */
    .makeVDevice = NULL,   /* no NIC fusion */
    .finalize = net_socket_finalize,
    .setNetAttr = net_socket_set_net_attr,
};
