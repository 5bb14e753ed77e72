/* The profiler suite: a profiler plugin driven with synthetic event streams of every version it
 * exports (v1..v6), through the shims weft's core uses (core/plugin/profiler_shim_vN.c), so each
 * version sees exactly the descriptors it would get from weft: nested trees in NCCL's order
 * (GroupApi > CollApi > Coll > KernelCh/ProxyOp > ProxyStep, Group as parentGroup), stops out of
 * order (parents before children, as NCCL does with API events), many communicators, many
 * threads, and a long run that must not grow the process (a plugin that keeps every handle
 * leaks). Each test runs in a child under a timeout (runner.c), so a plugin that crashes is a
 * FAIL naming the signal and one that blocks a FAIL naming the timeout. A call that returns an
 * error is a FAIL naming the call and the version. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_profiler.h"
#include "plugin/profiler.h"
#include "profiler_tests.h"
#include "cli.h"
#include "runner.h"

#define PMIN 1
#define PMAX 6

typedef struct {
  const char* path;
  void* dl;
  char load_error[512];
  unsigned exported;
  const void* raw[PMAX + 1];
} prof_ctx;

static prof_ctx pc;

static void conf_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                        const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  conf_log_line(buf);
}

/* The current view of version v (the shims keep one table per version: one child, one use). */
static int view_of(int v, ncclProfiler_v6_t* view) {
  char why[128];
  const void* raw = pc.raw[v];
  switch (v) {
    case 6: *view = *(const ncclProfiler_v6_t*)raw; return 0;
    case 5: return prof_shim_v5(raw, view, why, sizeof why);
    case 4: return prof_shim_v4(raw, view, why, sizeof why);
    case 3: return prof_shim_v3(raw, view, why, sizeof why);
    case 2: return prof_shim_v2(raw, view, why, sizeof why);
    default: return prof_shim_v1(raw, view, why, sizeof why);
  }
}

static const char* const head_names[] = {"init", "startEvent", "stopEvent", "recordEventState",
                                         "finalize"};

/* NULL entries of version v's table (as it is now). */
static const char* null_entry(int v) {
  const struct { const char* name; void* f[5]; }* t = pc.raw[v];
  if (!t->name || !t->name[0]) return "name";
  for (int i = 0; i < 5; i++)
    if (!t->f[i]) return head_names[i];
  return NULL;
}

#define CALL(v, what, expr)                                                              \
  do {                                                                                   \
    ncclResult_t r_ = (expr);                                                            \
    if (r_ != ncclSuccess)                                                               \
      return conf_fail("v%d: %s returned %d (a well-behaved plugin returns ncclSuccess)", \
                       v, what, (int)r_);                                                \
  } while (0)

typedef struct {
  int v;
  const ncclProfiler_v6_t* p;
  void* ctx;
  int rank;
} drive;

static conf_result start(drive* d, void** h, ncclProfilerEventDescr_v6_t* e, const char* what) {
  *h = NULL;
  e->rank = d->rank;
  CALL(d->v, what, d->p->startEvent(d->ctx, h, e));
  return CONF_PASS;
}
static conf_result stop(drive* d, void* h, const char* what) {
  if (h) CALL(d->v, what, d->p->stopEvent(h));
  return CONF_PASS;
}
static conf_result state(drive* d, void* h, ncclProfilerEventState_t s, const char* what) {
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = 12345;
  if (h) CALL(d->v, what, d->p->recordEventState(h, s, &a));
  return CONF_PASS;
}

