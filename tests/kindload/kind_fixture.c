/* Fixture plugins for the GIN/RMA/CollNet loader tests: one source, built once per kind and
 * version (FIX_GIN=N, FIX_RMA=N, FIX_GIN13_ONLY, FIX_COLLNET=N; FIX_NAME the table's name;
 * FIX_INIT_FAILS: init returns ncclSystemError; FIX_NULL_REG: regMrSym is NULL). Every entry is
 * typed for its version; the ones the loader calls record what they saw in fixture_stats. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "nccl_collnet.h"
#include "nccl_gin.h"
#include "nccl_rma.h"
#include "kind_fixture.h"

#define EXPORT __attribute__((visibility("default")))

/* Each build uses the entries of one kind and version only. */
#pragma GCC diagnostic ignored "-Wunused-function"


EXPORT fixture_stats_t fixture_stats;

static int ctx_token;

static ncclResult_t f_init(void** ctx, uint64_t id, ncclDebugLogger_t log) {
  (void)log;
  fixture_stats.inits++;
  fixture_stats.last_comm_id = id;
#ifdef FIX_INIT_FAILS
  (void)ctx;
  return ncclSystemError;
#else
  *ctx = &ctx_token;
  return ncclSuccess;
#endif
}
static ncclResult_t f_init_old(ncclDebugLogger_t log) {
  void* c;
  return f_init(&c, 0, log);
}
static ncclResult_t f_fin(void* ctx) {
  (void)ctx;
  fixture_stats.finalizes++;
  return ncclSuccess;
}
static ncclResult_t f_devices(int* n) {
  *n = 2;
  return ncclSuccess;
}
static ncclResult_t f_props12(int d, ncclNetProperties_v12_t* p) {
  memset(p, 0, sizeof *p);
  p->name = (char*)"fix";
  p->ptrSupport = NCCL_PTR_HOST;
  p->netDeviceType = NCCL_NET_DEVICE_GIN_PROXY;
  return d >= 0 && d < 2 ? ncclSuccess : ncclInvalidArgument;
}
static ncclResult_t f_props11(int d, ncclNetProperties_v11_t* p) {
  memset(p, 0, sizeof *p);
  p->name = (char*)"fix";
  p->ptrSupport = NCCL_PTR_HOST;
  p->netDeviceType = NCCL_NET_DEVICE_GIN_PROXY;
  return d >= 0 && d < 2 ? ncclSuccess : ncclInvalidArgument;
}
static ncclResult_t f_listen(void* ctx, int dev, void* h, void** l) {
  (void)ctx, (void)dev, (void)h, (void)l;
  return ncclInternalError;
}
static ncclResult_t f_connect(void* ctx, void* hs[], int n, int r, void* l, void** c) {
  (void)ctx, (void)hs, (void)n, (void)r, (void)l, (void)c;
  return ncclInternalError;
}
static ncclResult_t f_reg(void* c, void* d, size_t s, int t, uint64_t flags, void** mh) {
  (void)c, (void)d, (void)s, (void)t;
  fixture_stats.regs++;
  fixture_stats.last_mr_flags = flags;
  *mh = &ctx_token;
  return ncclSuccess;
}
static ncclResult_t f_reg_gin(void* c, void* d, size_t s, int t, uint64_t flags, void** mh,
                              void** gh) {
  *gh = NULL;
  return f_reg(c, d, s, t, flags, mh);
}
static ncclResult_t f_reg_dmabuf_gin(void* c, void* d, size_t s, int t, uint64_t o, int fd,
                                     uint64_t flags, void** mh, void** gh) {
  (void)c, (void)d, (void)s, (void)t, (void)o, (void)fd, (void)flags, (void)mh, (void)gh;
  return ncclInvalidUsage;
}
static ncclResult_t f_reg_dmabuf(void* c, void* d, size_t s, int t, uint64_t o, int fd,
                                 uint64_t flags, void** mh) {
  (void)c, (void)d, (void)s, (void)t, (void)o, (void)fd, (void)flags, (void)mh;
  return ncclInvalidUsage;
}
static ncclResult_t f_one(void* p) {
  (void)p;
  return ncclSuccess;
}
static ncclResult_t f_dereg(void* c, void* mh) {
  (void)c, (void)mh;
  return ncclSuccess;
}
static ncclResult_t f_test(void* c, void* r, int* done) {
  (void)c, (void)r;
  *done = 1;
  return ncclSuccess;
}
static ncclResult_t f_last_error(void* c, bool* has) {
  (void)c;
  *has = false;
  return ncclSuccess;
}
static ncclResult_t f_iput13(void* x, int k, uint64_t so, void* smh, size_t s, uint64_t dof,
                             void* dmh, uint32_t r, void** q) {
  (void)x, (void)k, (void)so, (void)smh, (void)s, (void)dof, (void)dmh, (void)r, (void)q;
  return ncclInternalError;
}
static ncclResult_t f_iflush(void* x, int k, void* mh, uint32_t r, void** q) {
  (void)x, (void)k, (void)mh, (void)r, (void)q;
  return ncclInternalError;
}

