/* See rma_common.h. */
#include "rma_common.h"

#include <stdlib.h>
#include <string.h>

ncclResult_t weft_rma_ctx_new(void* coll, const ncclRmaConfig_v15_t* config, uint64_t magic,
                              ncclDebugLogger_t log, const char* who, void** ctx) {
  if (config == NULL || ctx == NULL || config->nContexts < 1) {
    log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
        "%s: createContext: bad argument (config %p, nContexts %d, ctx %p)", who, (void*)config,
        config ? config->nContexts : 0, (void*)ctx);
    return ncclInvalidArgument;
  }
  weft_rma_ctx* x = calloc(1, sizeof *x);
  if (x == NULL) return ncclSystemError;
  *x = (weft_rma_ctx){magic, coll, config->nContexts};
  *ctx = x;
  return ncclSuccess;
}

weft_rma_ctx* weft_rma_ctx_check(void* p, int context, uint64_t magic, ncclDebugLogger_t log,
                                 const char* who, const char* fn) {
  weft_rma_ctx* x = p;
  if (x == NULL || x->magic != magic) {
    log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
        "%s: %s: %p is not a context createContext returned", who, fn, p);
    return NULL;
  }
  if (context < 0 || context >= x->ncontexts) {
    log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
        "%s: %s: context %d out of range (%d contexts)", who, fn, context, x->ncontexts);
    return NULL;
  }
  return x;
}

ncclResult_t weft_rma_ctx_free(void* p, uint64_t magic, ncclDebugLogger_t log, const char* who) {
  weft_rma_ctx* x = weft_rma_ctx_check(p, 0, magic, log, who, "destroyContext");
  if (x == NULL) return ncclInvalidArgument;
  x->magic = 0;
  free(x);
  return ncclSuccess;
}

void weft_rma_props_from_v11(const ncclNetProperties_v11_t* p11, int dev,
                             ncclNetProperties_v12_t* props) {
  memset(props, 0, sizeof *props);
  props->name = p11->name;
  props->pciPath = p11->pciPath;
  props->guid = p11->guid;
  props->ptrSupport = NCCL_PTR_HOST;
  props->speed = p11->speed;
  props->port = p11->port;
  props->latency = p11->latency;
  props->maxComms = p11->maxComms;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_GIN_PROXY;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = p11->maxP2pBytes;
  props->maxCollBytes = p11->maxCollBytes;
  props->maxMultiRequestSize = 1;
  props->railId = NCCL_NET_ID_UNDEF;
  props->planeId = NCCL_NET_ID_UNDEF;
}

ncclResult_t weft_rma_check_target(ncclDebugLogger_t log, const char* who, const char* fn,
                                   uint32_t rank, int nranks, void** req) {
  if (req != NULL && rank < (uint32_t)nranks) return ncclSuccess;
  log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
      "%s: %s: bad argument (rank %u of %d, request %p)", who, fn, rank, nranks, (void*)req);
  return ncclInvalidArgument;
}

ncclResult_t weft_rma_check_fit(ncclDebugLogger_t log, const char* who, const char* fn,
                                size_t size, uint64_t loc_off, uint64_t loc_size,
                                uint64_t rem_off, uint64_t rem_size) {
  if (loc_off <= loc_size && size <= loc_size - loc_off && rem_off <= rem_size &&
      size <= rem_size - rem_off)
    return ncclSuccess;
  log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
      "%s: %s: %zu bytes at local offset %llu / remote offset %llu overrun the registrations "
      "(%llu / %llu bytes)", who, fn, size, (unsigned long long)loc_off,
      (unsigned long long)rem_off, (unsigned long long)loc_size, (unsigned long long)rem_size);
  return ncclInvalidArgument;
}
