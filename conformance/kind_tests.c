/* The GIN and RMA tests (one table: each name starts with the suite's word, which the driver
 * puts in front). Loading and the table, init and devices, the group, registration, then the
 * data path (puts and their signals, gets, flushes; GIN v14+ has none on the host: those tests
 * skip), teardown with work in flight, bad arguments, and a peer that leaves. */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kind_suite.h"
#include "net_suite.h"
#include "stage.h"

#define MiB (1024u * 1024u)

static conf_result need_data(void) {
  if (kc->data == NULL)
    return conf_skip("GIN v%d has no host-initiated puts: its data moves from GPU code through "
                     "the device handle (needs a GPU and the plugin's device code)", kc->version);
  return CONF_PASS;
}

static conf_result need_nothing(void) { return CONF_PASS; }

static conf_result need_iget(void) {
  CONF_TRY(need_data());
  if (kc->data->iget == NULL)
    return conf_skip("%s v%d has no iget", kc->is_gin ? "GIN" : "this RMA plugin's", kc->version);
  return CONF_PASS;
}

static conf_result need_iflush(void) {
  CONF_TRY(need_data());
  if (kc->data->iflush == NULL)
    return conf_skip("%s v%d has no iflush", kc->is_gin ? "GIN" : "this RMA plugin's",
                     kc->version);
  return CONF_PASS;
}

/* A test that is body run on a group (kg_run) of nranks ranks with ncontexts contexts, once
 * need (need_nothing, need_data, ...) lets it. */
#define GROUP_TEST(test, need, nranks, ncontexts, body, arg) \
  static conf_result test(void* unused) {                    \
    (void)unused;                                            \
    CONF_TRY(need());                                        \
    return kg_run(nranks, ncontexts, body, arg);             \
  }

static void fill_seeded(void* p, size_t n, uint64_t seed) { nt_fill(p, n, seed); }

/* ---- loading ---- */

static conf_result t_loads(void* arg) {
  (void)arg;
  char why[512];
  if (!conf_probe_dlopen(kc->path, why, sizeof why)) return conf_fail("dlopen: %s", why);
  return CONF_PASS;
}

static conf_result t_exports(void* arg) {
  (void)arg;
  if (kc->dl == NULL) return conf_fail("dlopen: %s", kc->load_error);
  if (kc->version == 0)
    return conf_fail("exports no %s", kc->suite == KIND_SUITE_GIN   ? "ncclGinPlugin_v11..v15"
                                      : kc->suite == KIND_SUITE_RMA ? "ncclRmaPlugin_v13..v15 or ncclGinPlugin_v13"
                                                                    : "ncclCollNetPlugin_v6..v12");
  return CONF_PASS;
}

static conf_result t_table(void* arg) {
  (void)arg;
  if (kc->adapt_error[0]) return conf_fail("%s", kc->adapt_error);
  return CONF_PASS;
}

/* ---- init and devices ---- */

static conf_result t_init(void* arg) {
  (void)arg;
  CONF_TRY(kind_co_net_init());
  void *a = NULL, *b = NULL;
  ncclResult_t (*init)(void**, uint64_t, ncclDebugLogger_t) = kc->is_gin ? kc->gin.gin.init : kc->rma.init;
  ncclResult_t (*fin)(void*) = kc->is_gin ? kc->gin.gin.finalize : kc->rma.finalize;
  conf_stage_set("init");
  ncclResult_t r = init(&a, 1, nt_logger);
  if (r != ncclSuccess) return conf_fail("init returned %s", kind_result_name(r));
  r = init(&b, 2, nt_logger);
  if (r != ncclSuccess) return conf_fail("a second init (another communicator) returned %s",
                                         kind_result_name(r));
  if (a != NULL && a == b) return conf_fail("init gave two communicators the same context %p", a);
  conf_stage_set("finalize");
  if ((r = fin(b)) != ncclSuccess) return conf_fail("finalize returned %s", kind_result_name(r));
  if ((r = fin(a)) != ncclSuccess) return conf_fail("finalize returned %s", kind_result_name(r));
  return CONF_PASS;
}

