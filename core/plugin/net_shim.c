/* The net shim's front: symbol names, dispatch to the per-version adapters, the v12
 * pass-through, the stubs for NULL optional entries, and the helpers the old-version shims
 * share (slot binding, init-once counting, property defaults, size checks). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/net_shim_impl.h"
#include "util/log.h"
#include "util/check.h"

static const char* const symbols[] = {
    "ncclNetPlugin_v6", "ncclNetPlugin_v7",  "ncclNetPlugin_v8",
    "ncclNetPlugin_v9", "ncclNetPlugin_v10", "ncclNetPlugin_v11", "ncclNetPlugin_v12",
};

const char* net_shim_symbol(int version) {
  if (version < WEFT_NET_MIN_VERSION || version > WEFT_NET_MAX_VERSION) return NULL;
  return symbols[version - WEFT_NET_MIN_VERSION];
}

ncclResult_t net_shim_missing(const char* member, char* why, size_t whylen) {
  if (why && whylen) snprintf(why, whylen, "%s is NULL", member);
  return ncclInvalidUsage;
}

/* ---- stubs: optional entries a plugin left NULL ---- */

ncclResult_t net_stub_regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                  int fd, void** mhandle) {
  (void)comm, (void)data, (void)size, (void)type, (void)offset, (void)fd, (void)mhandle;
  return ncclInvalidUsage;
}

ncclResult_t net_stub_getDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) {
  (void)comm, (void)mhandle, (void)dptr_mhandle;
  return ncclInvalidUsage;
}

ncclResult_t net_stub_irecvConsumed(void* recvComm, int n, void* request) {
  (void)recvComm, (void)n, (void)request;
  return ncclInvalidUsage;
}

ncclResult_t net_stub_makeVDevice(int* d, ncclNetVDeviceProps_v12_t* props) {
  (void)d, (void)props;
  return ncclInvalidUsage;
}

ncclResult_t net_stub_setNetAttr(void* ctx, ncclNetAttr_v12_t* attr) {
  (void)ctx, (void)attr;
  return ncclInvalidUsage;
}

/* ---- v12: the current view, passed through ---- */

static ncclResult_t adapt_v12(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v12_t* raw = rawp;
  const char* missing;
  NET_SHIM_MANDATORY(raw, missing);
  if (missing == NULL && raw->finalize == NULL) missing = "finalize";
  if (missing) return net_shim_missing(missing, why, whylen);
  weft_net_view v = {.api = *raw, .version = 12, .raw = raw};
  if (!v.api.regMrDmaBuf) v.api.regMrDmaBuf = net_stub_regMrDmaBuf;
  if (!v.api.getDeviceMr) v.api.getDeviceMr = net_stub_getDeviceMr;
  if (!v.api.irecvConsumed) v.api.irecvConsumed = net_stub_irecvConsumed;
  if (!v.api.makeVDevice) v.api.makeVDevice = net_stub_makeVDevice;
  if (!v.api.setNetAttr) v.api.setNetAttr = net_stub_setNetAttr;
  *out = v;
  return ncclSuccess;
}

static ncclResult_t bind_v12(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v12_t* raw = rawp;
  if (raw->init == NULL) return net_shim_missing("init", why, whylen);
  *out = (weft_net_view){.version = 12,
                         .raw = raw,
                         .api = {.name = raw->name, .init = raw->init, .finalize = raw->finalize}};
  return ncclSuccess;
}

static ncclResult_t unsupported(int version, char* why, size_t whylen) {
  if (why && whylen)
    snprintf(why, whylen, "ABI version %d is not supported (v%d..v%d are)", version,
             WEFT_NET_MIN_VERSION, WEFT_NET_MAX_VERSION);
  return ncclInvalidUsage;
}

