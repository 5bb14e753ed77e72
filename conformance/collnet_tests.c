/* The CollNet tests: init and devices, reduceSupport over every (type, op) pair, iallreduce
 * of a group of 3 checked, for every pair the plugin claims, against a reference each rank
 * computes itself from every rank's inputs (regenerated from the shared seed); iallgather and
 * ireducescatter (v8+, when offered) of windows of the ranks' concatenated blocks through
 * scatter-gather lists, checked the same way. The calls whose
 * arguments changed across v6..v12 (listen, regMr, iallreduce) go through the helpers below. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind_suite.h"
#include "net_suite.h"
#include "stage.h"

#define CN_RANKS 3

static const char* type_name(int t) {
  static const char* n[] = {"int8",    "uint8",   "int32",    "uint32",   "int64",    "uint64",
                            "float16", "float32", "float64",  "bfloat16", "fp8e4m3",  "fp8e5m2"};
  return t >= 0 && t < 12 ? n[t] : "?";
}
static const char* op_name(int o) {
  static const char* n[] = {"sum", "prod", "max", "min", "avg"};
  return o >= 0 && o < 5 ? n[o] : "?";
}
static int type_size(int t) {
  static const int s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return t >= 0 && t < 12 ? s[t] : 0;
}
static int cpu_type(int t) { return t != ncclFloat16 && t != ncclBfloat16 && t < ncclFloat8e4m3; }

/* The entries up to iallreduce sit at the same offsets in every version. */
static const ncclCollNet_v6_t* T6(void) { return kc->collnet.table; }

#define CN_CALL(call, expr)                                                                  \
  do {                                                                                       \
    conf_stage_set(call);                                                                    \
    ncclResult_t res_ = (expr);                                                              \
    if (res_ != ncclSuccess) return conf_fail("%s returned %s", call, kind_result_name(res_)); \
  } while (0)

static ncclResult_t cn_listen(void* ctx, void* handle, void** lc) {
  if (kc->collnet.version >= 11)
    return ((const ncclCollNet_v11_t*)kc->collnet.table)->listen(ctx, 0, handle, lc);
  return T6()->listen(0, handle, lc);
}

static ncclResult_t cn_reg(void* coll, void* buf, size_t len, void** mh) {
  if (kc->collnet.version <= 7) return T6()->regMr(coll, buf, (int)len, NCCL_PTR_HOST, mh);
  return ((const ncclCollNet_v8_t*)kc->collnet.table)->regMr(coll, buf, len, NCCL_PTR_HOST, mh);
}

static ncclResult_t cn_allreduce(void* coll, void* s, void* r, size_t count, int t, int op,
                                 void* smh, void* rmh, void** req) {
  if (kc->collnet.version <= 8)
    return T6()->iallreduce(coll, s, r, (int)count, (ncclDataType_t)t, (ncclRedOp_t)op, smh, rmh, req);
  return ((const ncclCollNet_v9_t*)kc->collnet.table)
      ->iallreduce(coll, s, r, count, (ncclDataType_t)t, (ncclRedOp_t)op, smh, rmh, req);
}

/* After iallreduce the entries move: v8 inserted iallgather and ireducescatter before them. */
static const ncclCollNet_v8_t* T8(void) { return kc->collnet.table; }
static ncclResult_t cn_test(void* req, int* done, int* size) {
  return kc->collnet.version <= 7 ? T6()->test(req, done, size) : T8()->test(req, done, size);
}
static ncclResult_t cn_close_coll(void* coll) {
  return kc->collnet.version <= 7 ? T6()->closeColl(coll) : T8()->closeColl(coll);
}
static ncclResult_t cn_close_listen(void* lc) {
  return kc->collnet.version <= 7 ? T6()->closeListen(lc) : T8()->closeListen(lc);
}

static conf_result t_cn_init(void* arg) {
  (void)arg;
  CONF_TRY(kind_co_net_init());
  void* ctx = NULL;
  CN_CALL("init", collnet_shim_init(&kc->collnet, &ctx, 1, nt_logger));
  int n = -1;
  CN_CALL("devices", T6()->devices(&n));
  if (n <= 0) return conf_skip("devices reports %d: no device on this host", n);
  CN_CALL("finalize", collnet_shim_finalize(&kc->collnet, ctx));
  return CONF_PASS;
}

