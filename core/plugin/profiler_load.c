/* The profiler plugin loader (rules in profiler.h). The library state is this file's one
 * guarded global: every access holds reg.lock, including the plugin's init and finalize. Events
 * are reported without the lock: the plugin must be thread-safe, as in NCCL (the executor's
 * workers and the proxy thread report too). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/net.h"
#include "plugin/plugin_open.h"
#include "plugin/profiler.h"
#include "util/log.h"
#include "util/param.h"

#define PROF_SPEC_MAX 256
#define PROF_DEFAULT_LIBRARY "libnccl-profiler.so"

static struct {
  pthread_mutex_t lock;
  int ready;                /* NCCL_PROFILER_PLUGIN read */
  int disabled;             /* `none` */
  int failed;               /* looked for and not usable: not again until reset */
  char spec[PROF_SPEC_MAX]; /* as set; "" for the default library */
  void* dl;
  char path[PATH_MAX];
  int version;
  const void* raw;          /* the library's exported table */
  int checked;              /* entries checked after the first init */
  ncclProfiler_v6_t view;
  int users;
  int init_warned;
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Every version's table starts with a name and these five entries. */
typedef struct {
  const char* name;
  void *init, *start, *stop, *record, *finalize;
} table_head;

static const char* symbol(int v) {
  static const char* const names[] = {"ncclProfiler_v1", "ncclProfiler_v2", "ncclProfiler_v3",
                                      "ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6"};
  return v >= WEFT_PROFILER_MIN_VERSION && v <= WEFT_PROFILER_MAX_VERSION ? names[v - 1] : "?";
}

static void read_settings_locked(void) {
  if (reg.ready) return;
  reg.ready = 1;
  reg.disabled = reg.failed = 0;
  reg.spec[0] = '\0';
  if (!param_is_set(WEFT_PARAM_PROFILER_PLUGIN)) return;
  const char* v = param_str(WEFT_PARAM_PROFILER_PLUGIN);
  INFO(NCCL_ENV, "NCCL_PROFILER_PLUGIN set by environment to %s", v);
  if (strcasecmp(v, "none") == 0) {
    reg.disabled = 1;
  } else if (strlen(v) >= PROF_SPEC_MAX) {
    WARN("PROFILER/Plugin: NCCL_PROFILER_PLUGIN longer than %d characters ignored: %.40s...",
         PROF_SPEC_MAX - 1, v);
    reg.disabled = 1;
  } else {
    snprintf(reg.spec, sizeof reg.spec, "%s", v);
  }
}

/* The newest version dl exports with a name and an init. 1 when found; else 0 with why set
 * when a table is there but unusable (empty when the library has no profiler symbol). */
static int probe(void* dl, char* why, size_t len) {
  why[0] = '\0';
  for (int v = WEFT_PROFILER_MAX_VERSION; v >= WEFT_PROFILER_MIN_VERSION; v--) {
    const table_head* t = dlsym(dl, symbol(v));
    if (t == NULL) continue;
    if (t->name == NULL || t->name[0] == '\0') {
      snprintf(why, len, "%s: name is NULL or empty", symbol(v));
      return 0;
    }
    if (t->init == NULL) {
      snprintf(why, len, "%s (%s): init is NULL", symbol(v), t->name);
      return 0;
    }
    reg.raw = t;
    reg.version = v;
    reg.checked = 0;
    int r = 0;
    switch (v) {
      case 6: reg.view = *(const ncclProfiler_v6_t*)t; break;
      case 5: r = prof_shim_v5(t, &reg.view, why, len); break;
      case 4: r = prof_shim_v4(t, &reg.view, why, len); break;
      case 3: r = prof_shim_v3(t, &reg.view, why, len); break;
      case 2: r = prof_shim_v2(t, &reg.view, why, len); break;
      default: r = prof_shim_v1(t, &reg.view, why, len); break;
    }
    return r == 0;
  }
  return 0;
}

/* Load the library for the first communicator. 1 when a profiler is loaded. */
static int load_locked(void) {
  char why[700];
  const char* spec = reg.spec[0] ? reg.spec : PROF_DEFAULT_LIBRARY;
  int absent = 0;
  void* dl = plugin_open_named(spec, "libnccl-profiler", &absent, why, sizeof why);
  int from_net = 0;
  if (dl == NULL) {
    if (reg.spec[0])
      WARN("PROFILER/Plugin: NCCL_PROFILER_PLUGIN=%s: %s; trying the net plugin's library",
           reg.spec, why);
    else if (!absent)
      WARN("PROFILER/Plugin: %s: %s", PROF_DEFAULT_LIBRARY, why);
    else
      INFO(NCCL_INIT, "PROFILER/Plugin: Could not find: %s", PROF_DEFAULT_LIBRARY);
    /* NCCL's fallback: the external net plugin's own library may carry a profiler. */
    char netlib[PATH_MAX];
    if (!net_external_library(netlib, sizeof netlib)) return 0;
    dl = dlopen(netlib, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) return 0;
    from_net = 1;
  }
  plugin_lib_path(dl, spec, reg.path, sizeof reg.path);
  if (probe(dl, why, sizeof why)) {
    reg.dl = dl;
    INFO(NCCL_INIT, "PROFILER/Plugin: Loaded %s (v%d) from %s", reg.view.name, reg.version,
         reg.path);
    if (!from_net) INFO(NCCL_INIT, "Successfully loaded external profiler plugin %s", reg.path);
    return 1;
  }
  if (why[0])
    WARN("PROFILER/Plugin: %s: %s; running without a profiler", reg.path, why);
  else if (!from_net)
    INFO(NCCL_INIT, "External profiler plugin %s is unsupported (no ncclProfiler_v1..v6)",
         reg.path);
  if (!from_net && reg.spec[0] && !why[0])
    WARN("PROFILER/Plugin: %s exports no ncclProfiler_v1..v6 symbol; running without a "
         "profiler",
         reg.path);
  dlclose(dl);
  return 0;
}

