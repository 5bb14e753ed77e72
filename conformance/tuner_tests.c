/* The tuner suite: exported versions (v2..v6) and their tables, init and teardown over many
 * communicator shapes, and getCollInfo's answers (v3+: cells marked NCCL_ALGO_PROTO_IGNORE stay
 * -1, usable cells are only ever lowered and at least one stays usable; v2: the algorithm and
 * protocol are valid indexes the communicator supports; every version: 0 <= nChannels <= 64),
 * that getCollInfo is fast and allocates nothing, and that odd inputs (0 bytes, huge sizes,
 * 0 or huge numPipeOps, one rank) neither crash nor yield nonsense. v6's optional getChunkSize:
 * every answer is a positive size, the same for the same question, given fast without
 * allocating, and odd inputs do not crash it.
 *
 * Allocation counting: this file defines malloc and friends for the whole weft-conformance
 * executable (forwarding to glibc's __libc_* entries), so a plugin's allocations inside a
 * getCollInfo call are seen. Sanitizer builds keep their own allocator and skip that check. */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_tuner.h"
#include "cli.h"
#include "runner.h"
#include "stage.h"
#include "tuner_tests.h"

#define TUNER_MIN 2
#define TUNER_MAX 6
#define TUNER_MAX_CHANNELS 64

typedef struct {
  const char* path;
  void* dl;
  char load_error[512];
  unsigned exported;
  const void* raw[TUNER_MAX + 1];
  char other_symbols[256];
} tuner_ctx;

/* ---- allocation counting ---- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TUNER_COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define TUNER_COUNT_ALLOCS 0
#endif
#endif
#ifndef TUNER_COUNT_ALLOCS
#define TUNER_COUNT_ALLOCS 1
#endif

static volatile int alloc_counting;
static volatile long alloc_count;

#if TUNER_COUNT_ALLOCS
extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

static void count_alloc(void) {
  if (alloc_counting) __atomic_add_fetch(&alloc_count, 1, __ATOMIC_RELAXED);
}
void* malloc(size_t n) {
  count_alloc();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  count_alloc();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  count_alloc();
  return __libc_realloc(p, n);
}
void free(void* p) {
  if (p) count_alloc();
  __libc_free(p);
}
int posix_memalign(void** out, size_t align, size_t n) {
  count_alloc();
  void* p = __libc_memalign(align, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void* aligned_alloc(size_t align, size_t n) {
  count_alloc();
  return __libc_memalign(align, n);
}
void* memalign(size_t align, size_t n);
void* memalign(size_t align, size_t n) {
  count_alloc();
  return __libc_memalign(align, n);
}
#endif

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static tuner_ctx tc;

static void tuner_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                         const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static const struct {
  size_t nranks, nnodes;
} shapes[] = {{1, 1},  {2, 1},   {3, 1},    {8, 1},     {16, 2},    {9, 3},
              {7, 7},  {64, 8}, {72, 9},   {256, 32},  {1024, 128}, {4096, 512},
              {32768, 4096}};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Plausible cost-model constants for v5's init (the plugin may rewrite them). */
static void fill_constants(ncclTunerConstants_v5_t* c) {
  memset(c, 0, sizeof *c);
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      c->baseLatencies[a][p] = 6.8 + a + p;
      for (int h = 0; h < NCCL_NUM_HW_LINKS_V5; h++) c->hwLatencies[h][a][p] = 0.6 + h + 0.1 * p;
    }
  for (int g = 0; g < NCCL_NUM_COMPCAPS_V5; g++)
    for (int s = 0; s < NCCL_NUM_TUNING_SCALES_V5; s++) {
      c->llMaxBws[g][s] = 40.0 + 10 * g;
      c->perChMaxRingLL128Bws[g][s] = 20.0 + 5 * g;
      c->perChMaxTreeLL128Bws[g][s] = 18.0 + 5 * g;
      c->perChMaxTreeBws[g][s] = 24.0 + 5 * g;
      c->perChMaxNVLSTreeBws[g][s] = 30.0 + 5 * g;
    }
}

static conf_result constants_sane(const ncclTunerConstants_v5_t* c) {
  const double* d = (const double*)c;
  for (size_t i = 0; i < sizeof *c / sizeof(double); i++)
    if (!isfinite(d[i]) || d[i] < 0)
      return conf_fail("v5 init left constant #%zu at %g (must be finite and >= 0)", i, d[i]);
  return CONF_PASS;
}