static conf_result t_cn_support(void* arg) {
  (void)arg;
  CONF_TRY(kind_co_net_init());
  void* ctx = NULL;
  CN_CALL("init", collnet_shim_init(&kc->collnet, &ctx, 1, nt_logger));
  int claimed = 0;
  for (int t = 0; t < ncclNumTypes; t++)
    for (int op = 0; op < ncclNumOps; op++) {
      int s = -7;
      conf_stage_set("reduceSupport");
      ncclResult_t r = T6()->reduceSupport((ncclDataType_t)t, (ncclRedOp_t)op, &s);
      if (r != ncclSuccess)
        return conf_fail("reduceSupport(%s, %s) returned %s", type_name(t), op_name(op),
                         kind_result_name(r));
      if (s != 0 && s != 1)
        return conf_fail("reduceSupport(%s, %s) answered %d (0 or 1)", type_name(t), op_name(op), s);
      claimed += s;
    }
  CN_CALL("finalize", collnet_shim_finalize(&kc->collnet, ctx));
  if (claimed == 0) return conf_fail("reduceSupport claims no (type, op) pair: NCCL never uses it");
  conf_note("%d (type, op) pairs claimed", claimed);
  return CONF_PASS;
}

/* Inputs: rank p's element i of pair (t, op), from the seed alone. Products stay small. */
static void input(uint64_t seed, int p, int t, int op, size_t count, void* out) {
  size_t bytes = count * (size_t)type_size(t);
  nt_fill(out, bytes, seed ^ ((uint64_t)p << 40) ^ ((uint64_t)t << 32) ^ ((uint64_t)op << 24));
  for (size_t i = 0; i < count; i++) {
    unsigned char b = ((unsigned char*)out)[i * (size_t)type_size(t)];
    if (t == ncclFloat32) ((float*)out)[i] = op == ncclProd ? 0.5f + (float)(b % 4) * 0.5f : (float)((int)b - 128) / 7.0f;
    else if (t == ncclFloat64) ((double*)out)[i] = op == ncclProd ? 0.5 + (b % 4) * 0.5 : ((int)b - 128) / 7.0;
    else if (op == ncclProd) {
      memset((char*)out + i * (size_t)type_size(t), 0, (size_t)type_size(t));
      ((unsigned char*)out)[i * (size_t)type_size(t)] = (unsigned char)(1 + b % 3);
    }
  }
}

/* The reference of element i, as a double (exact for every integer this suite produces). */
static double element(const void* buf, int t, size_t i) {
  switch (t) {
    case ncclInt8: return ((const int8_t*)buf)[i];
    case ncclUint8: return ((const uint8_t*)buf)[i];
    case ncclInt32: return ((const int32_t*)buf)[i];
    case ncclUint32: return ((const uint32_t*)buf)[i];
    case ncclInt64: return (double)((const int64_t*)buf)[i];
    case ncclUint64: return (double)((const uint64_t*)buf)[i];
    case ncclFloat32: return ((const float*)buf)[i];
    default: return ((const double*)buf)[i];
  }
}

/* Integer types wrap: the reference folds in the type's own arithmetic. */
static void fold(void* acc, const void* in, int t, int op, size_t i) {
#define FOLD(T)                                                                       \
  {                                                                                   \
    T x = ((T*)acc)[i], y = ((const T*)in)[i];                                        \
    ((T*)acc)[i] = op == ncclSum || op == ncclAvg ? (T)(x + y)                        \
                   : op == ncclProd               ? (T)(x * y)                        \
                   : op == ncclMax                ? (x > y ? x : y)                   \
                                                  : (x < y ? x : y);                  \
  }
  switch (t) {
    case ncclInt8: FOLD(int8_t) break;
    case ncclUint8: FOLD(uint8_t) break;
    case ncclInt32: FOLD(int32_t) break;
    case ncclUint32: FOLD(uint32_t) break;
    case ncclInt64: FOLD(int64_t) break;
    case ncclUint64: FOLD(uint64_t) break;
    case ncclFloat32: FOLD(float) break;
    default: FOLD(double) break;
  }
#undef FOLD
}

/* test() until the request posted by call is done (at most kc->wait_s); *size: its bytes. */
static conf_result cn_wait(kg_rank* r, void* req, const char* call, int* size) {
  int done = 0;
  *size = -1;
  double t0 = nt_now();
  while (!done) {
    CN_CALL("test", cn_test(req, &done, size));
    if (!done && nt_now() - t0 > kc->wait_s)
      return conf_fail("rank %d: %s did not complete in %.0f s", r->rank, call, kc->wait_s);
  }
  return CONF_PASS;
}