static conf_result t_devices(void* arg) {
  (void)arg;
  CONF_TRY(kind_co_net_init());
  void* ctx = NULL;
  conf_stage_set("init");
  ncclResult_t r = kc->is_gin ? kc->gin.gin.init(&ctx, 1, nt_logger) : kc->rma.init(&ctx, 1, nt_logger);
  if (r != ncclSuccess) return conf_skip("does not get through init (%s)", kind_result_name(r));
  int n = -1;
  conf_stage_set("devices");
  r = kc->is_gin ? kc->gin.gin.devices(&n) : kc->rma.devices(&n);
  if (r != ncclSuccess) return conf_fail("devices returned %s", kind_result_name(r));
  if (n <= 0) return conf_skip("devices reports %d: no device on this host", n);
  for (int d = 0; d < n; d++) {
    ncclNetProperties_v12_t p;
    memset(&p, 0, sizeof p);
    conf_stage_set("getProperties");
    r = kc->is_gin ? kc->gin.gin.getProperties(d, &p) : kc->rma.getProperties(d, &p);
    if (r != ncclSuccess) return conf_fail("getProperties(%d) returned %s", d, kind_result_name(r));
    if (p.name == NULL) return conf_fail("getProperties(%d): name is NULL", d);
    if (!(p.ptrSupport & (NCCL_PTR_HOST | NCCL_PTR_CUDA)))
      return conf_fail("getProperties(%d): ptrSupport 0x%x names no memory type", d, p.ptrSupport);
    if (!kc->is_gin && kc->version == 13 && p.netDeviceType != NCCL_NET_DEVICE_GIN_PROXY)
      return conf_fail("getProperties(%d): netDeviceType %d; NCCL refuses an RMA v13 plugin that "
                       "is not NCCL_NET_DEVICE_GIN_PROXY (2)", d, (int)p.netDeviceType);
    if (kc->is_gin && (p.netDeviceType < NCCL_NET_DEVICE_GIN_PROXY ||
                       p.netDeviceType > NCCL_NET_DEVICE_GIN_EFA_GDA))
      return conf_fail("getProperties(%d): netDeviceType %d is no GIN type (2..5)", d,
                       (int)p.netDeviceType);
  }
  if (kc->is_gin) {
    ncclGinProperties_v15_t gp;
    memset(&gp, 0xff, sizeof gp);
    conf_stage_set("getGinProperties");
    r = kc->gin.gin.getGinProperties(&gp);
    if (r != ncclSuccess) return conf_fail("getGinProperties returned %s", kind_result_name(r));
    if (gp.barrierOptions != NCCL_GIN_BARRIER_DEFAULT &&
        gp.barrierOptions != NCCL_GIN_BARRIER_SIGNAL_EFFICIENT)
      return conf_fail("getGinProperties: barrierOptions %d is not an ncclGinBarrierOptions_t",
                       gp.barrierOptions);
  }
  conf_stage_set("finalize");
  r = kc->is_gin ? kc->gin.gin.finalize(ctx) : kc->rma.finalize(ctx);
  if (r != ncclSuccess) return conf_fail("finalize returned %s", kind_result_name(r));
  return CONF_PASS;
}

static conf_result t_bad_device(void* arg) {
  (void)arg;
  CONF_TRY(kind_co_net_init());
  void* ctx = NULL;
  ncclResult_t r = kc->is_gin ? kc->gin.gin.init(&ctx, 1, nt_logger) : kc->rma.init(&ctx, 1, nt_logger);
  if (r != ncclSuccess) return conf_skip("does not get through init (%s)", kind_result_name(r));
  int n = 0;
  (void)(kc->is_gin ? kc->gin.gin.devices(&n) : kc->rma.devices(&n));
  int bad[] = {-1, n, n + 100};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ncclNetProperties_v12_t p;
    conf_stage_set("getProperties");
    r = kc->is_gin ? kc->gin.gin.getProperties(bad[i], &p) : kc->rma.getProperties(bad[i], &p);
    if (r == ncclSuccess)
      return conf_fail("getProperties(%d) with %d devices returned ncclSuccess", bad[i], n);
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void* lc = NULL;
    conf_stage_set("listen");
    r = kc->is_gin ? kc->gin.gin.listen(ctx, bad[i], handle, &lc) : kc->rma.listen(ctx, bad[i], handle, &lc);
    if (r == ncclSuccess) return conf_fail("listen on device %d of %d returned ncclSuccess", bad[i], n);
  }
  (void)(kc->is_gin ? kc->gin.gin.finalize(ctx) : kc->rma.finalize(ctx));
  return CONF_PASS;
}

