/* A correct GIN plugin of the old shapes, ncclGinPlugin_v11 and _v12 (NCCL 2.28/2.29: puts on
 * the group, not on a context; v12 adds connections and a queue depth), built over weft's
 * socket plugin's RMA v15 table (WEFT_SOCKET_PLUGIN, opened by a constructor). It exists so
 * that weft-conformance gin --abi v11|v12 moves data end to end through weft's v11/v12 adapters
 * (core/plugin kind shims): every group gets one RMA context at connect, which the group's puts
 * use. Not broken: every test it runs must pass (or skip where v11/v12 lack the call). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_gin.h"
#include "nccl_rma.h"

#define EXPORT __attribute__((visibility("default")))
#define OLD_MAGIC 0x67696e6f6c643131ull

static const ncclRma_v15_t* R; /* the socket plugin's RMA v15 */

typedef struct {
  uint64_t magic;
  void* coll; /* the socket plugin's group */
  void* ctx;  /* its one RMA context, created at connect */
} old_coll;

static old_coll* oc(void* p) {
  old_coll* c = p;
  return c && c->magic == OLD_MAGIC ? c : NULL;
}

static ncclResult_t o_props(int dev, ncclNetProperties_v11_t* p) {
  ncclNetProperties_v12_t q;
  if (p == NULL) return ncclInvalidArgument;
  ncclResult_t r = R->getProperties(dev, &q);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof *p);
  p->name = q.name;
  p->pciPath = q.pciPath;
  p->guid = q.guid;
  p->ptrSupport = q.ptrSupport;
  p->regIsGlobal = q.regIsGlobal;
  p->forceFlush = q.forceFlush;
  p->speed = q.speed;
  p->port = q.port;
  p->latency = q.latency;
  p->maxComms = q.maxComms;
  p->maxRecvs = q.maxRecvs;
  p->netDeviceType = q.netDeviceType;
  p->netDeviceVersion = q.netDeviceVersion;
  p->vProps.ndevs = q.vProps.ndevs;
  for (int i = 0; i < q.vProps.ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC; i++)
    p->vProps.devs[i] = q.vProps.devs[i];
  p->maxP2pBytes = q.maxP2pBytes;
  p->maxCollBytes = q.maxCollBytes;
  p->maxMultiRequestSize = q.maxMultiRequestSize;
  return ncclSuccess;
}

static ncclResult_t o_connect(void* ctx, void* handles[], int nranks, int rank, void* lc,
                              void** coll) {
  if (coll == NULL) return ncclInvalidArgument;
  old_coll* c = calloc(1, sizeof *c);
  if (c == NULL) return ncclSystemError;
  ncclResult_t r = R->connect(ctx, handles, nranks, rank, lc, &c->coll);
  ncclRmaConfig_v15_t cfg = {.nContexts = 1, .trafficClass = -1, .rankStride = 1};
  if (r == ncclSuccess && (r = R->createContext(c->coll, &cfg, &c->ctx)) != ncclSuccess)
    (void)R->closeColl(c->coll);
  if (r != ncclSuccess) {
    free(c);
    return r;
  }
  c->magic = OLD_MAGIC;
  *coll = c;
  return ncclSuccess;
}

static ncclResult_t o_connect12(void* ctx, void* handles[], int nranks, int rank, int nconn,
                                int depth, void* lc, void** coll) {
  if (nconn < 1 || depth < 0) return ncclInvalidArgument; /* depth 0: the plugin's default */
  return o_connect(ctx, handles, nranks, rank, lc, coll);
}

/* The GIN context: a token naming its group (puts go through the group in v11/v12). */
static ncclResult_t o_context(void* coll, int nsig, int ncnt, void** gctx,
                              ncclNetDeviceHandle_v11_t** dev) {
  (void)nsig, (void)ncnt;
  old_coll* c = oc(coll);
  if (c == NULL || gctx == NULL) return ncclInvalidArgument;
  if (dev) *dev = NULL; /* a proxy device */
  *gctx = c;
  return ncclSuccess;
}

static ncclResult_t o_context12(void* coll, int nsig, int ncnt, int nctx, void** gctx,
                                ncclNetDeviceHandle_v11_t** dev) {
  if (nctx < 1) return ncclInvalidArgument;
  return o_context(coll, nsig, ncnt, gctx, dev);
}

static ncclResult_t o_destroy(void* gctx) { return oc(gctx) ? ncclSuccess : ncclInvalidArgument; }