/* got[i] against the reduced reference want[i], i < count (first reported as first + i). */
static conf_result compare(kg_rank* r, const char* call, const void* got_buf, const void* ref,
                           int t, int op, size_t count, size_t first) {
  for (size_t i = 0; i < count; i++) {
    double got = element(got_buf, t, i), want = element(ref, t, i);
    if (op == ncclAvg) want = (t == ncclFloat32 || t == ncclFloat64) ? want / r->nranks : want;
    double tol = t == ncclFloat32 ? 1e-5 * fmax(1.0, fabs(want))
                 : t == ncclFloat64 ? 1e-12 * fmax(1.0, fabs(want)) : 0.0;
    if (op == ncclAvg && t != ncclFloat32 && t != ncclFloat64) continue; /* int avg: NCCL's rounding */
    if (!(fabs(got - want) <= tol))
      return conf_fail("rank %d: %s: element %zu is %.17g, the reference says %.17g", r->rank,
                       call, first + i, got, want);
  }
  return CONF_PASS;
}

static conf_result check_pair(kg_rank* r, void* coll, int t, int op, size_t count) {
  size_t bytes = count * (size_t)type_size(t);
  char *send = malloc(bytes), *recv = malloc(bytes), *ref = malloc(bytes), *in = malloc(bytes);
  if (!send || !recv || !ref || !in) return conf_inconclusive("cannot allocate %zu bytes", bytes);
  input(r->seed, r->rank, t, op, count, send);
  memset(recv, 0xa5, bytes);
  input(r->seed, 0, t, op, count, ref);
  for (int p = 1; p < r->nranks; p++) {
    input(r->seed, p, t, op, count, in);
    for (size_t i = 0; i < count; i++) fold(ref, in, t, op, i);
  }
  void *smh = NULL, *rmh = NULL, *req = NULL;
  CN_CALL("regMr", cn_reg(coll, send, bytes, &smh));
  CN_CALL("regMr", cn_reg(coll, recv, bytes, &rmh));
  char call[80];
  snprintf(call, sizeof call, "iallreduce(%s, %s, count %zu)", type_name(t), op_name(op), count);
  CN_CALL(call, cn_allreduce(coll, send, recv, count, t, op, smh, rmh, &req));
  int size;
  CONF_TRY(cn_wait(r, req, call, &size));
  if (size != (int)bytes)
    return conf_fail("rank %d: test of %s reported %d bytes, not %zu", r->rank, call, size, bytes);
  CONF_TRY(compare(r, call, recv, ref, t, op, count, 0));
  CN_CALL("deregMr", T6()->deregMr(coll, smh));
  CN_CALL("deregMr", T6()->deregMr(coll, rmh));
  free(send);
  free(recv);
  free(ref);
  free(in);
  return CONF_PASS;
}

/* A group of r->nranks: init, listen, handles exchanged out of band, connect. */
static conf_result cn_open(kg_rank* r, void** ctx, void** lc, void** coll) {
  CONF_TRY(kind_co_net_init());
  CN_CALL("init", collnet_shim_init(&kc->collnet, ctx, 0x5eed, nt_logger));
  char handle[NCCL_NET_HANDLE_MAXSIZE], all[CN_RANKS][NCCL_NET_HANDLE_MAXSIZE];
  memset(handle, 0, sizeof handle);
  CN_CALL("listen", cn_listen(*ctx, handle, lc));
  CONF_TRY(kg_allgather(r, handle, all, sizeof handle));
  void* handles[CN_RANKS];
  for (int p = 0; p < r->nranks; p++) handles[p] = all[p];
  CN_CALL("connect", T6()->connect(handles, r->nranks, r->rank, *lc, coll));
  return CONF_PASS;
}

static conf_result cn_close(kg_rank* r, void* ctx, void* lc, void* coll) {
  CONF_TRY(kg_barrier(r));
  CN_CALL("closeColl", cn_close_coll(coll));
  CN_CALL("closeListen", cn_close_listen(lc));
  CN_CALL("finalize", collnet_shim_finalize(&kc->collnet, ctx));
  return CONF_PASS;
}