/* ---- the group ---- */

static conf_result b_barrier(kg_rank* r, void* arg) {
  (void)arg;
  return kg_barrier(r);
}

GROUP_TEST(t_group3, need_nothing, 3, 1, b_barrier, NULL)

/* GIN: a GDAKI device must hand GPU code a device handle. */
static conf_result b_dev_handle(kg_rank* r, void* arg) {
  (void)arg;
  ncclNetProperties_v12_t p;
  if (kc->gin.gin.getProperties(0, &p) != ncclSuccess) return conf_fail("getProperties(0) failed");
  if (p.netDeviceType == NCCL_NET_DEVICE_GIN_GDAKI && r->dev_handle == NULL)
    return conf_fail("rank %d: createContext of a GDAKI device returned no device handle", r->rank);
  return kg_barrier(r);
}

GROUP_TEST(t_dev_handle, need_nothing, 2, 1, b_dev_handle, NULL)

/* ---- registration ---- */

static conf_result b_reg_cycles(kg_rank* r, void* arg) {
  (void)arg;
  void* buf;
  size_t len = 4 * MiB;
  CONF_TRY(nt_alloc(len, &buf));
  for (int i = 0; i < 40; i++) {
    void* mh = NULL;
    size_t n = ((size_t)(i * 7919) % len) + 1;
    CONF_TRY(kg_reg(r, buf, n, i % 2 ? NCCL_NET_MR_FLAG_FORCE_SO : 0, &mh));
    CONF_TRY(kg_dereg(r, mh));
  }
  nt_free(buf, len);
  return kg_barrier(r);
}

GROUP_TEST(t_reg_cycles, need_nothing, 2, 1, b_reg_cycles, NULL)

/* ---- data ---- */

typedef struct {
  size_t block;
  int nblocks;
  int strong_only; /* one plain put, then a signal: the signal must order the put */
} order_args;

static volatile uint64_t* sig_word(void* sigbuf, int i) { return (volatile uint64_t*)sigbuf + i; }

/* The moment a signal lands. Rank 1 keeps its signal page read-only while a put is on its way:
 * a plugin that writes the signal from this process (a host proxy, a socket) faults, and the
 * handler checks, at that very instant, that the block the signal counts has landed whole, then
 * lets the write through. A signal written by a NIC (RDMA) does not fault; polling then checks as
 * soon as the new value is seen. */
static struct {
  char* page;
  const char* data;
  const char* expect;
  size_t block;
  int nblocks;
  volatile long bad_block; /* -1: none */
  volatile size_t bad_off;
  volatile int trapped;
} trap = {.bad_block = -1};

static size_t first_diff(const char* got, const char* want, size_t n) {
  size_t tail = n < 4096 ? n : 4096; /* the end of a block lands last: look there first */
  if (memcmp(got + n - tail, want + n - tail, tail) == 0 && memcmp(got, want, n) == 0) return n;
  size_t k = 0;
  while (k < n && got[k] == want[k]) k++;
  return k < n ? k : n - tail; /* changed under us: still a difference */
}

static void on_signal_write(int sig, siginfo_t* si, void* uc) {
  (void)uc;
  char* at = si->si_addr;
  if (trap.page == NULL || at < trap.page || at >= trap.page + 4096) {
    signal(sig, SIG_DFL); /* a real crash: let it happen again, unhandled */
    return;
  }
  uint64_t s = *(volatile uint64_t*)(void*)trap.page; /* before this write adds to it */
  if (s < (uint64_t)trap.nblocks && trap.bad_block < 0) {
    size_t d = first_diff(trap.data + s * trap.block, trap.expect + s * trap.block, trap.block);
    if (d < trap.block) {
      trap.bad_off = d;
      trap.bad_block = (long)s;
    }
  }
  trap.trapped++;
  mprotect(trap.page, 4096, PROT_READ | PROT_WRITE);
}

/* Rank 0 puts nblocks blocks to rank 1, one at a time, each with a signal (+1); rank 1 checks
 * that the block a signal counts has landed whole when the signal lands (trap), and when it sees
 * it (polling). strong_only: each block goes by iput, then a separate 8-byte iputSignal must
 * order it. */