/* init / teardown of one version; ctx out. */
static conf_result t_init(int v, size_t nranks, size_t nnodes, void** ctx) {
  ncclResult_t r = ncclInvalidUsage;
  *ctx = NULL;
  conf_stage_set("init");
  switch (v) {
    case 2: r = ((const ncclTuner_v2_t*)tc.raw[v])->init(nranks, nnodes, tuner_logger, ctx); break;
    case 3: r = ((const ncclTuner_v3_t*)tc.raw[v])->init(nranks, nnodes, tuner_logger, ctx); break;
    case 4: r = ((const ncclTuner_v4_t*)tc.raw[v])->init(nranks, nnodes, tuner_logger, ctx); break;
    case 5:
    case 6: {
      /* v6's init is v5's. */
      static ncclNvlDomainInfo_v5_t nvl;
      static ncclTunerConstants_v5_t constants;
      nvl.nNvlDomains = (int)nnodes;
      nvl.minRanksPerNvlDomain = nvl.maxRanksPerNvlDomain = (int)(nranks / nnodes);
      fill_constants(&constants);
      r = ((const ncclTuner_v5_t*)tc.raw[v])
              ->init(ctx, 0x1234 + nranks, nranks, nnodes, tuner_logger, &nvl, &constants);
      if (r == ncclSuccess) CONF_TRY(constants_sane(&constants));
      break;
    }
  }
  if (r != ncclSuccess)
    return conf_fail("v%d init(nRanks %zu, nNodes %zu) returned %d", v, nranks, nnodes, (int)r);
  return CONF_PASS;
}

static conf_result t_fini(int v, void* ctx) {
  ncclResult_t r = ncclInvalidUsage;
  conf_stage_set(v >= 5 ? "finalize" : "destroy");
  switch (v) {
    case 2: r = ((const ncclTuner_v2_t*)tc.raw[v])->destroy(ctx); break;
    case 3: r = ((const ncclTuner_v3_t*)tc.raw[v])->destroy(ctx); break;
    case 4: r = ((const ncclTuner_v4_t*)tc.raw[v])->destroy(ctx); break;
    case 5: r = ((const ncclTuner_v5_t*)tc.raw[v])->finalize(ctx); break;
    case 6: r = ((const ncclTuner_v6_t*)tc.raw[v])->finalize(ctx); break;
  }
  if (r != ncclSuccess) return conf_fail("v%d %s returned %d", v, v >= 5 ? "finalize" : "destroy", (int)r);
  return CONF_PASS;
}

static conf_result t_loads(void* x) {
  (void)x;
  conf_stage_set("dlopen (constructors)");
  if (!dlopen(tc.path, RTLD_NOW | RTLD_LOCAL))
    return conf_fail("dlopen(RTLD_NOW|RTLD_LOCAL) failed: %s", dlerror());
  return CONF_PASS;
}

static conf_result t_exports(void* x) {
  (void)x;
  if (tc.exported) return CONF_PASS;
  if (tc.other_symbols[0])
    return conf_fail("no ncclTunerPlugin_v2..v6 symbol; exports only %s", tc.other_symbols);
  return conf_fail("no ncclTunerPlugin_v2..v6 symbol is exported");
}

/* Why version v's table is unusable, or NULL when it is complete (needs it exported). */
static const char* table_problem(int v, char* buf, size_t len) {
  /* name, init, getCollInfo, destroy/finalize: the same four slots in every version. */
  const struct {
    const char* name;
    void *init, *get, *fini;
  }* t = tc.raw[v];
  const char* what = !t->name || !t->name[0] ? "name is NULL or empty"
                     : !t->init              ? "init is NULL"
                     : !t->get               ? "getCollInfo is NULL"
                     : !t->fini              ? (v >= 5 ? "finalize is NULL" : "destroy is NULL")
                                             : NULL;
  if (!what) return NULL;
  snprintf(buf, len, "ncclTunerPlugin_v%d: %s", v, what);
  return buf;
}

/* The table as stock NCCL reads it: init first (a plugin may fill the rest of its table there),
 * then every entry. */
static conf_result table(int v) {
  if (!(tc.exported & (1u << v))) return conf_skip("the plugin does not export ncclTunerPlugin_v%d", v);
  const struct {
    const char* name;
    void* init;
  }* head = tc.raw[v];
  void* ctx = NULL;
  int inited = 0;
  if (head->init) {
    if (t_init(v, 2, 1, &ctx) != CONF_PASS) {
      char copy[1024];
      snprintf(copy, sizeof copy, "%s", conf_reason());
      conf_clear_reason();
      return conf_inconclusive("%s, so the table (read after init) could not be checked", copy);
    }
    inited = 1;
  }
  char buf[128];
  const char* why = table_problem(v, buf, sizeof buf);
  if (why) return conf_fail("%s%s", why, inited ? " after init" : "");
  return t_fini(v, ctx);
}

