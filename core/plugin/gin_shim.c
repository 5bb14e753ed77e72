/* GIN tables v11..v15 seen as v15, with the host puts of v11..v13 as an RMA view (kind_shim.h).
 *
 *  - v14: getGinProperties widened (barrierOptions DEFAULT), connect without the abort flag,
 *    the v15 config narrowed (rankStride 1, as NCCL 2.32 gives a v14 plugin).
 *  - v13: no getGinProperties (reported: strong signals, no VA signals); the config narrowed to
 *    v13's; the host puts are the RMA v13 adapter's (rma_shim.c).
 *  - v11/v12: properties are net v11's (widened); v12's connect takes 1 connection and the
 *    plugin's default queue depth; the context createContext returns is wrapped so that the
 *    puts, which v11/v12 issue on the group, find it; v11 refuses more than one context. They
 *    have no iget or iflush: the RMA view leaves those NULL. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/kind_shim.h"

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static const ncclGin_v14_t* slot14;
static const ncclGin_v13_t* slot13;
static const ncclGin_v12_t* slot12;
static const ncclGin_v11_t* slot11;

#define WRAP_MAGIC 0x67696e7772617021ull /* "gin wrap" */

/* v11/v12: what createContext hands out. */
typedef struct {
  uint64_t magic;
  void* coll;
  void* ctx;
  int ncontexts;
} gin_wrap;

static gin_wrap* unwrap(void* p) {
  gin_wrap* w = p;
  return (w && w->magic == WRAP_MAGIC) ? w : NULL;
}

static void props_v11_to_v12(const ncclNetProperties_v11_t* a, ncclNetProperties_v12_t* b) {
  memset(b, 0, sizeof *b);
  b->name = a->name;
  b->pciPath = a->pciPath;
  b->guid = a->guid;
  b->ptrSupport = a->ptrSupport;
  b->regIsGlobal = a->regIsGlobal;
  b->forceFlush = a->forceFlush;
  b->speed = a->speed;
  b->port = a->port;
  b->latency = a->latency;
  b->maxComms = a->maxComms;
  b->maxRecvs = a->maxRecvs;
  b->netDeviceType = a->netDeviceType;
  b->netDeviceVersion = a->netDeviceVersion;
  b->vProps.ndevs = a->vProps.ndevs;
  for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC_V11 && i < a->vProps.ndevs; i++)
    b->vProps.devs[i] = a->vProps.devs[i];
  b->maxP2pBytes = a->maxP2pBytes;
  b->maxCollBytes = a->maxCollBytes;
  b->maxMultiRequestSize = a->maxMultiRequestSize;
  b->railId = NCCL_NET_ID_UNDEF;
  b->planeId = NCCL_NET_ID_UNDEF;
}

static ncclResult_t strong_props(ncclGinProperties_v15_t* p) {
  if (p == NULL) return ncclInvalidArgument;
  p->supportsStrongSignals = true;
  p->supportsVASignals = false;
  p->barrierOptions = NCCL_GIN_BARRIER_DEFAULT;
  return ncclSuccess;
}

/* ---- v14 ---- */

static ncclResult_t v14_gin_props(ncclGinProperties_v15_t* p) {
  if (p == NULL) return ncclInvalidArgument;
  ncclGinProperties_v14_t old = {0};
  ncclResult_t r = slot14->getGinProperties(&old);
  if (r != ncclSuccess) return r;
  p->supportsStrongSignals = old.supportsStrongSignals;
  p->supportsVASignals = old.supportsVASignals;
  p->barrierOptions = NCCL_GIN_BARRIER_DEFAULT;
  return ncclSuccess;
}

static ncclResult_t v14_connect(void* ctx, void* handles[], int nranks, int rank, void* lc,
                                void** coll, volatile uint32_t* abort_flag) {
  (void)abort_flag;
  return slot14->connect(ctx, handles, nranks, rank, lc, coll);
}

static ncclResult_t v14_create_context(void* coll, ncclGinConfig_v15_t* c, void** ctx,
                                       ncclNetDeviceHandle_v11_t** dev) {
  if (c == NULL) return ncclInvalidArgument;
  ncclGinConfig_v14_t o = {c->nSignals, c->nCounters,    c->nContexts, c->queueDepth,
                           c->trafficClass, c->backendVersion, 1};
  return slot14->createContext(coll, &o, ctx, dev);
}

/* ---- v13 ---- */

