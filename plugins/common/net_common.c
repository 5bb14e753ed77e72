/* weft_net_common: the random ids, the context head and the property defaults of weft's net
 * plugins (net_common.h). Stateless but for the random fallback's counter. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "net_common.h"
#include "util/clock.h"

uint64_t weft_net_random64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v && v != 0) return v;
  /* No entropy source: mix time, pid and a counter (splitmix64). Good enough to tell stray
   * connections apart, which is all the ids are for. */
  static uint64_t counter;
  uint64_t z = clock_ns() ^ ((uint64_t)getpid() << 32) ^
               __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 1;
}

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