static conf_result t_table_v2(void* x) { (void)x; return table(2); }
static conf_result t_table_v3(void* x) { (void)x; return table(3); }
static conf_result t_table_v4(void* x) { (void)x; return table(4); }
static conf_result t_table_v5(void* x) { (void)x; return table(5); }
static conf_result t_table_v6(void* x) {
  (void)x;
  CONF_TRY(table(6));
  if (((const ncclTuner_v6_t*)tc.raw[6])->getChunkSize == NULL)
    conf_note("getChunkSize is NULL: the core keeps its chunk sizes (allowed)");
  return CONF_PASS;
}

static int usable_version(int v) {
  char buf[128];
  return (tc.exported & (1u << v)) && table_problem(v, buf, sizeof buf) == NULL;
}

static conf_result t_shapes(void* x) {
  (void)x;
  int tested = 0;
  for (int v = TUNER_MIN; v <= TUNER_MAX; v++) {
    if (!usable_version(v)) continue;
    tested++;
    for (int i = 0; i < NSHAPES; i++) {
      void* ctx;
      CONF_TRY(t_init(v, shapes[i].nranks, shapes[i].nnodes, &ctx));
      CONF_TRY(t_fini(v, ctx));
    }
    /* Two communicators at once, torn down in the order they were made. */
    void *a, *b;
    CONF_TRY(t_init(v, 8, 1, &a));
    CONF_TRY(t_init(v, 16, 2, &b));
    CONF_TRY(t_fini(v, a));
    CONF_TRY(t_fini(v, b));
  }
  if (!tested) return conf_skip("no usable ncclTunerPlugin version");
  return CONF_PASS;
}

static const size_t sizes[] = {1, 4096, 1 << 20, 256u << 20, (size_t)4 << 30};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

/* Masks of usable cells: all, two, and a scattered third. */
static int cell_usable(int mask, int a, int p) {
  switch (mask) {
    case 0: return 1;
    case 1: return (a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE) ||
                   (a == NCCL_ALGO_TREE && p == NCCL_PROTO_LL);
    default: return ((a * 3 + p) * 5) % 7 < 3;
  }
}

/* getCollInfo of a cost-table version (3..6). */
static ncclResult_t call_table(int v, void* ctx, int coll, size_t nbytes, int pipe,
                               float cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], int reg,
                               int* nch) {
  float** table_arg = (float**)(void*)cost; /* NCCL passes float[7][3] as float** */
  conf_stage_set("getCollInfo");
  if (v == 3)
    return ((const ncclTuner_v3_t*)tc.raw[v])
        ->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, pipe, table_arg, NCCL_NUM_ALGORITHMS,
                      NCCL_NUM_PROTOCOLS, nch);
  if (v == 4)
    return ((const ncclTuner_v4_t*)tc.raw[v])
        ->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, pipe, table_arg, NCCL_NUM_ALGORITHMS,
                      NCCL_NUM_PROTOCOLS, reg, nch);
  if (v == 5)
    return ((const ncclTuner_v5_t*)tc.raw[v])
        ->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, pipe, table_arg, NCCL_NUM_ALGORITHMS,
                      NCCL_NUM_PROTOCOLS, reg, nch);
  return ((const ncclTuner_v6_t*)tc.raw[v])
      ->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, pipe, table_arg, NCCL_NUM_ALGORITHMS,
                    NCCL_NUM_PROTOCOLS, reg, nch);
}

static ncclResult_t call_v2(void* ctx, int coll, size_t nbytes, int pipe, int* algo, int* proto,
                            int* nch) {
  conf_stage_set("getCollInfo");
  return ((const ncclTuner_v2_t*)tc.raw[2])
      ->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, 0, 0, pipe, algo, proto, nch);
}

static void fill_cost(int mask, float cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]) {
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
      cost[a][p] = cell_usable(mask, a, p) ? 10.0f + (float)(a * 3 + p)
                                           : (float)NCCL_ALGO_PROTO_IGNORE;
}

/* What every answer must keep: ignored cells at -1, usable ones numbers, one usable left, a
 * channel count in range. */