static ncclResult_t v13_connect(void* ctx, void* handles[], int nranks, int rank, void* lc,
                                void** coll, volatile uint32_t* abort_flag) {
  (void)abort_flag;
  return slot13->connect(ctx, handles, nranks, rank, lc, coll);
}

static ncclResult_t v13_create_context(void* coll, ncclGinConfig_v15_t* c, void** ctx,
                                       ncclNetDeviceHandle_v11_t** dev) {
  if (c == NULL) return ncclInvalidArgument;
  ncclGinConfig_v13_t o = {c->nSignals, c->nCounters, c->nContexts, c->queueDepth, c->trafficClass};
  return slot13->createContext(coll, &o, ctx, dev);
}

/* ---- v11 / v12 ---- */

static ncclResult_t v11_props(int dev, ncclNetProperties_v12_t* p) {
  if (p == NULL) return ncclInvalidArgument;
  ncclNetProperties_v11_t old;
  memset(&old, 0, sizeof old);
  ncclResult_t r = slot11->getProperties(dev, &old);
  if (r == ncclSuccess) props_v11_to_v12(&old, p);
  return r;
}

static ncclResult_t v12_props(int dev, ncclNetProperties_v12_t* p) {
  if (p == NULL) return ncclInvalidArgument;
  ncclNetProperties_v11_t old;
  memset(&old, 0, sizeof old);
  ncclResult_t r = slot12->getProperties(dev, &old);
  if (r == ncclSuccess) props_v11_to_v12(&old, p);
  return r;
}

static ncclResult_t v11_connect(void* ctx, void* handles[], int nranks, int rank, void* lc,
                                void** coll, volatile uint32_t* abort_flag) {
  (void)abort_flag;
  return slot11->connect(ctx, handles, nranks, rank, lc, coll);
}

static ncclResult_t v12_connect(void* ctx, void* handles[], int nranks, int rank, void* lc,
                                void** coll, volatile uint32_t* abort_flag) {
  (void)abort_flag;
  return slot12->connect(ctx, handles, nranks, rank, 1, 0, lc, coll);
}

static ncclResult_t wrap_new(void* coll, void* ctx, int ncontexts, void** out) {
  gin_wrap* w = calloc(1, sizeof *w);
  if (w == NULL) return ncclSystemError;
  *w = (gin_wrap){WRAP_MAGIC, coll, ctx, ncontexts};
  *out = w;
  return ncclSuccess;
}

static ncclResult_t v11_create_context(void* coll, ncclGinConfig_v15_t* c, void** ctx,
                                       ncclNetDeviceHandle_v11_t** dev) {
  if (c == NULL || ctx == NULL) return ncclInvalidArgument;
  if (c->nContexts > 1) return ncclInvalidUsage; /* v11 has one context per group */
  void* inner = NULL;
  ncclResult_t r = slot11->createContext(coll, c->nSignals, c->nCounters, &inner, dev);
  if (r != ncclSuccess) return r;
  if ((r = wrap_new(coll, inner, 1, ctx)) != ncclSuccess) slot11->destroyContext(inner);
  return r;
}

static ncclResult_t v12_create_context(void* coll, ncclGinConfig_v15_t* c, void** ctx,
                                       ncclNetDeviceHandle_v11_t** dev) {
  if (c == NULL || ctx == NULL) return ncclInvalidArgument;
  void* inner = NULL;
  ncclResult_t r = slot12->createContext(coll, c->nSignals, c->nCounters, c->nContexts, &inner, dev);
  if (r != ncclSuccess) return r;
  if ((r = wrap_new(coll, inner, c->nContexts, ctx)) != ncclSuccess) slot12->destroyContext(inner);
  return r;
}

static ncclResult_t v11_destroy(void* ctx) {
  gin_wrap* w = unwrap(ctx);
  if (w == NULL) return ncclInvalidArgument;
  ncclResult_t r = slot11 ? slot11->destroyContext(w->ctx) : slot12->destroyContext(w->ctx);
  w->magic = 0;
  free(w);
  return r;
}

static ncclResult_t v11_progress(void* ctx) {
  gin_wrap* w = unwrap(ctx);
  if (w == NULL) return ncclInvalidArgument;
  return slot11->ginProgress ? slot11->ginProgress(w->coll) : ncclSuccess;
}

static ncclResult_t v12_progress(void* ctx) {
  gin_wrap* w = unwrap(ctx);
  if (w == NULL) return ncclInvalidArgument;
  return slot12->ginProgress ? slot12->ginProgress(w->coll) : ncclSuccess;
}