#ifdef FIX_NULL_REG
#define REG_GIN NULL
#define REG_RMA NULL
#else
#define REG_GIN f_reg_gin
#define REG_RMA f_reg
#endif

#if defined(FIX_GIN) && FIX_GIN == 15
static ncclResult_t f_ginprops15(ncclGinProperties_v15_t* p) {
  p->supportsStrongSignals = true;
  p->supportsVASignals = false;
  p->barrierOptions = NCCL_GIN_BARRIER_SIGNAL_EFFICIENT;
  return ncclSuccess;
}
static ncclResult_t f_connect15(void* ctx, void* hs[], int n, int r, void* l, void** c,
                                volatile uint32_t* a) {
  (void)a;
  return f_connect(ctx, hs, n, r, l, c);
}
static ncclResult_t f_ctx15(void* c, ncclGinConfig_v15_t* k, void** x, ncclNetDeviceHandle_v11_t** d) {
  (void)c, (void)k, (void)x, (void)d;
  return ncclInternalError;
}
EXPORT const ncclGin_v15_t ncclGinPlugin_v15 = {
    FIX_NAME, f_init, f_devices, f_ginprops15, f_props12, f_listen, f_connect15, f_ctx15, REG_GIN,
    f_reg_dmabuf_gin, f_dereg, f_one, f_one, f_one, f_one, f_last_error, f_fin};
#endif

#if defined(FIX_GIN) && FIX_GIN == 14
static ncclResult_t f_ginprops14(ncclGinProperties_v14_t* p) {
  p->supportsStrongSignals = false;
  p->supportsVASignals = true;
  return ncclSuccess;
}
static ncclResult_t f_ctx14(void* c, ncclGinConfig_v14_t* k, void** x, ncclNetDeviceHandle_v11_t** d) {
  (void)c, (void)k, (void)x, (void)d;
  return ncclInternalError;
}
EXPORT const ncclGin_v14_t ncclGinPlugin_v14 = {
    FIX_NAME, f_init, f_devices, f_ginprops14, f_props12, f_listen, f_connect, f_ctx14, REG_GIN,
    f_reg_dmabuf_gin, f_dereg, f_one, f_one, f_one, f_one, f_last_error, f_fin};
#endif