static conf_result b_order(kg_rank* r, void* argp) {
  order_args* a = argp;
  size_t len = a->block * (size_t)a->nblocks;
  void *data, *sig;
  CONF_TRY(nt_alloc(len, &data));
  CONF_TRY(nt_alloc(4096, &sig));
  void *dmh, *smh;
  CONF_TRY(kg_reg(r, data, len, 0, &dmh));
  CONF_TRY(kg_reg(r, sig, 4096, NCCL_NET_MR_FLAG_FORCE_SO, &smh));
  char* expect = malloc(len);
  if (expect == NULL) return conf_inconclusive("cannot allocate %zu bytes", len);
  for (int b = 0; b < a->nblocks; b++)
    fill_seeded(expect + (size_t)b * a->block, a->block, r->seed + (uint64_t)b);
  if (r->rank == 0) memcpy(data, expect, len);
  if (r->rank == 1) {
    trap.page = sig;
    trap.data = data;
    trap.expect = expect;
    trap.block = a->block;
    trap.nblocks = a->nblocks;
    trap.bad_block = -1;
    trap.bad_off = 0;
    trap.trapped = 0;
    struct sigaction sa = {0};
    sa.sa_sigaction = on_signal_write;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
  }
  CONF_TRY(kg_barrier(r));
  for (int b = 0; b < a->nblocks; b++) {
    if (r->rank == 1) mprotect(sig, 4096, PROT_READ);
    CONF_TRY(kg_barrier(r));
    if (r->rank == 0) {
      void* req = NULL;
      uint64_t off = (uint64_t)b * a->block;
      ncclResult_t res;
      if (a->strong_only) {
        conf_stage_set("iput");
        res = kc->data->iput(r->ctx, 0, off, dmh, a->block, off, dmh, 1, 0, &req);
        if (res != ncclSuccess) return conf_fail("iput returned %s", kind_result_name(res));
        CONF_TRY(kg_wait(r, req, "iput"));
        conf_stage_set("iputSignal");
        res = kc->data->iputSignal(r->ctx, 0, off, dmh, 8, off, dmh, 1, 0, smh, 1,
                                   NCCL_GIN_SIGNAL_OP_ADD, true, 0, &req);
      } else {
        conf_stage_set("iputSignal");
        res = kc->data->iputSignal(r->ctx, 0, off, dmh, a->block, off, dmh, 1, 0, smh, 1,
                                   NCCL_GIN_SIGNAL_OP_ADD, true, 0, &req);
      }
      if (res != ncclSuccess) return conf_fail("iputSignal returned %s", kind_result_name(res));
      CONF_TRY(kg_wait(r, req, "iputSignal"));
    } else if (r->rank == 1) {
      double t0 = nt_now();
      uint64_t s;
      while ((s = __atomic_load_n(sig_word(sig, 0), __ATOMIC_ACQUIRE)) < (uint64_t)b + 1) {
        if (nt_now() - t0 > kc->wait_s)
          return conf_fail("iputSignal: the signal reached %llu of %d in %.0f s",
                           (unsigned long long)s, b + 1, kc->wait_s);
      }
      size_t d = first_diff((char*)data + (size_t)b * a->block, expect + (size_t)b * a->block, a->block);
      long bad = trap.bad_block >= 0 ? trap.bad_block : d < a->block ? b : -1;
      size_t off = trap.bad_block >= 0 ? trap.bad_off : d;
      if (s > (uint64_t)b + 1)
        return conf_fail("iputSignal: the signal reads %llu after %d signals of +1",
                         (unsigned long long)s, b + 1);
      if (bad >= 0)
        return conf_fail("iputSignal: when signal %ld landed, block %ld (%zu bytes) differed "
                         "from what was put, first at offset %zu: its data had not all landed "
                         "before its signal%s", bad + 1, bad, a->block, off,
                         trap.bad_block >= 0 ? " (seen as the signal was written)" : "");
    }
  }
  if (r->rank == 1) {
    mprotect(sig, 4096, PROT_READ | PROT_WRITE);
    trap.page = NULL;
    conf_note("%d of %d signal writes trapped as they landed", trap.trapped, a->nblocks);
  }
  free(expect);
  CONF_TRY(kg_barrier(r));
  CONF_TRY(kg_dereg(r, smh));
  CONF_TRY(kg_dereg(r, dmh));
  nt_free(data, len);
  nt_free(sig, 4096);
  return CONF_PASS;
}