/* One collective's tree as NCCL reports it; out_of_order stops the parents first. */
static conf_result tree(drive* d, uint64_t seq, int out_of_order) {
  ncclProfilerEventDescr_v6_t e;
  void *gapi, *capi, *grp, *coll, *kch[2], *pop, *pstep[4], *ctrl, *kl;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileGroupApi;
  e.groupApi.groupDepth = 1;
  CONF_TRY(start(d, &gapi, &e, "startEvent(GroupApi)"));
  CONF_TRY(state(d, gapi, ncclProfilerGroupStartApiStop, "recordEventState(GroupStartApiStop)"));
  memset(&e, 0, sizeof e);
  e.type = ncclProfileCollApi;
  e.parentObj = gapi;
  e.collApi.func = "AllReduce";
  e.collApi.count = 1024;
  e.collApi.datatype = "ncclFloat32";
  CONF_TRY(start(d, &capi, &e, "startEvent(CollApi)"));
  CONF_TRY(stop(d, capi, "stopEvent(CollApi)")); /* NCCL stops it before the Coll starts */
  CONF_TRY(state(d, gapi, ncclProfilerGroupEndApiStart, "recordEventState(GroupEndApiStart)"));
  memset(&e, 0, sizeof e);
  e.type = ncclProfileGroup;
  CONF_TRY(start(d, &grp, &e, "startEvent(Group)"));
  memset(&e, 0, sizeof e);
  e.type = ncclProfileColl;
  e.parentObj = capi;
  e.coll.seqNumber = seq;
  e.coll.func = "AllReduce";
  e.coll.count = 1024;
  e.coll.root = -1;
  e.coll.datatype = "ncclFloat32";
  e.coll.nChannels = 2;
  e.coll.algo = "RING";
  e.coll.proto = "SIMPLE";
  e.coll.parentGroup = grp;
  CONF_TRY(start(d, &coll, &e, "startEvent(Coll)"));
  memset(&e, 0, sizeof e);
  e.type = ncclProfileKernelLaunch;
  e.parentObj = gapi;
  CONF_TRY(start(d, &kl, &e, "startEvent(KernelLaunch)"));
  CONF_TRY(stop(d, kl, "stopEvent(KernelLaunch)"));
  for (int c = 0; c < 2; c++) {
    memset(&e, 0, sizeof e);
    e.type = ncclProfileKernelCh;
    e.parentObj = coll;
    e.kernelCh.channelId = (uint8_t)c;
    e.kernelCh.pTimer = 1000;
    CONF_TRY(start(d, &kch[c], &e, "startEvent(KernelCh)"));
  }
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  e.parentObj = coll;
  e.proxyOp.pid = getpid();
  e.proxyOp.peer = 1;
  e.proxyOp.nSteps = 4;
  e.proxyOp.chunkSize = 65536;
  e.proxyOp.isSend = 1;
  CONF_TRY(start(d, &pop, &e, "startEvent(ProxyOp)"));
  for (int s = 0; s < 4; s++) {
    memset(&e, 0, sizeof e);
    e.type = ncclProfileProxyStep;
    e.parentObj = pop;
    e.proxyStep.step = s;
    CONF_TRY(start(d, &pstep[s], &e, "startEvent(ProxyStep)"));
    CONF_TRY(state(d, pstep[s], ncclProfilerProxyStepSendGPUWait, "recordEventState(SendGPUWait)"));
    CONF_TRY(state(d, pstep[s], ncclProfilerProxyStepSendWait, "recordEventState(SendWait)"));
  }
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyCtrl;
  CONF_TRY(start(d, &ctrl, &e, "startEvent(ProxyCtrl)"));
  CONF_TRY(state(d, ctrl, ncclProfilerProxyCtrlWakeup, "recordEventState(ProxyCtrlWakeup)"));
  CONF_TRY(state(d, ctrl, ncclProfilerProxyCtrlSleep, "recordEventState(ProxyCtrlSleep)"));
  CONF_TRY(stop(d, ctrl, "stopEvent(ProxyCtrl)"));
  if (out_of_order) {
    CONF_TRY(stop(d, gapi, "stopEvent(GroupApi) before its children"));
    CONF_TRY(stop(d, grp, "stopEvent(Group) before its Coll"));
    CONF_TRY(stop(d, coll, "stopEvent(Coll) before its KernelCh and ProxyOp"));
    CONF_TRY(stop(d, pop, "stopEvent(ProxyOp) before its steps"));
  }
  for (int s = 3; s >= 0; s--) CONF_TRY(stop(d, pstep[s], "stopEvent(ProxyStep)"));
  for (int c = 0; c < 2; c++) {
    CONF_TRY(state(d, kch[c], ncclProfilerKernelChStop, "recordEventState(KernelChStop)"));
    CONF_TRY(stop(d, kch[c], "stopEvent(KernelCh)"));
  }
  if (!out_of_order) {
    CONF_TRY(stop(d, pop, "stopEvent(ProxyOp)"));
    CONF_TRY(stop(d, coll, "stopEvent(Coll)"));
    CONF_TRY(stop(d, grp, "stopEvent(Group)"));
    CONF_TRY(stop(d, gapi, "stopEvent(GroupApi)"));
  }
  return CONF_PASS;
}

static conf_result open_ctx(drive* d, int v, const ncclProfiler_v6_t* p, int rank, int nranks,
                            uint64_t id) {
  int mask = 0;
  d->v = v, d->p = p, d->ctx = NULL, d->rank = rank;
  CALL(v, "init", p->init(&d->ctx, id, &mask, "conformance", 1, nranks, rank, conf_logger));
  if (mask & ~WEFT_PROF_ALL)
    return conf_fail("v%d: init set activation mask 0x%x with bits no version defines", v, mask);
  return CONF_PASS;
}
static conf_result close_ctx(drive* d) {
  if (d->ctx) CALL(d->v, "finalize", d->p->finalize(d->ctx));
  return CONF_PASS;
}