#if (defined(FIX_GIN) && FIX_GIN == 13) || defined(FIX_GIN13_ONLY) || (defined(FIX_RMA) && FIX_RMA == 13)
static ncclResult_t f_ctx13(void* c, ncclGinConfig_v13_t* k, void** x, ncclNetDeviceHandle_v11_t** d) {
  (void)c, (void)k, (void)x, (void)d;
  return ncclInternalError;
}
static ncclResult_t f_iputsig13(void* x, int k, uint64_t so, void* smh, size_t s, uint64_t dof,
                                void* dmh, uint32_t r, uint64_t sgo, void* sgm, uint64_t v,
                                uint32_t op, void** q) {
  (void)sgo, (void)sgm, (void)v, (void)op;
  return f_iput13(x, k, so, smh, s, dof, dmh, r, q);
}
#if defined(FIX_RMA)
EXPORT const ncclRma_v13_t ncclRmaPlugin_v13 = {
#else
EXPORT const ncclGin_v13_t ncclGinPlugin_v13 = {
#endif
    FIX_NAME, f_init, f_devices, f_props12, f_listen, f_connect, f_ctx13, REG_GIN,
    f_reg_dmabuf_gin, f_dereg, f_one, f_one, f_one, f_iput13, f_iputsig13, f_iput13, f_iflush,
    f_test, f_one, f_last_error, f_fin};
#endif

#if defined(FIX_GIN) && (FIX_GIN == 11 || FIX_GIN == 12)
static ncclResult_t f_iput11(void* c, uint64_t so, void* smh, size_t s, uint64_t dof, void* dmh,
                             uint32_t r, void** q) {
  return f_iput13(c, 0, so, smh, s, dof, dmh, r, q);
}
#if FIX_GIN == 11
static ncclResult_t f_ctx11(void* c, int ns, int nc, void** x, ncclNetDeviceHandle_v11_t** d) {
  (void)c, (void)ns, (void)nc, (void)x, (void)d;
  return ncclInternalError;
}
static ncclResult_t f_iputsig11(void* c, uint64_t so, void* smh, size_t s, uint64_t dof, void* dmh,
                                uint32_t r, uint64_t sgo, void* sgm, uint64_t v, uint32_t op,
                                void** q) {
  (void)sgo, (void)sgm, (void)v, (void)op;
  return f_iput11(c, so, smh, s, dof, dmh, r, q);
}
EXPORT const ncclGin_v11_t ncclGinPlugin_v11 = {
    FIX_NAME, f_init, f_devices, f_props11, f_listen, f_connect, f_ctx11, REG_GIN,
    f_reg_dmabuf_gin, f_dereg, f_one, f_one, f_one, f_iput11, f_iputsig11, f_test, f_one,
    f_last_error, f_fin};
#else
static ncclResult_t f_connect12(void* ctx, void* hs[], int n, int r, int nc, int qd, void* l,
                                void** c) {
  (void)nc, (void)qd;
  return f_connect(ctx, hs, n, r, l, c);
}
static ncclResult_t f_ctx12(void* c, int ns, int nc, int nx, void** x, ncclNetDeviceHandle_v11_t** d) {
  (void)c, (void)ns, (void)nc, (void)nx, (void)x, (void)d;
  return ncclInternalError;
}
static ncclResult_t f_iput12(void* c, uint64_t so, void* smh, size_t s, uint64_t dof, void* dmh,
                             uint32_t r, int k, void** q) {
  (void)k;
  return f_iput11(c, so, smh, s, dof, dmh, r, q);
}
static ncclResult_t f_iputsig12(void* c, uint64_t so, void* smh, size_t s, uint64_t dof, void* dmh,
                                uint32_t r, uint64_t sgo, void* sgm, uint64_t v, uint32_t op,
                                int k, void** q) {
  (void)sgo, (void)sgm, (void)v, (void)op, (void)k;
  return f_iput11(c, so, smh, s, dof, dmh, r, q);
}
EXPORT const ncclGin_v12_t ncclGinPlugin_v12 = {
    FIX_NAME, f_init, f_devices, f_props11, f_listen, f_connect12, f_ctx12, REG_GIN,
    f_reg_dmabuf_gin, f_dereg, f_one, f_one, f_one, f_iput12, f_iputsig12, f_test, f_one,
    f_last_error, f_fin};
#endif
#endif

#if defined(FIX_RMA) && (FIX_RMA == 14 || FIX_RMA == 15)
static ncclResult_t f_rctx(void* c, ncclRmaConfig_v14_t* k, void** x) {
  (void)c, (void)k, (void)x;
  return ncclInternalError;
}
static ncclResult_t f_iget13(void* x, int k, uint64_t ro, void* rmh, size_t s, uint64_t lo,
                             void* lmh, uint32_t r, void** q) {
  return f_iput13(x, k, ro, rmh, s, lo, lmh, r, q);
}
#if FIX_RMA == 14
static ncclResult_t f_iputsig14(void* x, int k, uint64_t so, void* smh, size_t s, uint64_t dof,
                                void* dmh, uint32_t r, uint64_t sgo, void* sgm, uint64_t v,
                                uint32_t op, bool strong, void** q) {
  (void)sgo, (void)sgm, (void)v, (void)op, (void)strong;
  return f_iput13(x, k, so, smh, s, dof, dmh, r, q);
}
EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {
    FIX_NAME, f_init, f_devices, f_props12, f_listen, f_connect, f_rctx, REG_RMA, f_reg_dmabuf,
    f_dereg, f_one, f_one, f_one, f_iput13, f_iputsig14, f_iget13, f_iflush, f_test, f_one,
    f_last_error, f_fin};
#else
static ncclResult_t f_iput15(void* x, int k, uint64_t so, void* smh, size_t s, uint64_t dof,
                             void* dmh, uint32_t r, uint32_t o, void** q) {
  (void)o;
  return f_iput13(x, k, so, smh, s, dof, dmh, r, q);
}
static ncclResult_t f_iputsig15(void* x, int k, uint64_t so, void* smh, size_t s, uint64_t dof,
                                void* dmh, uint32_t r, uint64_t sgo, void* sgm, uint64_t v,
                                uint32_t op, bool strong, uint32_t o, void** q) {
  (void)sgo, (void)sgm, (void)v, (void)op, (void)strong, (void)o;
  return f_iput13(x, k, so, smh, s, dof, dmh, r, q);
}
EXPORT const ncclRma_v15_t ncclRmaPlugin_v15 = {
    FIX_NAME, f_init, f_devices, f_props12, f_listen, f_connect, f_rctx, REG_RMA, f_reg_dmabuf,
    f_dereg, f_one, f_one, f_one, f_iput15, f_iputsig15, f_iput15, f_iflush, f_test, f_one,
    f_last_error, f_fin};
#endif
#endif

#ifdef FIX_COLLNET
/* Every CollNet version shares the prefix up to iallreduce; the rest differs in widths. */
static ncclResult_t c_listen_old(int dev, void* h, void** l) { return f_listen(NULL, dev, h, l); }
static ncclResult_t c_connect(void* hs[], int n, int r, void* l, void** c) {
  return f_connect(NULL, hs, n, r, l, c);
}
static ncclResult_t c_reduce(ncclDataType_t t, ncclRedOp_t o, int* s) {
  (void)t, (void)o;
  *s = 0;
  return ncclSuccess;
}
static ncclResult_t c_dereg(void* c, void* m) { return f_dereg(c, m); }
static ncclResult_t c_test(void* r, int* done, int* size) {
  (void)r;
  *done = 1;
  *size = 0;
  return ncclSuccess;
}
static ncclResult_t c_iflush(void* c, void* d, int s, void* m, void** q) {
  (void)c, (void)d, (void)s, (void)m, (void)q;
  return ncclInternalError;
}
static ncclResult_t c_regdmabuf(void* c, void* d, size_t s, int t, uint64_t o, int fd, void** m) {
  return f_reg_dmabuf(c, d, s, t, o, fd, 0, m);
}
#define CN_PROPS_(v) ncclNetProperties_v##v##_t
#define CN_PROPS(v) CN_PROPS_(v)
static ncclResult_t c_props(int d, CN_PROPS(FIX_COLLNET) * p) {
  memset(p, 0, sizeof *p);
  p->name = (char*)"fix";
  p->ptrSupport = NCCL_PTR_HOST;
  return d >= 0 && d < 2 ? ncclSuccess : ncclInvalidArgument;
}
#if FIX_COLLNET >= 8
typedef size_t c_size_t;
#else
typedef int c_size_t;
#endif
#if FIX_COLLNET >= 9
typedef size_t c_count_t;
#else
typedef int c_count_t;
#endif
static ncclResult_t c_reg(void* c, void* d, c_size_t s, int t, void** m) {
  return f_reg(c, d, (size_t)s, t, 0, m);
}
static ncclResult_t c_allreduce(void* c, void* s, void* r, c_count_t n, ncclDataType_t t,
                                ncclRedOp_t o, void* sm, void* rm, void** q) {
  (void)c, (void)s, (void)r, (void)n, (void)t, (void)o, (void)sm, (void)rm, (void)q;
  return ncclInternalError;
}
#define CN_SGE_(v) ncclNetSGE_v##v##_t
#define CN_SGE(v) CN_SGE_(v)
#if FIX_COLLNET >= 8
static ncclResult_t c_allgather(void* c, void* s, int n, CN_SGE(FIX_COLLNET) * parts, size_t b,
                                size_t wo, size_t wb, void* sm, void** q) {
  (void)c, (void)s, (void)n, (void)parts, (void)b, (void)wo, (void)wb, (void)sm, (void)q;
  return ncclInternalError;
}
static ncclResult_t c_rs(void* c, int n, CN_SGE(FIX_COLLNET) * parts, void* r, size_t b, size_t wo,
                         size_t wb, ncclDataType_t t, ncclRedOp_t o, void* rm, void** q) {
  (void)c, (void)n, (void)parts, (void)r, (void)b, (void)wo, (void)wb, (void)t, (void)o, (void)rm,
      (void)q;
  return ncclInternalError;
}
#endif
#define CN_VPROPS_(v) ncclNetVDeviceProps_v##v##_t
#define CN_VPROPS(v) CN_VPROPS_(v)
#if FIX_COLLNET >= 9
static ncclResult_t c_vdev(int* d, CN_VPROPS(FIX_COLLNET) * p) {
  (void)d, (void)p;
  return ncclInvalidUsage;
}
#endif
#define CN_T_(v) ncclCollNet_v##v##_t
#define CN_T(v) CN_T_(v)
#define CN_SYM_(v) ncclCollNetPlugin_v##v
#define CN_SYM(v) CN_SYM_(v)
EXPORT const CN_T(FIX_COLLNET) CN_SYM(FIX_COLLNET) = {
    .name = FIX_NAME,
#if FIX_COLLNET >= 11
    .init = f_init,
    .listen = f_listen,
    .finalize = f_fin,
#else
    .init = f_init_old,
    .listen = c_listen_old,
#endif
    .devices = f_devices, .getProperties = c_props, .connect = c_connect,
    .reduceSupport = c_reduce, .regMr = c_reg, .regMrDmaBuf = c_regdmabuf, .deregMr = c_dereg,
    .iallreduce = c_allreduce,
#if FIX_COLLNET >= 8
    .iallgather = c_allgather, .ireducescatter = c_rs,
#endif
#if FIX_COLLNET >= 9
    .makeVDevice = c_vdev,
#endif
    .iflush = c_iflush, .test = c_test, .closeColl = f_one, .closeListen = f_one};
#endif