static order_args plain_puts = {2 * MiB, 8, 0}, strong_only = {MiB, 6, 1};
GROUP_TEST(t_order, need_data, 2, 1, b_order, &plain_puts)
GROUP_TEST(t_strong, need_data, 2, 1, b_order, &strong_only)

/* ---- signal counts under concurrency ---- */

#define SC_THREADS 2
#define SC_SIGNALS 150

typedef struct {
  kg_rank* r;
  int context;
  void *dmh, *smh;
  conf_result res;
  char why[300];
} sc_thread;

static void* sc_main(void* p) {
  sc_thread* t = p;
  for (int i = 0; i < SC_SIGNALS; i++) {
    void* req = NULL;
    uint64_t add = (uint64_t)(t->r->rank * 1000 + i);
    conf_stage_set("iputSignal");
    /* GIN v11 has one context per group: its threads share it. */
    int ctx_index = t->r->ncontexts > 0 ? t->context % t->r->ncontexts : t->context;
    ncclResult_t res = kc->data->iputSignal(t->r->ctx, ctx_index, 64 * (uint64_t)t->context, t->dmh, 64,
                                            64 * (uint64_t)(t->r->rank * SC_THREADS + t->context), t->dmh, 0,
                                            i % 2 ? 8 : 0, t->smh, add,
                                            i % 2 ? NCCL_GIN_SIGNAL_OP_ADD : NCCL_GIN_SIGNAL_OP_INC,
                                            true, 0, &req);
    if (res != ncclSuccess) {
      t->res = CONF_FAIL;
      snprintf(t->why, sizeof t->why, "rank %d: iputSignal from context %d returned %s",
               t->r->rank, t->context, kind_result_name(res));
      return NULL;
    }
    int done = 0;
    double t0 = nt_now();
    while (!done) {
      res = kc->data->test(t->r->coll, req, &done);
      if (res != ncclSuccess || nt_now() - t0 > kc->wait_s) {
        t->res = CONF_FAIL;
        snprintf(t->why, sizeof t->why, "rank %d: iputSignal's request %s", t->r->rank,
                 res != ncclSuccess ? "failed in test" : "never completed");
        return NULL;
      }
    }
  }
  return NULL;
}