static void unload_locked(void) {
  if (reg.dl == NULL || reg.users > 0) return;
  INFO(NCCL_INIT, "PROFILER/Plugin: Closing profiler plugin %s", reg.view.name);
  dlclose(reg.dl);
  reg.dl = NULL;
  reg.raw = NULL;
  reg.version = 0;
  reg.checked = 0;
  memset(&reg.view, 0, sizeof reg.view);
}

static void print_mask(int mask) {
  static const char* const names[] = {"Group",    "Coll",      "P2p",     "ProxyOp",
                                      "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin",
                                      "GroupApi",  "CollApi",   "P2pApi",  "KernelLaunch",
                                      "CeColl",    "CeSync",    "CeBatch"};
  char s[256] = "";
  size_t n = 0;
  for (int b = 0; b < 15; b++)
    if (mask & (1 << b)) n += (size_t)snprintf(s + n, sizeof s - n, "%s ", names[b]);
  INFO(NCCL_INIT, "Profiler event mask: 0x%x (%d) - Enabled: %s", mask, mask, s);
}

void prof_open_for_comm(weft_prof* p, uint64_t comm_id, const char* comm_name, int nnodes,
                        int nranks, int rank) {
  memset(p, 0, sizeof *p);
  pthread_mutex_lock(&reg.lock);
  read_settings_locked();
  if (reg.disabled || reg.failed) goto none;
  if (reg.dl == NULL && !load_locked()) {
    reg.failed = 1;
    goto none;
  }
  int mask = 0;
  void* ctx = NULL;
  ncclResult_t res = reg.view.init(&ctx, comm_id, &mask, comm_name ? comm_name : "", nnodes,
                                   nranks, rank, weft_log);
  if (res != ncclSuccess) {
    if (!reg.init_warned)
      WARN("PROFILER/Plugin: %s (v%d): init(rank %d of %d) failed (%s); continuing without "
           "profiler",
           reg.view.name, reg.version, rank, nranks, plugin_result_name(res));
    else
      INFO(NCCL_INIT, "PROFILER/Plugin: %s: init failed again (%s)", reg.view.name,
           plugin_result_name(res));
    reg.init_warned = 1;
    unload_locked();
    goto none;
  }
  if (!reg.checked) { /* the table may be filled in by init, as with NCCL */
    const table_head* t = reg.raw;
    const char* miss = !t->start ? "startEvent" : !t->stop ? "stopEvent"
                       : !t->record ? "recordEventState" : !t->finalize ? "finalize" : NULL;
    if (miss) {
      WARN("PROFILER/Plugin: %s: %s (%s): %s is NULL after init; running without a profiler",
           reg.path, symbol(reg.version), reg.view.name, miss);
      if (t->finalize) reg.view.finalize(ctx);
      unload_locked();
      reg.failed = 1;
      goto none;
    }
    if (reg.version == 6) reg.view = *(const ncclProfiler_v6_t*)reg.raw;
    reg.checked = 1;
  }
  reg.users++;
  p->ctx = ctx;
  p->api = &reg.view;
  p->version = reg.version;
  p->rank = rank;
  pthread_mutex_unlock(&reg.lock);
  print_mask(mask);
  __atomic_store_n(&p->mask, mask & WEFT_PROF_ALL, __ATOMIC_RELEASE);
  return;
none:
  pthread_mutex_unlock(&reg.lock);
}

void prof_close_for_comm(weft_prof* p) {
  if (p->api == NULL) return;
  __atomic_store_n(&p->mask, 0, __ATOMIC_RELEASE);
  pthread_mutex_lock(&reg.lock);
  /* As NCCL: a plugin that left no context (an init that disabled itself) is not finalized. */
  ncclResult_t res = p->ctx ? p->api->finalize(p->ctx) : ncclSuccess;
  if (res != ncclSuccess)
    WARN("PROFILER/Plugin: %s: finalize failed (%s)", p->api->name, plugin_result_name(res));
  reg.users--;
  unload_locked();
  pthread_mutex_unlock(&reg.lock);
  memset(p, 0, sizeof *p);
}

ncclResult_t prof_loader_reset(void) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&reg.lock);
  if (reg.users > 0) {
    res = ncclInvalidUsage;
    WARN("PROFILER: loader reset refused: a communicator still holds the profiler");
  } else {
    unload_locked();
    reg.ready = 0;
    reg.init_warned = 0;
  }
  pthread_mutex_unlock(&reg.lock);
  return res;
}