static conf_result b_allreduce(kg_rank* r, void* arg) {
  int want_cpu = *(int*)arg;
  void *ctx = NULL, *lc = NULL, *coll = NULL;
  CONF_TRY(cn_open(r, &ctx, &lc, &coll));
  int checked = 0, unchecked = 0;
  for (int t = 0; t < ncclNumTypes; t++)
    for (int op = 0; op < ncclNumOps; op++) {
      int s = 0;
      CN_CALL("reduceSupport", T6()->reduceSupport((ncclDataType_t)t, (ncclRedOp_t)op, &s));
      if (!s) continue;
      if (cpu_type(t) != want_cpu) {
        unchecked++;
        continue;
      }
      static const size_t counts[] = {1, 1031};
      for (size_t k = 0; k < 2; k++) CONF_TRY(check_pair(r, coll, t, op, counts[k]));
      checked++;
    }
  CONF_TRY(cn_close(r, ctx, lc, coll));
  if (checked == 0)
    return conf_skip(want_cpu ? "the plugin claims no integer, float32 or float64 pair"
                              : "the plugin claims no float16, bfloat16 or fp8 pair");
  if (r->rank == 0) conf_note("%d (type, op) pairs checked", checked);
  return CONF_PASS;
}

static conf_result t_cn_allreduce(void* arg) {
  (void)arg;
  static int cpu = 1;
  return kg_run(CN_RANKS, 0, b_allreduce, &cpu);
}

/* ---- iallgather and ireducescatter (v8+): a window of the ranks' concatenated blocks ---- */

#define CN_MAX_PARTS 4

/* The call with the version's scatter-gather type (v8: 32-bit sizes). The entries sit at the
 * same offsets from v8 on. */
static ncclResult_t cn_allgather(void* coll, void* send, int n, ncclNetSGE_v12_t* parts,
                                 size_t per, size_t wo, size_t wb, void* smh, void** req) {
  if (kc->collnet.version == 8) {
    ncclNetSGE_v8_t p8[CN_MAX_PARTS];
    for (int i = 0; i < n; i++) p8[i] = (ncclNetSGE_v8_t){parts[i].mhandle, parts[i].address, (uint32_t)parts[i].size};
    return T8()->iallgather(coll, send, n, p8, per, wo, wb, smh, req);
  }
  return ((const ncclCollNet_v12_t*)kc->collnet.table)
      ->iallgather(coll, send, n, parts, per, wo, wb, smh, req);
}

static ncclResult_t cn_reducescatter(void* coll, int n, ncclNetSGE_v12_t* parts, void* recv,
                                     size_t per, size_t wo, size_t wb, int t, int op, void* rmh,
                                     void** req) {
  if (kc->collnet.version == 8) {
    ncclNetSGE_v8_t p8[CN_MAX_PARTS];
    for (int i = 0; i < n; i++) p8[i] = (ncclNetSGE_v8_t){parts[i].mhandle, parts[i].address, (uint32_t)parts[i].size};
    return T8()->ireducescatter(coll, n, p8, recv, per, wo, wb, (ncclDataType_t)t, (ncclRedOp_t)op, rmh, req);
  }
  return ((const ncclCollNet_v12_t*)kc->collnet.table)
      ->ireducescatter(coll, n, parts, recv, per, wo, wb, (ncclDataType_t)t, (ncclRedOp_t)op, rmh, req);
}

/* Where a rank's data for window [wo, ...) starts in its own block (NCCL's rule: the window's
 * offset inside the block when the window starts there, else the block's start). */
static size_t block_start(int rank, size_t per, size_t wo) {
  return wo / per == (size_t)rank ? wo % per : 0;
}

/* The part of rank's block inside the window: offset in the block, length. */
static size_t block_slice(int rank, size_t per, size_t wo, size_t wb, size_t* off) {
  size_t lo = (size_t)rank * per > wo ? (size_t)rank * per : wo;
  size_t hi = (size_t)(rank + 1) * per < wo + wb ? (size_t)(rank + 1) * per : wo + wb;
  *off = lo - (size_t)rank * per;
  return hi > lo ? hi - lo : 0;
}

#define CN_AG_PER 1000
#define CN_GAP 64