static conf_result b_counts(kg_rank* r, void* arg) {
  (void)arg;
  void *data, *sig;
  size_t len = 64 * (size_t)KG_MAX_RANKS * SC_THREADS;
  CONF_TRY(nt_alloc(len, &data));
  CONF_TRY(nt_alloc(4096, &sig));
  void *dmh, *smh;
  CONF_TRY(kg_reg(r, data, len, 0, &dmh));
  CONF_TRY(kg_reg(r, sig, 4096, NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET, &smh));
  CONF_TRY(kg_barrier(r));
  if (r->rank > 0) {
    sc_thread th[SC_THREADS];
    pthread_t tid[SC_THREADS];
    for (int i = 0; i < SC_THREADS; i++) {
      th[i] = (sc_thread){r, i, dmh, smh, CONF_PASS, ""};
      pthread_create(&tid[i], NULL, sc_main, &th[i]);
    }
    for (int i = 0; i < SC_THREADS; i++) pthread_join(tid[i], NULL);
    for (int i = 0; i < SC_THREADS; i++)
      if (th[i].res != CONF_PASS) return conf_fail("%s", th[i].why);
  } else {
    uint64_t want_inc = 0, want_add = 0;
    for (int p = 1; p < r->nranks; p++)
      for (int t = 0; t < SC_THREADS; t++)
        for (int i = 0; i < SC_SIGNALS; i++) {
          if (i % 2) want_add += (uint64_t)(p * 1000 + i);
          else want_inc++;
        }
    double t0 = nt_now();
    uint64_t inc, add;
    for (;;) {
      inc = __atomic_load_n(sig_word(sig, 0), __ATOMIC_ACQUIRE);
      add = __atomic_load_n(sig_word(sig, 1), __ATOMIC_ACQUIRE);
      if ((inc == want_inc && add == want_add) || nt_now() - t0 > kc->wait_s) break;
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
    if (inc != want_inc || add != want_add) {
      /* give late signals a moment: a count that is still short is a lost signal */
      return conf_fail("iputSignal: after %d ranks x %d contexts x %d signals the INC word "
                       "reads %llu (want %llu) and the ADD word %llu (want %llu): %s",
                       r->nranks - 1, SC_THREADS, SC_SIGNALS, (unsigned long long)inc,
                       (unsigned long long)want_inc, (unsigned long long)add,
                       (unsigned long long)want_add,
                       inc < want_inc || add < want_add ? "signals were lost" : "signals were applied twice");
    }
  }
  CONF_TRY(kg_barrier(r));
  CONF_TRY(kg_dereg(r, smh));
  CONF_TRY(kg_dereg(r, dmh));
  nt_free(data, len);
  nt_free(sig, 4096);
  return CONF_PASS;
}

/* GIN v11 has one context per group: its threads share it. */
GROUP_TEST(t_counts, need_data, 3, kc->is_gin && kc->version == 11 ? 1 : SC_THREADS, b_counts,
           NULL)

/* ---- get and flush ---- */

static conf_result b_get(kg_rank* r, void* arg) {
  (void)arg;
  size_t len = 3 * MiB + 123;
  void *src, *dst;
  CONF_TRY(nt_alloc(len, &src));
  CONF_TRY(nt_alloc(len, &dst));
  void *smh, *dmh;
  CONF_TRY(kg_reg(r, src, len, 0, &smh));
  CONF_TRY(kg_reg(r, dst, len, 0, &dmh));
  fill_seeded(src, len, r->seed + (uint64_t)r->rank);
  CONF_TRY(kg_barrier(r));
  int peer = (r->rank + 1) % r->nranks;
  void* req = NULL;
  conf_stage_set("iget");
  ncclResult_t res = kc->data->iget(r->ctx, 0, 0, smh, len, 0, dmh, (uint32_t)peer, 0, &req);
  if (res != ncclSuccess) return conf_fail("rank %d: iget returned %s", r->rank, kind_result_name(res));
  CONF_TRY(kg_wait(r, req, "iget"));
  char what[80];
  snprintf(what, sizeof what, "iget of %zu bytes from rank %d", len, peer);
  CONF_TRY(nt_check(dst, len, r->seed + (uint64_t)peer, what));
  CONF_TRY(kg_barrier(r));
  CONF_TRY(kg_dereg(r, dmh));
  CONF_TRY(kg_dereg(r, smh));
  nt_free(src, len);
  nt_free(dst, len);
  return CONF_PASS;
}

GROUP_TEST(t_get, need_iget, 2, 1, b_get, NULL)

/* A put then a flush: once the flush completes, the put is visible at the target. */
static conf_result b_flush(kg_rank* r, void* arg) {
  (void)arg;
  size_t len = 2 * MiB;
  void *buf, *mh;
  CONF_TRY(kg_buffer(r, len, 0, &buf, &mh));
  CONF_TRY(kg_barrier(r));
  if (r->rank == 0) {
    fill_seeded(buf, len, r->seed);
    void* req = NULL;
    conf_stage_set("iput");
    ncclResult_t res = kc->data->iput(r->ctx, 0, 0, mh, len, 0, mh, 1, 0, &req);
    if (res != ncclSuccess) return conf_fail("iput returned %s", kind_result_name(res));
    CONF_TRY(kg_wait(r, req, "iput"));
    conf_stage_set("iflush");
    res = kc->data->iflush(r->ctx, 0, mh, 1, &req);
    if (res != ncclSuccess) return conf_fail("iflush returned %s", kind_result_name(res));
    if (req) CONF_TRY(kg_wait(r, req, "iflush"));
  }
  CONF_TRY(kg_barrier(r));
  if (r->rank == 1) CONF_TRY(nt_check(buf, len, r->seed, "iput then iflush: the put at rank 1"));
  CONF_TRY(kg_barrier(r));
  CONF_TRY(kg_dereg(r, mh));
  nt_free(buf, len);
  return CONF_PASS;
}

GROUP_TEST(t_flush, need_iflush, 2, 1, b_flush, NULL)

/* ---- contexts ---- */

static conf_result b_contexts(kg_rank* r, void* arg) {
  (void)arg;
  void *buf, *sig;
  CONF_TRY(nt_alloc(MiB, &buf));
  CONF_TRY(nt_alloc(4096, &sig));
  void *mh, *smh;
  CONF_TRY(kg_reg(r, buf, MiB, 0, &mh));
  CONF_TRY(kg_reg(r, sig, 4096, 0, &smh));
  CONF_TRY(kg_barrier(r));
  /* more contexts come and go beside the group's while it is in use */
  for (int i = 0; i < 3; i++) {
    void* keep = r->ctx;
    r->ctx = NULL;
    CONF_TRY(kg_context(r, 2));
    void* extra = r->ctx;
    r->ctx = keep;
    r->ncontexts = 4;
    conf_stage_set("destroyContext");
    ncclResult_t res = kc->is_gin ? kc->gin.gin.destroyContext(extra) : kc->rma.destroyContext(extra);
    if (res != ncclSuccess) return conf_fail("destroyContext returned %s", kind_result_name(res));
  }
  if (kc->data) {
    int peer = (r->rank + 1) % r->nranks;
    for (int c = 0; c < r->ncontexts; c++) {
      void* req = NULL;
      conf_stage_set("iputSignal");
      ncclResult_t res = kc->data->iputSignal(r->ctx, c, 0, mh, 4096, 4096 * (uint64_t)(c + 1), mh,
                                              (uint32_t)peer, 0, smh, 1, NCCL_GIN_SIGNAL_OP_INC,
                                              true, 0, &req);
      if (res != ncclSuccess)
        return conf_fail("rank %d: iputSignal on context %d of %d returned %s", r->rank, c,
                         r->ncontexts, kind_result_name(res));
      CONF_TRY(kg_wait(r, req, "iputSignal"));
    }
    double t0 = nt_now();
    while (__atomic_load_n(sig_word(sig, 0), __ATOMIC_ACQUIRE) < (uint64_t)r->ncontexts &&
           nt_now() - t0 < kc->wait_s) {
    }
    uint64_t got = __atomic_load_n(sig_word(sig, 0), __ATOMIC_ACQUIRE);
    if (got != (uint64_t)r->ncontexts)
      return conf_fail("rank %d: one signal per context on %d contexts, the word reads %llu",
                       r->rank, r->ncontexts, (unsigned long long)got);
  }
  CONF_TRY(kg_barrier(r));
  CONF_TRY(kg_dereg(r, smh));
  CONF_TRY(kg_dereg(r, mh));
  nt_free(buf, MiB);
  nt_free(sig, 4096);
  return CONF_PASS;
}

static conf_result need_contexts(void) {
  if (kc->is_gin && kc->version == 11)
    return conf_skip("GIN v11 has one context per group (NCCL refuses more)");
  return CONF_PASS;
}
GROUP_TEST(t_contexts, need_contexts, 2, 4, b_contexts, NULL)

/* ---- bad arguments on a live group ---- */

static conf_result b_bad_args(kg_rank* r, void* arg) {
  (void)arg;
  void *buf, *mh;
  CONF_TRY(kg_buffer(r, 65536, 0, &buf, &mh));
  CONF_TRY(kg_barrier(r));
  void* req = NULL;
  conf_stage_set("iput");
  ncclResult_t res = kc->data->iput(r->ctx, 0, 0, mh, 64, 0, mh, (uint32_t)r->nranks, 0, &req);
  if (res == ncclSuccess)
    return conf_fail("iput to rank %d of a group of %d returned ncclSuccess", r->nranks, r->nranks);
  conf_stage_set("iput");
  res = kc->data->iput(r->ctx, 0, 65536 - 8, mh, 64, 0, mh, 0, 0, &req);
  if (res == ncclSuccess)
    return conf_fail("iput of 64 bytes from offset %d of a 65536-byte registration returned "
                     "ncclSuccess", 65536 - 8);
  conf_stage_set("iputSignal");
  res = kc->data->iputSignal(r->ctx, 0, 0, mh, 8, 0, mh, 0, 0, mh, 1, 0x77, true, 0, &req);
  if (res == ncclSuccess) return conf_fail("iputSignal with signalOp 0x77 returned ncclSuccess");
  CONF_TRY(kg_barrier(r));
  CONF_TRY(kg_dereg(r, mh));
  nt_free(buf, 65536);
  return CONF_PASS;
}

GROUP_TEST(t_bad_args, need_data, 2, 1, b_bad_args, NULL)

/* ---- teardown and peers ---- */

static conf_result b_close_in_flight(kg_rank* r, void* arg) {
  (void)arg;
  size_t len = 8 * MiB;
  void *buf, *mh;
  CONF_TRY(kg_buffer(r, len, 0, &buf, &mh));
  CONF_TRY(kg_barrier(r));
  int peer = (r->rank + 1) % r->nranks;
  for (int i = 0; i < 16; i++) { /* posted, never tested */
    void* req = NULL;
    conf_stage_set("iput");
    ncclResult_t res = kc->data->iput(r->ctx, 0, 0, mh, len / 2, len / 2, mh, (uint32_t)peer, 0, &req);
    if (res != ncclSuccess) return conf_fail("rank %d: iput returned %s", r->rank, kind_result_name(res));
  }
  CONF_TRY(kg_barrier(r)); /* both have posted everything: now both close at once */
  CONF_TRY(kg_dereg(r, mh));
  CONF_TRY(kg_close(r)); /* destroyContext, closeColl, finalize with puts in flight */
  nt_free(buf, len);
  return CONF_PASS;
}

GROUP_TEST(t_close_in_flight, need_data, 2, 1, b_close_in_flight, NULL)

static conf_result b_peer_leaves(kg_rank* r, void* arg) {
  (void)arg;
  size_t len = 4 * MiB;
  void *buf, *mh;
  CONF_TRY(kg_buffer(r, len, 0, &buf, &mh));
  CONF_TRY(kg_barrier(r));
  if (r->rank == 1) kg_leave(r);
  double t0 = nt_now();
  int puts = 0;
  while (nt_now() - t0 < kc->wait_s) {
    void* req = NULL;
    conf_stage_set("iput");
    ncclResult_t res = kc->data->iput(r->ctx, 0, 0, mh, len, 0, mh, 1, 0, &req);
    if (res != ncclSuccess) return CONF_PASS; /* refused at once: surfaced */
    int done = 0;
    double t1 = nt_now();
    while (!done) {
      conf_stage_set("test");
      res = kc->data->test(r->coll, req, &done);
      if (res != ncclSuccess) return CONF_PASS;
      if (nt_now() - t1 > kc->wait_s)
        return conf_fail("iput to rank 1, which left, neither completed nor failed in %.0f s",
                         kc->wait_s);
    }
    puts++;
    bool has = false;
    if (kc->data->queryLastError) {
      conf_stage_set("queryLastError");
      if (kc->data->queryLastError(r->ctx, &has) == ncclSuccess && has) return CONF_PASS;
    }
  }
  return conf_fail("%d puts of %zu bytes to rank 1, which had left, all succeeded for %.0f s and "
                   "queryLastError reported nothing", puts, len, kc->wait_s);
}

GROUP_TEST(t_peer_leaves, need_data, 2, 1, b_peer_leaves, NULL)

const conf_test kind_load_tests[] = {
    {"plugin_loads_with_rtld_now_local", t_loads, 0},
    {"plugin_exports_a_supported_version", t_exports, 0},
    {"table_has_name_and_mandatory_entries", t_table, 0},
};
const int kind_load_tests_count = sizeof kind_load_tests / sizeof kind_load_tests[0];

const conf_test kind_tests[] = {
    {"init_gives_each_communicator_a_context", t_init, 0},
    {"devices_and_properties_are_sane", t_devices, 0},
    {"bad_device_is_refused", t_bad_device, 0},
    {"group_of_3_connects_and_closes", t_group3, 0},
    {"regmr_dereg_cycles_succeed", t_reg_cycles, 0},
    {"many_contexts_each_carry_puts", t_contexts, 0},
    {"put_lands_before_its_signal", t_order, 2},
    {"strong_signal_orders_earlier_puts", t_strong, 2},
    {"signal_counts_add_up_under_concurrency", t_counts, 2},
    {"iget_reads_remote_memory", t_get, 0},
    {"iflush_makes_earlier_puts_visible", t_flush, 0},
    {"bad_arguments_are_refused", t_bad_args, 0},
    {"close_with_puts_in_flight_returns", t_close_in_flight, 0},
    {"peer_leaving_mid_transfer_surfaces_an_error", t_peer_leaves, 2},
};
const int kind_tests_count = sizeof kind_tests / sizeof kind_tests[0];

const conf_test kind_gin_tests[] = {
    {"context_has_a_device_handle_where_gpu_code_needs_one", t_dev_handle, 0},
};
const int kind_gin_tests_count = sizeof kind_gin_tests / sizeof kind_gin_tests[0];