static ncclResult_t v11_last_error(void* ctx, bool* has) {
  gin_wrap* w = unwrap(ctx);
  if (w == NULL || has == NULL) return ncclInvalidArgument;
  *has = false;
  return slot11->queryLastError ? slot11->queryLastError(w->ctx, has) : ncclSuccess;
}

static ncclResult_t v12_last_error(void* ctx, bool* has) {
  gin_wrap* w = unwrap(ctx);
  if (w == NULL || has == NULL) return ncclInvalidArgument;
  *has = false;
  return slot12->queryLastError ? slot12->queryLastError(w->ctx, has) : ncclSuccess;
}

/* The RMA view of v11/v12: control entries through the GIN view's adapters. */
static ncclResult_t old_rma_connect(void* ctx, void* handles[], int nranks, int rank, void* lc,
                                    void** coll) {
  return slot11 ? v11_connect(ctx, handles, nranks, rank, lc, coll, NULL)
                : v12_connect(ctx, handles, nranks, rank, lc, coll, NULL);
}

static ncclResult_t old_rma_create_context(void* coll, ncclRmaConfig_v15_t* c, void** ctx) {
  if (c == NULL) return ncclInvalidArgument;
  ncclGinConfig_v15_t g = {.nContexts = c->nContexts, .trafficClass = c->trafficClass};
  ncclNetDeviceHandle_v11_t* dev = NULL;
  return slot11 ? v11_create_context(coll, &g, ctx, &dev) : v12_create_context(coll, &g, ctx, &dev);
}

static ncclResult_t old_rma_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                                void** mh) {
  void* gh = NULL;
  return slot11 ? slot11->regMrSym(coll, data, size, type, flags, mh, &gh)
                : slot12->regMrSym(coll, data, size, type, flags, mh, &gh);
}

static ncclResult_t old_rma_reg_dmabuf(void* coll, void* data, size_t size, int type,
                                       uint64_t off, int fd, uint64_t flags, void** mh) {
  void* gh = NULL;
  if (slot11 && slot11->regMrSymDmaBuf)
    return slot11->regMrSymDmaBuf(coll, data, size, type, off, fd, flags, mh, &gh);
  if (!slot11 && slot12->regMrSymDmaBuf)
    return slot12->regMrSymDmaBuf(coll, data, size, type, off, fd, flags, mh, &gh);
  return ncclInvalidUsage;
}

static ncclResult_t old_iput(void* ctx, int context, uint64_t so, void* smh, size_t size,
                             uint64_t dof, void* dmh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  gin_wrap* w = unwrap(ctx);
  if (w == NULL || context < 0 || context >= w->ncontexts) return ncclInvalidArgument;
  if (slot11) return slot11->iput(w->coll, so, smh, size, dof, dmh, rank, req);
  return slot12->iput(w->coll, so, smh, size, dof, dmh, rank, context, req);
}

static ncclResult_t old_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, bool strong,
                                    uint32_t opt, void** req) {
  (void)strong;
  (void)opt;
  gin_wrap* w = unwrap(ctx);
  if (w == NULL || context < 0 || context >= w->ncontexts) return ncclInvalidArgument;
  if (slot11)
    return slot11->iputSignal(w->coll, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, op,
                              req);
  return slot12->iputSignal(w->coll, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, op,
                            context, req);
}

