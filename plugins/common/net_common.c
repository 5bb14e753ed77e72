/* weft_net_common: the random ids (util/random.h's), the context head and the property defaults
 * of weft's net plugins (net_common.h). Stateless. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_common.h"
#include "util/random.h"

uint64_t weft_net_random64(void) { return weft_random64(); }

void* weft_net_ctx_new(size_t size, uint64_t magic, uint64_t comm_id,
                       const ncclNetCommConfig_v11_t* config, ncclProfilerCallback_t prof,
                       ncclDebugLogger_t log, const char* net) {
  weft_net_ctx* c = size >= sizeof *c ? calloc(1, size) : NULL;
  if (c == NULL) {
    log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "%s: out of memory allocating a context",
        net);
    return NULL;
  }
  c->magic = magic;
  c->comm_id = comm_id;
  c->traffic_class = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  c->prof = prof;
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

void* weft_net_ctx_check(void* ctx, uint64_t magic, ncclDebugLogger_t log, const char* net,
                         const char* fn) {
  weft_net_ctx* c = ctx;
  if (c == NULL || c->magic != magic) {
    log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
        "%s: %s: invalid context %p (init not called, or finalized)", net, fn, ctx);
    return NULL;
  }
  return c;
}

void weft_net_ctx_free(void* ctx) {
  weft_net_ctx* c = ctx;
  c->magic = 0;
  pthread_mutex_destroy(&c->lock);
  free(c);
}

void weft_net_props_default(ncclNetProperties_v11_t* props, int dev) {
  memset(props, 0, sizeof *props);
  props->guid = (uint64_t)dev;
  props->ptrSupport = NCCL_PTR_HOST;
  props->maxComms = 65536;
  props->maxRecvs = WEFT_NET_MAX_RECVS;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = MAX_COLLNET_SIZE;
  props->maxMultiRequestSize = 1;
}