ncclResult_t net_shim_bind(const void* raw, int version, weft_net_view* out, char* why,
                           size_t whylen) {
  if (why && whylen) why[0] = '\0';
  if (raw == NULL || out == NULL) {
    if (why && whylen) snprintf(why, whylen, "no plugin struct");
    return ncclInvalidUsage;
  }
  switch (version) {
    case 6: return net_shim_bind_v6(raw, out, why, whylen);
    case 7: return net_shim_bind_v7(raw, out, why, whylen);
    case 8: return net_shim_bind_v8(raw, out, why, whylen);
    case 9: return net_shim_bind_v9(raw, out, why, whylen);
    case 10: return net_shim_bind_v10(raw, out, why, whylen);
    case 11: return net_shim_bind_v11(raw, out, why, whylen);
    case 12: return bind_v12(raw, out, why, whylen);
    default: return unsupported(version, why, whylen);
  }
}

ncclResult_t net_shim_complete(weft_net_view* view, char* why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  if (view == NULL || view->raw == NULL) {
    if (why && whylen) snprintf(why, whylen, "no plugin struct");
    return ncclInvalidUsage;
  }
  if (view->complete) return ncclSuccess;
  weft_net_view v = *view;
  ncclResult_t res;
  switch (view->version) {
    case 6: res = net_shim_adapt_v6(view->raw, &v, why, whylen); break;
    case 7: res = net_shim_adapt_v7(view->raw, &v, why, whylen); break;
    case 8: res = net_shim_adapt_v8(view->raw, &v, why, whylen); break;
    case 9: res = net_shim_adapt_v9(view->raw, &v, why, whylen); break;
    case 10: res = net_shim_adapt_v10(view->raw, &v, why, whylen); break;
    case 11: res = net_shim_adapt_v11(view->raw, &v, why, whylen); break;
    case 12: res = adapt_v12(view->raw, &v, why, whylen); break;
    default: return unsupported(view->version, why, whylen);
  }
  if (res != ncclSuccess) {
    /* The caller finalizes what init gave: a v11/v12 plugin may have filled finalize in too. */
    if (view->version == 12) view->api.finalize = ((const ncclNet_v12_t*)view->raw)->finalize;
    if (view->version == 11) net_shim_v11_refresh_finalize(view);
    return res;
  }
  v.complete = 1;
  *view = v;
  return ncclSuccess;
}

ncclResult_t net_shim_adapt(const void* raw, int version, weft_net_view* out, char* why,
                            size_t whylen) {
  weft_net_view v;
  ncclResult_t res = net_shim_bind(raw, version, &v, why, whylen);
  WEFT_CHECK(res);
  res = net_shim_complete(&v, why, whylen);
  if (res != ncclSuccess) {
    net_shim_release(&v);
    return res;
  }
  *out = v;
  return ncclSuccess;
}

ncclResult_t net_shim_old_bind(net_shim_slot* s, const void* raw, int version, const char* name,
                               int has_init, net_shim_init_fn init, net_shim_finalize_fn fini,
                               weft_net_view* out, char* why, size_t whylen) {
  if (!has_init) return net_shim_missing("init", why, whylen);
  WEFT_CHECK(net_shim_slot_bind(s, raw, version, why, whylen));
  *out = (weft_net_view){.version = version,
                         .raw = raw,
                         .api = {.name = name, .init = init, .finalize = fini}};
  return ncclSuccess;
}

void net_shim_release(weft_net_view* view) {
  if (view == NULL || view->raw == NULL) return;
  switch (view->version) {
    case 6: net_shim_release_v6(); break;
    case 7: net_shim_release_v7(); break;
    case 8: net_shim_release_v8(); break;
    case 9: net_shim_release_v9(); break;
    case 10: net_shim_release_v10(); break;
    case 11: net_shim_release_v11(view->raw); break;
    default: break;
  }
  view->raw = NULL;
  view->complete = 0;
}

/* ---- helpers for the old-version shims ---- */