static conf_result b_allgather(kg_rank* r, void* arg) {
  (void)arg;
  void *ctx = NULL, *lc = NULL, *coll = NULL;
  CONF_TRY(cn_open(r, &ctx, &lc, &coll));
  size_t per = CN_AG_PER, all = per * (size_t)r->nranks;
  char *global = malloc(all), *block = malloc(per), *out = malloc(all + CN_GAP * CN_MAX_PARTS);
  if (!global || !block || !out) return conf_inconclusive("cannot allocate");
  for (int p = 0; p < r->nranks; p++) nt_fill(global + (size_t)p * per, per, r->seed ^ (0xa11ull << 32) ^ (uint64_t)p);
  memcpy(block, global + (size_t)r->rank * per, per);
  void *smh = NULL, *rmh = NULL;
  CN_CALL("regMr", cn_reg(coll, block, per, &smh));
  CN_CALL("regMr", cn_reg(coll, out, all + CN_GAP * CN_MAX_PARTS, &rmh));
  /* The whole, in three uneven parts; then a window across two blocks, in two parts. */
  struct { size_t wo, wb; int n; size_t sizes[CN_MAX_PARTS]; } cases[] = {
      {0, all, 3, {700, 1300, all - 2000}},
      {per / 2 + 1, per + 37, 2, {1, per + 36}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ncclNetSGE_v12_t parts[CN_MAX_PARTS];
    memset(out, 0xa5, all + CN_GAP * CN_MAX_PARTS);
    char* at = out;
    for (int i = 0; i < cases[k].n; i++) { /* a gap after each part: it must stay untouched */
      parts[i] = (ncclNetSGE_v12_t){rmh, at, cases[k].sizes[i]};
      at += cases[k].sizes[i] + CN_GAP;
    }
    char call[120];
    snprintf(call, sizeof call, "iallgather(%zu bytes per rank, window %zu+%zu, %d parts)", per,
             cases[k].wo, cases[k].wb, cases[k].n);
    void* req = NULL;
    int size;
    CN_CALL(call, cn_allgather(coll, block + block_start(r->rank, per, cases[k].wo), cases[k].n,
                               parts, per, cases[k].wo, cases[k].wb, smh, &req));
    CONF_TRY(cn_wait(r, req, call, &size));
    size_t w = cases[k].wo;
    for (int i = 0; i < cases[k].n; i++) {
      const unsigned char* got = parts[i].address;
      for (size_t b = 0; b < parts[i].size; b++, w++)
        if (got[b] != (unsigned char)global[w])
          return conf_fail("rank %d: %s: byte %zu of the window (part %d) is 0x%02x, rank %zu's "
                           "block says 0x%02x", r->rank, call, w - cases[k].wo, i, got[b],
                           w / per, (unsigned char)global[w]);
      for (size_t b = 0; b < CN_GAP; b++)
        if (got[parts[i].size + b] != 0xa5)
          return conf_fail("rank %d: %s wrote past part %d (%zu bytes)", r->rank, call, i,
                           parts[i].size);
    }
    CONF_TRY(kg_barrier(r));
  }
  CN_CALL("deregMr", T6()->deregMr(coll, smh));
  CN_CALL("deregMr", T6()->deregMr(coll, rmh));
  free(global), free(block), free(out);
  return cn_close(r, ctx, lc, coll);
}

static conf_result t_cn_allgather(void* arg) {
  (void)arg;
  if (kc->collnet.version < 8 || T8()->iallgather == NULL)
    return conf_skip("the plugin offers no iallgather (v8+, optional)");
  return kg_run(CN_RANKS, 0, b_allgather, NULL);
}

#define CN_RS_COUNT 67 /* elements per rank's block */

static conf_result rs_pair(kg_rank* r, void* coll, int t, int op) {
  size_t ts = (size_t)type_size(t), per = CN_RS_COUNT * ts, all = per * (size_t)r->nranks;
  size_t total = all / ts;
  char *in = malloc(all), *ref = malloc(all), *other = malloc(all), *recv = malloc(per);
  if (!in || !ref || !other || !recv) return conf_inconclusive("cannot allocate");
  uint64_t seed = r->seed ^ 0x5ca77e5ull;
  input(seed, r->rank, t, op, total, in);
  input(seed, 0, t, op, total, ref);
  for (int p = 1; p < r->nranks; p++) {
    input(seed, p, t, op, total, other);
    for (size_t i = 0; i < total; i++) fold(ref, other, t, op, i);
  }
  memset(recv, 0xa5, per);
  /* The window: from element 13 to 5 before the end, in two parts split at element 50. */
  size_t wo = 13 * ts, wb = all - 18 * ts, split = 37 * ts;
  void *smh = NULL, *rmh = NULL, *req = NULL;
  CN_CALL("regMr", cn_reg(coll, in, all, &smh));
  CN_CALL("regMr", cn_reg(coll, recv, per, &rmh));
  ncclNetSGE_v12_t parts[2] = {{smh, in + wo, split}, {smh, in + wo + split, wb - split}};
  char call[120];
  snprintf(call, sizeof call, "ireducescatter(%s, %s, %d elements per rank, window %zu+%zu)",
           type_name(t), op_name(op), CN_RS_COUNT, wo / ts, wb / ts);
  size_t start = block_start(r->rank, per, wo);
  int size;
  CN_CALL(call, cn_reducescatter(coll, 2, parts, recv + start, per, wo, wb, t, op, rmh, &req));
  CONF_TRY(cn_wait(r, req, call, &size));
  size_t off, len = block_slice(r->rank, per, wo, wb, &off);
  CONF_TRY(compare(r, call, recv + off, ref + (size_t)r->rank * per + off, t, op, len / ts,
                   ((size_t)r->rank * per + off) / ts));
  CN_CALL("deregMr", T6()->deregMr(coll, smh));
  CN_CALL("deregMr", T6()->deregMr(coll, rmh));
  free(in), free(ref), free(other), free(recv);
  return CONF_PASS;
}

static conf_result b_reducescatter(kg_rank* r, void* arg) {
  (void)arg;
  void *ctx = NULL, *lc = NULL, *coll = NULL;
  CONF_TRY(cn_open(r, &ctx, &lc, &coll));
  int checked = 0;
  for (int t = 0; t < ncclNumTypes; t++)
    for (int op = 0; op < ncclNumOps; op++) {
      int s = 0;
      CN_CALL("reduceSupport", T6()->reduceSupport((ncclDataType_t)t, (ncclRedOp_t)op, &s));
      if (!s || !cpu_type(t)) continue;
      CONF_TRY(rs_pair(r, coll, t, op));
      checked++;
    }
  CONF_TRY(cn_close(r, ctx, lc, coll));
  if (checked == 0) return conf_skip("the plugin claims no integer, float32 or float64 pair");
  if (r->rank == 0) conf_note("%d (type, op) pairs checked", checked);
  return CONF_PASS;
}

static conf_result t_cn_reducescatter(void* arg) {
  (void)arg;
  if (kc->collnet.version < 8 || T8()->ireducescatter == NULL)
    return conf_skip("the plugin offers no ireducescatter (v8+, optional)");
  return kg_run(CN_RANKS, 0, b_reducescatter, NULL);
}

static conf_result t_cn_allreduce_narrow(void* arg) {
  (void)arg;
  CONF_TRY(kind_co_net_init());
  int s = 0, any = 0;
  void* ctx = NULL;
  CN_CALL("init", collnet_shim_init(&kc->collnet, &ctx, 1, nt_logger));
  for (int t = 0; t < ncclNumTypes; t++)
    for (int op = 0; op < ncclNumOps; op++)
      if (!cpu_type(t) && T6()->reduceSupport((ncclDataType_t)t, (ncclRedOp_t)op, &s) == ncclSuccess && s)
        any = 1;
  (void)collnet_shim_finalize(&kc->collnet, ctx);
  if (!any) return conf_skip("the plugin claims no float16, bfloat16 or fp8 pair");
  return conf_skip("the plugin claims float16, bfloat16 or fp8 pairs; this suite has no "
                   "reference for those types yet");
}

const conf_test collnet_tests[] = {
    {"init_and_devices_succeed", t_cn_init, 0},
    {"reduce_support_answers_every_pair", t_cn_support, 0},
    {"allreduce_matches_the_reference_for_every_claimed_pair", t_cn_allreduce, 3},
    {"allreduce_of_16bit_and_fp8_types", t_cn_allreduce_narrow, 0},
    {"allgather_of_a_window_matches_every_ranks_block", t_cn_allgather, 3},
    {"reducescatter_of_a_window_matches_the_reference", t_cn_reducescatter, 3},
};
const int collnet_tests_count = sizeof collnet_tests / sizeof collnet_tests[0];