/* Run body(v, view) for every exported version. */
static conf_result each_version(conf_result (*body)(int v, const ncclProfiler_v6_t* p)) {
  if (!pc.exported) return conf_skip("no ncclProfiler_v1..v6 exported");
  for (int v = PMAX; v >= PMIN; v--) {
    if (!(pc.exported & (1u << v))) continue;
    ncclProfiler_v6_t view;
    if (view_of(v, &view) != 0) return conf_fail("v%d: cannot adapt the table", v);
    const char* miss = null_entry(v);
    if (miss) return conf_skip("v%d: %s is NULL (see the table test)", v, miss);
    CONF_TRY(body(v, &view));
  }
  return CONF_PASS;
}

static conf_result t_loads(void* arg) {
  (void)arg;
  if (!pc.dl) return conf_fail("dlopen(RTLD_NOW|RTLD_LOCAL) failed: %s", pc.load_error);
  return CONF_PASS;
}

static conf_result t_exports(void* arg) {
  (void)arg;
  if (!pc.dl) return conf_skip("not loadable");
  if (!pc.exported) return conf_fail("exports none of ncclProfiler_v1 .. ncclProfiler_v6");
  return CONF_PASS;
}

static conf_result body_table(int v, const ncclProfiler_v6_t* p) {
  drive d;
  CONF_TRY(open_ctx(&d, v, p, 0, 1, 0x1234));
  const char* miss = null_entry(v); /* a plugin may fill its table in init */
  if (miss) return conf_fail("v%d: %s is NULL after init", v, miss);
  return close_ctx(&d);
}
static conf_result t_table(void* arg) {
  (void)arg;
  if (!pc.exported) return conf_skip("no ncclProfiler_v1..v6 exported");
  for (int v = PMAX; v >= PMIN; v--) {
    if (!(pc.exported & (1u << v))) continue;
    const struct { const char* name; void* init; }* t = pc.raw[v];
    if (!t->name || !t->name[0]) return conf_fail("ncclProfiler_v%d: name is NULL or empty", v);
    if (!t->init) return conf_fail("ncclProfiler_v%d: init is NULL", v);
    ncclProfiler_v6_t view;
    if (view_of(v, &view) != 0) return conf_fail("v%d: cannot adapt the table", v);
    CONF_TRY(body_table(v, &view));
  }
  return CONF_PASS;
}

static conf_result body_many_comms(int v, const ncclProfiler_v6_t* p) {
  enum { NC = 64 };
  drive d[NC];
  for (int i = 0; i < NC; i++) CONF_TRY(open_ctx(&d[i], v, p, i % 8, 8, 0x1000 + (uint64_t)i));
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < NC; i++) CONF_TRY(tree(&d[i], (uint64_t)k, 0));
  for (int i = NC - 1; i >= 0; i -= 2) CONF_TRY(close_ctx(&d[i])); /* not in init order */
  for (int i = 0; i < NC; i += 2) CONF_TRY(close_ctx(&d[i]));
  return CONF_PASS;
}
static conf_result t_many_comms(void* arg) {
  (void)arg;
  return each_version(body_many_comms);
}

static conf_result body_nested(int v, const ncclProfiler_v6_t* p) {
  drive d;
  CONF_TRY(open_ctx(&d, v, p, 0, 2, 0x77));
  for (int k = 0; k < 2000; k++) CONF_TRY(tree(&d, (uint64_t)k, 0));
  return close_ctx(&d);
}
static conf_result t_nested(void* arg) {
  (void)arg;
  return each_version(body_nested);
}

static conf_result body_out_of_order(int v, const ncclProfiler_v6_t* p) {
  drive d;
  CONF_TRY(open_ctx(&d, v, p, 1, 2, 0x78));
  for (int k = 0; k < 2000; k++) CONF_TRY(tree(&d, (uint64_t)k, 1));
  return close_ctx(&d);
}
static conf_result t_out_of_order(void* arg) {
  (void)arg;
  return each_version(body_out_of_order);
}

typedef struct {
  drive d;
  conf_result r;
} thread_arg;
static void* thread_main(void* a) {
  thread_arg* t = a;
  t->r = CONF_PASS;
  for (int k = 0; k < 1000 && t->r == CONF_PASS; k++) t->r = tree(&t->d, (uint64_t)k, k & 1);
  return NULL;
}
static conf_result body_threads(int v, const ncclProfiler_v6_t* p) {
  enum { NT = 8 };
  thread_arg t[NT];
  pthread_t th[NT];
  /* two threads per communicator: the application's and the proxy's, as in NCCL */
  for (int i = 0; i < NT; i += 2) {
    CONF_TRY(open_ctx(&t[i].d, v, p, i / 2, NT / 2, 0x900 + (uint64_t)i));
    t[i + 1].d = t[i].d;
  }
  for (int i = 0; i < NT; i++)
    if (pthread_create(&th[i], NULL, thread_main, &t[i]) != 0)
      return conf_inconclusive("cannot start thread %d", i);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NT; i++) CONF_TRY(t[i].r);
  for (int i = 0; i < NT; i += 2) CONF_TRY(close_ctx(&t[i].d));
  return CONF_PASS;
}
static conf_result t_threads(void* arg) {
  (void)arg;
  return each_version(body_threads);
}