static conf_result check_answer(const char* what, int mask,
                                const float cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
                                int nch) {
  int left = 0;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      float c = cost[a][p];
      if (!cell_usable(mask, a, p)) {
        if (c != (float)NCCL_ALGO_PROTO_IGNORE)
          return conf_fail("%s changed ignored cell [algo %d][proto %d] from -1 to %g", what, a,
                           p, c);
        continue;
      }
      if (!isfinite(c) || (c < 0 && c != (float)NCCL_ALGO_PROTO_IGNORE))
        return conf_fail("%s left cell [algo %d][proto %d] at %g", what, a, p, c);
      if (c >= 0) left++;
    }
  if (!left) return conf_fail("%s marked every usable cell as ignored", what);
  if (nch < 0 || nch > TUNER_MAX_CHANNELS)
    return conf_fail("%s set nChannels to %d (0..%d)", what, nch, TUNER_MAX_CHANNELS);
  return CONF_PASS;
}

static conf_result t_cost_table(void* x) {
  (void)x;
  int tested = 0;
  for (int v = 3; v <= TUNER_MAX; v++) {
    if (!usable_version(v)) continue;
    tested++;
    void* ctx;
    CONF_TRY(t_init(v, 16, 2, &ctx));
    for (int coll = ncclFuncBroadcast; coll <= ncclFuncAllReduce; coll++)
      for (int si = 0; si < NSIZES; si++)
        for (int mask = 0; mask < 3; mask++)
          for (int pipe = 1; pipe <= 4; pipe *= 4)
            for (int reg = 0; reg <= (v >= 4); reg++) {
              float cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
              fill_cost(mask, cost);
              int nch = 0;
              ncclResult_t r = call_table(v, ctx, coll, sizes[si], pipe, cost, reg, &nch);
              char what[128];
              snprintf(what, sizeof what, "v%d getCollInfo(coll %d, %zu bytes, mask %d, pipeOps %d, regBuff %d)",
                       v, coll, sizes[si], mask, pipe, reg);
              if (r != ncclSuccess) return conf_fail("%s returned %d", what, (int)r);
              CONF_TRY(check_answer(what, mask, cost, nch));
            }
    CONF_TRY(t_fini(v, ctx));
  }
  if (!tested) return conf_skip("the plugin exports no usable cost-table version (v3..v6)");
  return CONF_PASS;
}

static conf_result t_v2_choice(void* x) {
  (void)x;
  if (!usable_version(2)) return conf_skip("the plugin does not export a usable ncclTunerPlugin_v2");
  const ncclTuner_v2_t* t = tc.raw[2];
  void* ctx;
  CONF_TRY(t_init(2, 16, 2, &ctx));
  for (int coll = ncclFuncBroadcast; coll <= ncclFuncAllReduce; coll++)
    for (int si = 0; si < NSIZES; si++)
      for (int cn = 0; cn <= 1; cn++)
        for (int nvls = 0; nvls <= 1; nvls++) {
          int algo = NCCL_ALGO_UNDEF, proto = NCCL_PROTO_UNDEF, nch = 0;
          conf_stage_set("getCollInfo");
          ncclResult_t r = t->getCollInfo(ctx, (ncclFunc_t)coll, sizes[si], cn, nvls, 1, &algo,
                                          &proto, &nch);
          char what[128];
          snprintf(what, sizeof what, "v2 getCollInfo(coll %d, %zu bytes, collNet %d, nvls %d)",
                   coll, sizes[si], cn, nvls);
          if (r != ncclSuccess) return conf_fail("%s returned %d", what, (int)r);
          if (algo < NCCL_ALGO_UNDEF || algo >= NCCL_NUM_ALGORITHMS)
            return conf_fail("%s chose algorithm %d", what, algo);
          if (proto < NCCL_PROTO_UNDEF || proto >= NCCL_NUM_PROTOCOLS)
            return conf_fail("%s chose protocol %d", what, proto);
          if (!cn && (algo == NCCL_ALGO_COLLNET_DIRECT || algo == NCCL_ALGO_COLLNET_CHAIN))
            return conf_fail("%s chose CollNet without collNet support", what);
          if (!nvls && (algo == NCCL_ALGO_NVLS || algo == NCCL_ALGO_NVLS_TREE))
            return conf_fail("%s chose NVLS without NVLS support", what);
          if (nch < 0 || nch > TUNER_MAX_CHANNELS)
            return conf_fail("%s set nChannels to %d (0..%d)", what, nch, TUNER_MAX_CHANNELS);
        }
  return t_fini(2, ctx);
}