static ncclResult_t check_gin(const weft_gin_view* v, char* why, size_t len) {
  const ncclGin_v15_t* t = &v->gin;
#define NEED(f)                               \
  if (t->f == NULL) {                         \
    snprintf(why, len, "%s is NULL", #f);     \
    return ncclInvalidUsage;                  \
  }
  if (t->name == NULL) {
    snprintf(why, len, "name is NULL");
    return ncclInvalidUsage;
  }
  NEED(init) NEED(devices) NEED(getGinProperties) NEED(getProperties) NEED(listen) NEED(connect)
  NEED(createContext) NEED(regMrSym) NEED(deregMrSym) NEED(destroyContext) NEED(closeColl)
  NEED(closeListen) NEED(finalize)
#undef NEED
  if (v->has_host_rma && (v->rma.iput == NULL || v->rma.iputSignal == NULL || v->rma.test == NULL)) {
    snprintf(why, len, "%s is NULL", v->rma.iput == NULL ? "iput"
                                     : v->rma.iputSignal == NULL ? "iputSignal" : "test");
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

static void take_slot(const void** slot, const void* t) {
  pthread_mutex_lock(&slot_lock);
  *slot = t;
  pthread_mutex_unlock(&slot_lock);
}

ncclResult_t gin_shim_adapt(const void* table, int version, weft_gin_view* out, char* why,
                            size_t len) {
  memset(out, 0, sizeof *out);
  out->version = version;
  if (table == NULL) {
    snprintf(why, len, "no table");
    return ncclInvalidUsage;
  }
  switch (version) {
    case 15:
      out->gin = *(const ncclGin_v15_t*)table;
      break;
    case 14: {
      const ncclGin_v14_t* t = table;
      take_slot((const void**)&slot14, t);
      out->gin = (ncclGin_v15_t){t->name, t->init, t->devices,
                                 t->getGinProperties ? v14_gin_props : NULL, t->getProperties,
                                 t->listen, t->connect ? v14_connect : NULL,
                                 t->createContext ? v14_create_context : NULL, t->regMrSym,
                                 t->regMrSymDmaBuf, t->deregMrSym, t->destroyContext,
                                 t->closeColl, t->closeListen, t->ginProgress, t->queryLastError,
                                 t->finalize};
      break;
    }
    case 13: {
      const ncclGin_v13_t* t = table;
      take_slot((const void**)&slot13, t);
      out->gin = (ncclGin_v15_t){t->name, t->init, t->devices, strong_props, t->getProperties,
                                 t->listen, t->connect ? v13_connect : NULL,
                                 t->createContext ? v13_create_context : NULL, t->regMrSym,
                                 t->regMrSymDmaBuf, t->deregMrSym, t->destroyContext,
                                 t->closeColl, t->closeListen, t->ginProgress, t->queryLastError,
                                 t->finalize};
      char ignored[8];
      out->has_host_rma = 1;
      (void)rma_shim_adapt(t, 13, &out->rma, ignored, sizeof ignored);
      break;
    }
    case 12:
    case 11: {
      const ncclGin_v11_t* t11 = version == 11 ? table : NULL;
      const ncclGin_v12_t* t12 = version == 12 ? table : NULL;
      pthread_mutex_lock(&slot_lock);
      slot11 = t11; /* one of v11/v12 at a time: the wrapped entries serve both */
      slot12 = t12;
      pthread_mutex_unlock(&slot_lock);
#define E(f) (t11 ? (const void*)t11->f : (const void*)t12->f)
      ncclGin_v15_t* g = &out->gin;
      g->name = t11 ? t11->name : t12->name;
      g->init = t11 ? t11->init : t12->init;
      g->devices = t11 ? t11->devices : t12->devices;
      g->getGinProperties = strong_props;
      g->getProperties = E(getProperties) ? (t11 ? v11_props : v12_props) : NULL;
      g->listen = t11 ? t11->listen : t12->listen;
      g->connect = E(connect) ? (t11 ? v11_connect : v12_connect) : NULL;
      g->createContext = E(createContext) ? (t11 ? v11_create_context : v12_create_context) : NULL;
      g->regMrSym = t11 ? t11->regMrSym : t12->regMrSym;
      g->regMrSymDmaBuf = t11 ? t11->regMrSymDmaBuf : t12->regMrSymDmaBuf;
      g->deregMrSym = t11 ? t11->deregMrSym : t12->deregMrSym;
      g->destroyContext = E(destroyContext) ? v11_destroy : NULL;
      g->closeColl = t11 ? t11->closeColl : t12->closeColl;
      g->closeListen = t11 ? t11->closeListen : t12->closeListen;
      g->ginProgress = t11 ? v11_progress : v12_progress;
      g->queryLastError = t11 ? v11_last_error : v12_last_error;
      g->finalize = t11 ? t11->finalize : t12->finalize;
      out->has_host_rma = 1;
      out->rma = (ncclRma_v15_t){g->name, g->init, g->devices, g->getProperties, g->listen,
                                 E(connect) ? old_rma_connect : NULL,
                                 old_rma_create_context, g->regMrSym ? old_rma_reg : NULL,
                                 old_rma_reg_dmabuf, g->deregMrSym, g->destroyContext,
                                 g->closeColl, g->closeListen, E(iput) ? old_iput : NULL,
                                 E(iputSignal) ? old_iput_signal : NULL, NULL, NULL,
                                 t11 ? t11->test : t12->test, g->ginProgress, g->queryLastError,
                                 g->finalize};
#undef E
      break;
    }
    default:
      snprintf(why, len, "GIN version %d is not one weft loads (v%d..v%d)", version,
               WEFT_GIN_MIN_VERSION, WEFT_GIN_MAX_VERSION);
      return ncclInvalidUsage;
  }
  return check_gin(out, why, len);
}