static long rss_kb(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = -1;
  fclose(f);
  return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static conf_result body_leak(int v, const ncclProfiler_v6_t* p) {
  drive d;
  CONF_TRY(open_ctx(&d, v, p, 0, 2, 0x55));
  for (int k = 0; k < 20000; k++) CONF_TRY(tree(&d, (uint64_t)k, k & 1)); /* warm up */
  long before = rss_kb();
  enum { TREES = 200000 }; /* 16 events each */
  for (int k = 0; k < TREES; k++) CONF_TRY(tree(&d, (uint64_t)k, k & 1));
  long after = rss_kb();
  CONF_TRY(close_ctx(&d));
  if (before < 0 || after < 0) return conf_inconclusive("cannot read /proc/self/statm");
  long grown = after - before;
  conf_note("v%d: RSS %ld kB -> %ld kB over %d event trees", v, before, after, TREES);
  if (grown > 64 * 1024)
    return conf_fail("v%d: the process grew by %ld kB over %d stopped event trees (%ld bytes "
                     "per event): stopped events are kept; bound the memory (a ring buffer)",
                     v, grown, TREES, grown * 1024 / (TREES * 16L));
  return CONF_PASS;
}
static conf_result t_leak(void* arg) {
  (void)arg;
  return each_version(body_leak);
}

static const conf_test profiler_tests[] = {
    {"profiler_plugin_loads_with_rtld_now_local", t_loads, 0},
    {"profiler_plugin_exports_a_supported_version", t_exports, 0},
    {"profiler_tables_have_name_and_entries", t_table, 0},
    {"profiler_many_communicators_init_and_finalize", t_many_comms, 0},
    {"profiler_nested_event_trees_in_nccl_order", t_nested, 0},
    {"profiler_out_of_order_stops_are_accepted", t_out_of_order, 0},
    {"profiler_many_threads_report_at_once", t_threads, 0},
    {"profiler_memory_stays_bounded_over_many_events", t_leak, 4},
};

static conf_result profiler_gate(void* ctx, const conf_test* t, char* why, size_t len) {
  (void)ctx;
  if (!pc.dl && strcmp(t->name, "profiler_plugin_loads_with_rtld_now_local") != 0) {
    snprintf(why, len, "plugin failed to load");
    return CONF_SKIP;
  }
  return CONF_PASS;
}

static const char* profiler_hint(const char* name, const char* reason, int* stage) {
  (void)reason;
  *stage = 0; /* suite order */
  if (strstr(name, "memory")) return "free an event's record at stopEvent, or keep a ring";
  if (strstr(name, "threads")) return "guard the plugin's state: NCCL reports from several threads";
  if (strstr(name, "out_of_order"))
    return "a parent may stop before its children (NCCL's API events do)";
  return NULL;
}

int profiler_suite_main(int argc, char** argv) {
  conf_options opt = {.timeout_s = 30, .hint = profiler_hint};
  if (argc < 1) return 2;
  static char libname[256];
  pc.path = conf_plugin_path(argv[0], "profiler", libname, sizeof libname);
  for (int i = 1; i < argc; i++)
    if (!conf_common_option(&opt, argc, argv, &i)) {
      fprintf(stderr, "weft-conformance profiler: unknown option %s\n", argv[i]);
      return 2;
    }
  if (opt.timeout_s <= 0) return 2;
  if (!opt.list_only) pc.dl = conf_open_plugin(pc.path, pc.load_error, sizeof pc.load_error);
  if (pc.dl)
    for (int v = PMIN; v <= PMAX; v++) {
      char sym[32];
      snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
      pc.raw[v] = dlsym(pc.dl, sym);
      if (pc.raw[v]) pc.exported |= 1u << v;
    }
  char list[64];
  conf_version_lists(pc.exported, PMIN, PMAX, NULL, 0, list, sizeof list);
  char extra[128];
  snprintf(extra, sizeof extra, "\"exported\": [%s]", list);
  if (!opt.list_only)
    printf("# weft-conformance profiler %s: %s\n", pc.path,
           pc.dl ? (pc.exported ? "loaded" : "no supported version") : "not loadable");
  return conf_run("profiler", pc.path, profiler_tests,
                  sizeof profiler_tests / sizeof profiler_tests[0], &pc, profiler_gate, &opt,
                  extra);
}