/* Usable cells may only go down (to 0 to prefer one, to -1 to rule one out): raising a cell
 * hides what the plugin means, since the core takes the cheapest. */
static conf_result t_lowers_only(void* x) {
  (void)x;
  int tested = 0;
  for (int v = 3; v <= TUNER_MAX; v++) {
    if (!usable_version(v)) continue;
    tested++;
    void* ctx;
    CONF_TRY(t_init(v, 16, 2, &ctx));
    for (int coll = ncclFuncBroadcast; coll <= ncclFuncAllReduce; coll++)
      for (int si = 0; si < NSIZES; si++)
        for (int mask = 0; mask < 3; mask++) {
          float before[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
          fill_cost(mask, cost);
          memcpy(before, cost, sizeof cost);
          int nch = 0;
          if (call_table(v, ctx, coll, sizes[si], 1, cost, 0, &nch) != ncclSuccess) continue;
          for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
            for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
              if (before[a][p] >= 0 && !(cost[a][p] <= before[a][p]))
                return conf_fail("v%d getCollInfo(coll %d, %zu bytes, mask %d) raised usable cell "
                                 "[algo %d][proto %d] from %g to %g",
                                 v, coll, sizes[si], mask, a, p, before[a][p], cost[a][p]);
        }
    CONF_TRY(t_fini(v, ctx));
  }
  if (!tested) return conf_skip("the plugin exports no usable cost-table version (v3..v6)");
  return CONF_PASS;
}

/* getCollInfo runs for every collective the application issues: it must not allocate and must
 * answer in microseconds. Timed as the fastest of several batches, so a loaded machine does not
 * fail a fast plugin. */
#define FAST_BATCHES 20
#define FAST_CALLS 500
#define FAST_MAX_US 10.0

static conf_result t_fast(void* x) {
  (void)x;
  int tested = 0;
  for (int v = TUNER_MIN; v <= TUNER_MAX; v++) {
    if (!usable_version(v)) continue;
    tested++;
    void* ctx;
    CONF_TRY(t_init(v, 64, 8, &ctx));
    double best = 1e30;
    long allocs = 0;
    for (int b = -1; b < FAST_BATCHES; b++) { /* batch -1 warms up */
      alloc_count = 0;
      alloc_counting = b >= 0;
      double t0 = now_us();
      for (int i = 0; i < FAST_CALLS; i++) {
        int coll = i % (ncclFuncAllReduce + 1);
        size_t nbytes = sizes[(i / 5) % NSIZES];
        int nch = 0;
        ncclResult_t r;
        if (v == 2) {
          int algo = NCCL_ALGO_UNDEF, proto = NCCL_PROTO_UNDEF;
          r = call_v2(ctx, coll, nbytes, 1, &algo, &proto, &nch);
        } else {
          float cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
          fill_cost(0, cost);
          r = call_table(v, ctx, coll, nbytes, 1, cost, 0, &nch);
        }
        if (r != ncclSuccess) {
          alloc_counting = 0;
          return conf_fail("v%d getCollInfo(coll %d, %zu bytes) returned %d", v, coll, nbytes,
                           (int)r);
        }
      }
      double per = (now_us() - t0) / FAST_CALLS;
      alloc_counting = 0;
      if (b >= 0) {
        allocs += alloc_count;
        if (per < best) best = per;
      }
    }
    if (TUNER_COUNT_ALLOCS && allocs > 0)
      return conf_fail("v%d getCollInfo allocated or freed memory %ld times in %d calls", v,
                       allocs, FAST_BATCHES * FAST_CALLS);
    if (best > FAST_MAX_US)
      return conf_fail("v%d getCollInfo takes %.1f us per call (fastest batch; at most %.0f us)",
                       v, best, FAST_MAX_US);
    conf_note("v%d getCollInfo: %.3f us per call, %ld allocations", v, best, allocs);
    CONF_TRY(t_fini(v, ctx));
  }
  if (!tested) return conf_skip("no usable ncclTunerPlugin version");
  return CONF_PASS;
}

/* Sizes and counts at the edges: nothing to move, SIZE_MAX, no or huge numPipeOps, one rank. */
static conf_result t_odd_inputs(void* x) {
  (void)x;
  static const size_t odd_sizes[] = {0, 1, 3, (size_t)1 << 62, SIZE_MAX / 2, SIZE_MAX};
  static const int odd_pipes[] = {0, 1, 1000, INT_MAX};
  static const size_t odd_shapes[][2] = {{1, 1}, {4096, 512}};
  int tested = 0;
  for (int v = TUNER_MIN; v <= TUNER_MAX; v++) {
    if (!usable_version(v)) continue;
    tested++;
    for (int sh = 0; sh < 2; sh++) {
      void* ctx;
      CONF_TRY(t_init(v, odd_shapes[sh][0], odd_shapes[sh][1], &ctx));
      for (int coll = ncclFuncBroadcast; coll <= ncclFuncAllReduce; coll++)
        for (size_t si = 0; si < sizeof odd_sizes / sizeof odd_sizes[0]; si++)
          for (size_t pi = 0; pi < sizeof odd_pipes / sizeof odd_pipes[0]; pi++) {
            char what[160];
            snprintf(what, sizeof what, "v%d getCollInfo(coll %d, %zu bytes, pipeOps %d, %zu ranks)",
                     v, coll, odd_sizes[si], odd_pipes[pi], odd_shapes[sh][0]);
            int nch = 0;
            if (v == 2) {
              int algo = NCCL_ALGO_UNDEF, proto = NCCL_PROTO_UNDEF;
              if (call_v2(ctx, coll, odd_sizes[si], odd_pipes[pi], &algo, &proto, &nch) !=
                  ncclSuccess)
                continue; /* refusing is allowed; crashing is not */
              if (algo < NCCL_ALGO_UNDEF || algo >= NCCL_NUM_ALGORITHMS ||
                  proto < NCCL_PROTO_UNDEF || proto >= NCCL_NUM_PROTOCOLS)
                return conf_fail("%s chose algorithm %d, protocol %d", what, algo, proto);
              if (nch < 0 || nch > TUNER_MAX_CHANNELS)
                return conf_fail("%s set nChannels to %d (0..%d)", what, nch, TUNER_MAX_CHANNELS);
              continue;
            }
            for (int mask = 0; mask < 2; mask++) {
              float cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
              fill_cost(mask, cost);
              nch = 0;
              if (call_table(v, ctx, coll, odd_sizes[si], odd_pipes[pi], cost, 0, &nch) !=
                  ncclSuccess)
                continue;
              CONF_TRY(check_answer(what, mask, cost, nch));
            }
          }
      CONF_TRY(t_fini(v, ctx));
    }
  }
  if (!tested) return conf_skip("no usable ncclTunerPlugin version");
  return CONF_PASS;
}

/* ---- v6 getChunkSize ---- */

/* NCCL's chunk for a Simple/LL/LL128 step is in this range; a tuner's answer is clamped to
 * what the buffers allow, so the test only asks for a positive size. */
static const size_t chunk_inputs[] = {4096, 131072, 524288, (size_t)4 << 20};
enum { NCHUNKS = sizeof chunk_inputs / sizeof chunk_inputs[0] };

static const ncclTuner_v6_t* chunk_table(void) {
  if (!usable_version(6)) return NULL;
  const ncclTuner_v6_t* t = tc.raw[6];
  return t->getChunkSize ? t : NULL;
}

static conf_result chunk_skip(void) {
  if (!usable_version(6)) return conf_skip("the plugin does not export a usable ncclTunerPlugin_v6");
  return conf_skip("ncclTunerPlugin_v6.getChunkSize is NULL (the core keeps its chunk sizes)");
}

static conf_result ask_chunk(const ncclTuner_v6_t* t, void* ctx, int coll, size_t nbytes,
                             int algo, int proto, int nch, size_t in, size_t* out,
                             const char* what_fmt_prefix) {
  *out = in;
  conf_stage_set("getChunkSize");
  ncclResult_t r = t->getChunkSize(ctx, (ncclFunc_t)coll, nbytes, algo, proto, nch, out);
  if (r != ncclSuccess)
    return conf_fail("%sgetChunkSize(coll %d, %zu bytes, algo %d, proto %d, %d channels, "
                     "chunk %zu) returned %d", what_fmt_prefix, coll, nbytes, algo, proto, nch,
                     in, (int)r);
  if (*out == 0)
    return conf_fail("%sgetChunkSize(coll %d, %zu bytes, algo %d, proto %d, %d channels, "
                     "chunk %zu) answered 0 bytes", what_fmt_prefix, coll, nbytes, algo, proto,
                     nch, in);
  return CONF_PASS;
}

/* Every (collective, size, algorithm, protocol, channels, chunk in): success, a positive size,
 * and the same answer asked twice. */
static conf_result t_chunk_answers(void* x) {
  (void)x;
  const ncclTuner_v6_t* t = chunk_table();
  if (t == NULL) return chunk_skip();
  static const int channels[] = {1, 2, 8, 32, 64};
  void* ctx;
  CONF_TRY(t_init(6, 16, 2, &ctx));
  int changed = 0, asked = 0;
  for (int coll = ncclFuncBroadcast; coll <= ncclFuncAllReduce; coll++)
    for (int si = 0; si < NSIZES; si++)
      for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
          for (int c = 0; c < 5; c++)
            for (int k = 0; k < NCHUNKS; k++) {
              size_t first, again;
              CONF_TRY(ask_chunk(t, ctx, coll, sizes[si], a, p, channels[c], chunk_inputs[k],
                                 &first, ""));
              CONF_TRY(ask_chunk(t, ctx, coll, sizes[si], a, p, channels[c], chunk_inputs[k],
                                 &again, "a second "));
              if (first != again)
                return conf_fail("getChunkSize(coll %d, %zu bytes, algo %d, proto %d, %d "
                                 "channels, chunk %zu) answered %zu, then %zu",
                                 coll, sizes[si], a, p, channels[c], chunk_inputs[k], first,
                                 again);
              asked++;
              changed += first != chunk_inputs[k];
            }
  conf_note("getChunkSize: %d of %d answers changed the core's chunk", changed, asked);
  return t_fini(6, ctx);
}

/* Called once per collective, like getCollInfo: no allocation, microseconds. */
static conf_result t_chunk_fast(void* x) {
  (void)x;
  const ncclTuner_v6_t* t = chunk_table();
  if (t == NULL) return chunk_skip();
  void* ctx;
  CONF_TRY(t_init(6, 64, 8, &ctx));
  double best = 1e30;
  long allocs = 0;
  for (int b = -1; b < FAST_BATCHES; b++) {
    alloc_count = 0;
    alloc_counting = b >= 0;
    double t0 = now_us();
    for (int i = 0; i < FAST_CALLS; i++) {
      size_t chunk = chunk_inputs[i % NCHUNKS];
      conf_stage_set("getChunkSize");
      ncclResult_t r = t->getChunkSize(ctx, (ncclFunc_t)(i % (ncclFuncAllReduce + 1)),
                                       sizes[(i / 5) % NSIZES], i % NCCL_NUM_ALGORITHMS,
                                       i % NCCL_NUM_PROTOCOLS, 1 + i % 64, &chunk);
      if (r != ncclSuccess) {
        alloc_counting = 0;
        return conf_fail("getChunkSize returned %d", (int)r);
      }
    }
    double per = (now_us() - t0) / FAST_CALLS;
    alloc_counting = 0;
    if (b >= 0) {
      allocs += alloc_count;
      if (per < best) best = per;
    }
  }
  if (TUNER_COUNT_ALLOCS && allocs > 0)
    return conf_fail("getChunkSize allocated or freed memory %ld times in %d calls", allocs,
                     FAST_BATCHES * FAST_CALLS);
  if (best > FAST_MAX_US)
    return conf_fail("getChunkSize takes %.1f us per call (fastest batch; at most %.0f us)", best,
                     FAST_MAX_US);
  conf_note("getChunkSize: %.3f us per call, %ld allocations", best, allocs);
  return t_fini(6, ctx);
}

/* Edges: no bytes, SIZE_MAX, a 1-byte or huge chunk in, 1-rank and 4096-rank communicators.
 * Refusing is allowed (the core keeps its chunk); crashing, or a 0 answer, is not. */
static conf_result t_chunk_odd(void* x) {
  (void)x;
  const ncclTuner_v6_t* t = chunk_table();
  if (t == NULL) return chunk_skip();
  static const size_t odd_sizes[] = {0, 1, (size_t)1 << 62, SIZE_MAX};
  static const size_t odd_chunks[] = {1, 4096, (size_t)1 << 40};
  static const size_t odd_shapes[][2] = {{1, 1}, {4096, 512}};
  for (int sh = 0; sh < 2; sh++) {
    void* ctx;
    CONF_TRY(t_init(6, odd_shapes[sh][0], odd_shapes[sh][1], &ctx));
    for (int coll = ncclFuncBroadcast; coll <= ncclFuncAllReduce; coll++)
      for (size_t si = 0; si < sizeof odd_sizes / sizeof odd_sizes[0]; si++)
        for (size_t ci = 0; ci < sizeof odd_chunks / sizeof odd_chunks[0]; ci++) {
          size_t chunk = odd_chunks[ci];
          conf_stage_set("getChunkSize");
          ncclResult_t r = t->getChunkSize(ctx, (ncclFunc_t)coll, odd_sizes[si], NCCL_ALGO_RING,
                                           NCCL_PROTO_SIMPLE, 1, &chunk);
          if (r == ncclSuccess && chunk == 0)
            return conf_fail("getChunkSize(coll %d, %zu bytes, chunk %zu, %zu ranks) answered 0",
                             coll, odd_sizes[si], odd_chunks[ci], odd_shapes[sh][0]);
        }
    CONF_TRY(t_fini(6, ctx));
  }
  return CONF_PASS;
}

static const conf_test tuner_tests[] = {
    {"tuner_plugin_loads_with_rtld_now_local", t_loads, 0},
    {"tuner_plugin_exports_a_supported_version", t_exports, 0},
    {"tuner_v2_table_has_name_and_entries", t_table_v2, 0},
    {"tuner_v3_table_has_name_and_entries", t_table_v3, 0},
    {"tuner_v4_table_has_name_and_entries", t_table_v4, 0},
    {"tuner_v5_table_has_name_and_entries", t_table_v5, 0},
    {"tuner_v6_table_has_name_and_entries", t_table_v6, 0},
    {"tuner_init_and_teardown_work_across_shapes", t_shapes, 0},
    {"tuner_cost_table_keeps_ignored_cells_and_sane_channels", t_cost_table, 0},
    {"tuner_v2_choice_is_a_valid_supported_index", t_v2_choice, 0},
    {"tuner_getcollinfo_only_lowers_usable_cells", t_lowers_only, 0},
    {"tuner_getcollinfo_is_fast_and_does_not_allocate", t_fast, 0},
    {"tuner_getcollinfo_survives_odd_inputs", t_odd_inputs, 0},
    {"tuner_v6_getchunksize_answers_are_positive_and_stable", t_chunk_answers, 0},
    {"tuner_v6_getchunksize_is_fast_and_does_not_allocate", t_chunk_fast, 0},
    {"tuner_v6_getchunksize_survives_odd_inputs", t_chunk_odd, 0},
};

static conf_result tuner_gate(void* ctx, const conf_test* t, char* why, size_t len) {
  (void)ctx;
  if (strcmp(t->name, "tuner_plugin_loads_with_rtld_now_local") == 0) return CONF_PASS;
  if (!tc.dl) {
    snprintf(why, len, "the plugin could not be loaded (%s)", tc.load_error);
    return CONF_SKIP;
  }
  return CONF_PASS;
}

int tuner_suite_main(int argc, char** argv) {
  conf_options opt = {.timeout_s = 30};
  if (argc < 1) return 2;
  static char libname[256];
  tc.path = conf_plugin_path(argv[0], "tuner", libname, sizeof libname);
  for (int i = 1; i < argc; i++)
    if (!conf_common_option(&opt, argc, argv, &i)) {
      fprintf(stderr, "weft-conformance tuner: unknown option %s\n", argv[i]);
      return 2;
    }
  if (opt.timeout_s <= 0) return 2;
  conf_stage_init();
  if (!opt.list_only) tc.dl = conf_open_plugin(tc.path, tc.load_error, sizeof tc.load_error);
  if (tc.dl) {
    for (int v = 0; v <= 99; v++) {
      char sym[32];
      snprintf(sym, sizeof sym, "ncclTunerPlugin_v%d", v);
      void* p = dlsym(tc.dl, sym);
      if (!p) continue;
      if (v >= TUNER_MIN && v <= TUNER_MAX) {
        tc.exported |= 1u << v;
        tc.raw[v] = p;
      } else {
        size_t used = strlen(tc.other_symbols);
        snprintf(tc.other_symbols + used, sizeof tc.other_symbols - used, "%s%s",
                 used ? ", " : "", sym);
      }
    }
  }
  char extra[128] = "";
  if (!opt.list_only) {
    char list[64];
    conf_version_lists(tc.exported, TUNER_MIN, TUNER_MAX, NULL, 0, list, sizeof list);
    snprintf(extra, sizeof extra, "\"exported\": [%s]", list);
    printf("# weft-conformance tuner %s: %s\n", tc.path,
           tc.dl ? (tc.exported ? "loaded" : "no supported version") : "not loadable");
  }
  return conf_run("tuner", tc.path, tuner_tests, sizeof tuner_tests / sizeof tuner_tests[0], &tc,
                  tuner_gate, &opt, extra);
}