static ncclResult_t o_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                          void** mh, void** gh) {
  old_coll* c = oc(coll);
  if (c == NULL) return ncclInvalidArgument;
  if (gh) *gh = NULL;
  return R->regMrSym(c->coll, data, size, type, flags, mh);
}

static ncclResult_t o_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t off,
                                 int fd, uint64_t flags, void** mh, void** gh) {
  old_coll* c = oc(coll);
  if (c == NULL) return ncclInvalidArgument;
  if (gh) *gh = NULL;
  return R->regMrSymDmaBuf(c->coll, data, size, type, off, fd, flags, mh);
}

static ncclResult_t o_dereg(void* coll, void* mh) {
  old_coll* c = oc(coll);
  return c ? R->deregMrSym(c->coll, mh) : ncclInvalidArgument;
}

static ncclResult_t o_close(void* coll) {
  old_coll* c = oc(coll);
  if (c == NULL) return ncclInvalidArgument;
  ncclResult_t r = R->destroyContext(c->ctx);
  ncclResult_t r2 = R->closeColl(c->coll);
  c->magic = 0;
  free(c);
  return r != ncclSuccess ? r : r2;
}

static ncclResult_t o_iput(void* coll, uint64_t so, void* smh, size_t size, uint64_t dof,
                           void* dmh, uint32_t rank, void** req) {
  old_coll* c = oc(coll);
  return c ? R->iput(c->ctx, 0, so, smh, size, dof, dmh, rank, 0, req) : ncclInvalidArgument;
}

static ncclResult_t o_iput12(void* coll, uint64_t so, void* smh, size_t size, uint64_t dof,
                             void* dmh, uint32_t rank, int conn, void** req) {
  if (conn < 0) return ncclInvalidArgument;
  return o_iput(coll, so, smh, size, dof, dmh, rank, req);
}

static ncclResult_t o_signal(void* coll, uint64_t so, void* smh, size_t size, uint64_t dof,
                             void* dmh, uint32_t rank, uint64_t sig_off, void* sig_mh,
                             uint64_t value, uint32_t op, void** req) {
  old_coll* c = oc(coll);
  return c ? R->iputSignal(c->ctx, 0, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, op,
                           true, 0, req)
           : ncclInvalidArgument;
}

static ncclResult_t o_signal12(void* coll, uint64_t so, void* smh, size_t size, uint64_t dof,
                               void* dmh, uint32_t rank, uint64_t sig_off, void* sig_mh,
                               uint64_t value, uint32_t op, int conn, void** req) {
  if (conn < 0) return ncclInvalidArgument;
  return o_signal(coll, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, op, req);
}

static ncclResult_t o_test(void* coll, void* req, int* done) {
  old_coll* c = oc(coll);
  return c ? R->test(c->coll, req, done) : ncclInvalidArgument;
}

static ncclResult_t o_progress(void* coll) {
  old_coll* c = oc(coll);
  return c ? R->rmaProgress(c->ctx) : ncclInvalidArgument;
}

static ncclResult_t o_last_error(void* gctx, bool* has) {
  old_coll* c = oc(gctx);
  return c ? R->queryLastError(c->ctx, has) : ncclInvalidArgument;
}

EXPORT ncclGin_v11_t ncclGinPlugin_v11;
EXPORT ncclGin_v12_t ncclGinPlugin_v12;

__attribute__((constructor)) static void wrap_socket_plugin(void) {
  void* dl = dlopen(WEFT_SOCKET_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL || (R = dlsym(dl, "ncclRmaPlugin_v15")) == NULL) {
    fprintf(stderr, "gin_old_wrap: cannot open %s: %s\n", WEFT_SOCKET_PLUGIN, dlerror());
    return; /* the tables stay empty: the suite reports a NULL name */
  }
  ncclGinPlugin_v11 = (ncclGin_v11_t){
      "gin-old-v11", R->init,    R->devices,   o_props,     R->listen,    o_connect,
      o_context,     o_reg,      o_reg_dmabuf, o_dereg,     o_destroy,    o_close,
      R->closeListen, o_iput,    o_signal,     o_test,      o_progress,   o_last_error,
      R->finalize};
  ncclGinPlugin_v12 = (ncclGin_v12_t){
      "gin-old-v12", R->init,    R->devices,   o_props,     R->listen,    o_connect12,
      o_context12,   o_reg,      o_reg_dmabuf, o_dereg,     o_destroy,    o_close,
      R->closeListen, o_iput12,  o_signal12,   o_test,      o_progress,   o_last_error,
      R->finalize};
}