ncclResult_t net_shim_slot_bind(net_shim_slot* s, const void* raw, int version, char* why,
                                size_t whylen) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&s->lock);
  if (s->raw != NULL && s->raw != raw) {
    /* name is the first member of every ncclNet_vN_t. */
    const char* other = *(const char* const*)s->raw;
    if (why && whylen)
      snprintf(why, whylen,
               "another v%d plugin (%s) is in use; one plugin per old ABI version at a time",
               version, other ? other : "?");
    res = ncclInvalidUsage;
  } else {
    s->raw = raw;
    s->binds++;
  }
  pthread_mutex_unlock(&s->lock);
  return res;
}

void net_shim_slot_unbind(net_shim_slot* s) {
  pthread_mutex_lock(&s->lock);
  if (s->binds > 0 && --s->binds == 0) {
    s->raw = NULL;
    s->inits = 0;
  }
  pthread_mutex_unlock(&s->lock);
}

ncclResult_t net_shim_old_init(net_shim_slot* s, net_shim_first_init_fn first_init, void** ctx,
                               const ncclNetCommConfig_v12_t* config, ncclDebugLogger_t log,
                               ncclProfilerCallback_t prof) {
  if (ctx == NULL) return ncclInvalidArgument;
  net_shim_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) {
    WARN("NET/Plugin: out of memory for a communicator context");
    return ncclSystemError;
  }
  c->config.trafficClass = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&s->lock);
  if (s->raw == NULL) {
    res = ncclInvalidUsage; /* view used after net_shim_release */
  } else if (s->inits == 0) {
    res = first_init(s->raw, log, prof);
  }
  if (res == ncclSuccess) s->inits++;
  pthread_mutex_unlock(&s->lock);
  if (res != ncclSuccess) {
    free(c);
    return res;
  }
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t net_shim_old_finalize(net_shim_slot* s, void* ctx) {
  pthread_mutex_lock(&s->lock);
  if (s->inits > 0) s->inits--;
  pthread_mutex_unlock(&s->lock);
  free(ctx);
  return ncclSuccess;
}

ncclNetCommConfig_v10_t* net_shim_ctx_config(void* ctx) {
  /* Only read by plugins; a fresh copy each call keeps a stray write from sticking. */
  static __thread ncclNetCommConfig_v10_t undef;
  if (ctx) return &((net_shim_ctx*)ctx)->config;
  undef.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return &undef;
}

void net_shim_props_defaults(ncclNetProperties_v12_t* props, int dev) {
  memset(props, 0, sizeof *props);
  props->regIsGlobal = 0;
  props->forceFlush = 0;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = MAX_NET_SIZE;
  props->maxCollBytes = MAX_COLLNET_SIZE;
  props->maxMultiRequestSize = 1;
  props->railId = NCCL_NET_ID_UNDEF;
  props->planeId = NCCL_NET_ID_UNDEF;
}

ncclResult_t net_shim_int_size(int version, const char* entry, size_t size, int* out) {
  if (size > (size_t)INT_MAX) {
    WARN("NET/Plugin: %s of %zu bytes is above what a v%d plugin takes (INT_MAX)", entry, size,
         version);
    return ncclInvalidArgument;
  }
  *out = (int)size;
  return ncclSuccess;
}

ncclResult_t net_shim_int_sizes(int version, int n, const size_t* sizes, int* out) {
  if (n < 0 || n > NET_SHIM_MAX_RECVS) {
    WARN("NET/Plugin: irecv of %d receives; the v%d shim takes 0..%d", n, version,
         NET_SHIM_MAX_RECVS);
    return ncclInvalidArgument;
  }
  for (int i = 0; i < n; i++) {
    if (sizes[i] > (size_t)INT_MAX) {
      WARN("NET/Plugin: irecv %d of %zu bytes is above what a v%d plugin takes (INT_MAX)", i,
           sizes[i], version);
      return ncclInvalidArgument;
    }
    out[i] = (int)sizes[i];
  }
  return ncclSuccess;
}

void net_shim_clear_recv_hint(void** request) {
  if (request && *request == (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION) *request = NULL;
}
