/* The tuner plugin loader (rules in tuner.h). The library state is this file's one guarded
 * global: every access holds reg.lock, including the plugin's init and finalize, so opens and
 * closes are serialised as in NCCL. getCollInfo is called without the lock (it is the plugin's
 * to make thread-safe, as in NCCL). */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/net.h"
#include "plugin/plugin_open.h"
#include "plugin/tuner.h"
#include "util/log.h"
#include "util/param.h"
#include "weft.h"

#define TUNER_SPEC_MAX 256
#define TUNER_DEFAULT_LIBRARY "libnccl-tuner.so"

static struct {
  pthread_mutex_t lock;
  int ready;               /* NCCL_TUNER_PLUGIN read */
  int disabled;            /* `none` */
  char spec[TUNER_SPEC_MAX]; /* as set; "" for the default library */
  int spec_done;           /* the named/default library was tried and is not usable: not again */
  int init_warned;         /* a failing init was WARNed once already */
  void* dl;                /* the library while loaded */
  char path[PATH_MAX];
  char name[64];
  int version;
  int algo_rows;            /* weft.h's weftTunerAlgorithms, or NCCL's seven */
  const void* raw;          /* the library's exported table */
  int complete;             /* view built from raw, after the first init */
  char broken[PATH_MAX];    /* a library whose table stayed incomplete after init: not again */
  ncclTuner_v6_t view;
  int users; /* communicators holding a context */
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

const char* tuner_shim_symbol(int version) {
  static const char* const names[] = {"ncclTunerPlugin_v2", "ncclTunerPlugin_v3",
                                      "ncclTunerPlugin_v4", "ncclTunerPlugin_v5",
                                      "ncclTunerPlugin_v6"};
  if (version < WEFT_TUNER_MIN_VERSION || version > WEFT_TUNER_MAX_VERSION) return "?";
  return names[version - WEFT_TUNER_MIN_VERSION];
}

/* v5 and v6 share their first four entries; v5 has no getChunkSize. */
static int shim_v5_v6(const void* raw, int version, ncclTuner_v6_t* view, char* why,
                      size_t len) {
  const ncclTuner_v5_t* t = raw;
  const char* what = !t->name || !t->name[0] ? "name is NULL or empty"
                     : !t->init              ? "init is NULL"
                     : !t->getCollInfo       ? "getCollInfo is NULL"
                     : !t->finalize          ? "finalize is NULL"
                                             : NULL;
  if (what) {
    snprintf(why, len, "%s", what);
    return -1;
  }
  *view = (ncclTuner_v6_t){t->name, t->init, t->getCollInfo, t->finalize,
                           version == 6 ? ((const ncclTuner_v6_t*)raw)->getChunkSize : NULL};
  return 0;
}

int tuner_shim_adapt(const void* raw, int version, ncclTuner_v6_t* view, char* why, size_t len) {
  switch (version) {
    case 2: return tuner_shim_v2(raw, view, why, len);
    case 3: return tuner_shim_v3(raw, view, why, len);
    case 4: return tuner_shim_v4(raw, view, why, len);
    case 5:
    case 6: return shim_v5_v6(raw, version, view, why, len);
    default: snprintf(why, len, "unknown version %d", version); return -1;
  }
}

static void read_settings_locked(void) {
  if (reg.ready) return;
  reg.ready = 1;
  reg.disabled = 0;
  reg.spec[0] = '\0';
  reg.spec_done = 0;
  if (!param_is_set(WEFT_PARAM_TUNER_PLUGIN)) return;
  const char* v = param_str(WEFT_PARAM_TUNER_PLUGIN);
  INFO(NCCL_ENV | NCCL_TUNING, "NCCL_TUNER_PLUGIN set to %s", v);
  if (strcasecmp(v, "none") == 0) {
    reg.disabled = 1;
  } else if (strlen(v) >= TUNER_SPEC_MAX) {
    WARN("TUNER/Plugin: NCCL_TUNER_PLUGIN longer than %d characters ignored: %.40s...",
         TUNER_SPEC_MAX - 1, v);
    reg.disabled = 1;
  } else {
    snprintf(reg.spec, sizeof reg.spec, "%s", v);
  }
}

static void set_path(void* dl, const char* fallback) {
  plugin_lib_path(dl, fallback, reg.path, sizeof reg.path);
}

/* The newest version dl exports, resolved: only init must be there yet (the table is read after
 * init, as stock NCCL does). 1 when usable; else 0 and, when the library exports a table that is
 * unusable, why (a library with no tuner symbol leaves why empty). */
static int probe(void* dl, char* why, size_t len) {
  why[0] = '\0';
  if (reg.broken[0] && strcmp(reg.broken, reg.path) == 0) {
    snprintf(why, len, "its table was incomplete after init before");
    return 0;
  }
  for (int v = WEFT_TUNER_MAX_VERSION; v >= WEFT_TUNER_MIN_VERSION; v--) {
    const void* raw = dlsym(dl, tuner_shim_symbol(v));
    if (raw == NULL) continue;
    /* name, then init, lead every version's table. */
    int has_init = v >= 5 ? ((const ncclTuner_v5_t*)raw)->init != NULL
                          : ((const ncclTuner_v4_t*)raw)->init != NULL;
    if (!has_init) {
      snprintf(why, len, "%s: init is NULL", tuner_shim_symbol(v));
      return 0;
    }
    reg.raw = raw;
    reg.version = v;
    reg.complete = 0;
    const char* name = *(const char* const*)raw;
    snprintf(reg.name, sizeof reg.name, "%s", name ? name : "?");
    const int* rows = dlsym(dl, WEFT_TUNER_ALGORITHMS_SYMBOL);
    reg.algo_rows =
        rows && *rows == WEFT_NUM_ALGORITHMS ? WEFT_NUM_ALGORITHMS : NCCL_NUM_ALGORITHMS;
    return 1;
  }
  return 0;
}

/* The plugin's own init, by version (v2..v4 share one signature, v5 and v6 another). */
static ncclResult_t raw_init(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                             ncclNvlDomainInfo_v5_t* nvl, ncclTunerConstants_v5_t* constants) {
  if (reg.version >= 5)
    return ((const ncclTuner_v5_t*)reg.raw)->init(ctx, comm_id, nranks, nnodes, weft_log, nvl,
                                                   constants);
  if (reg.version == 4) return ((const ncclTuner_v4_t*)reg.raw)->init(nranks, nnodes, weft_log, ctx);
  if (reg.version == 3) return ((const ncclTuner_v3_t*)reg.raw)->init(nranks, nnodes, weft_log, ctx);
  return ((const ncclTuner_v2_t*)reg.raw)->init(nranks, nnodes, weft_log, ctx);
}

/* The plugin's own finalize (v5, v6) or destroy (v2..v4) as it is now, or NULL. */
static ncclResult_t (*raw_finalize(void))(void*) {
  if (reg.version >= 5) return ((const ncclTuner_v5_t*)reg.raw)->finalize;
  if (reg.version == 4) return ((const ncclTuner_v4_t*)reg.raw)->destroy;
  if (reg.version == 3) return ((const ncclTuner_v3_t*)reg.raw)->destroy;
  return ((const ncclTuner_v2_t*)reg.raw)->destroy;
}

/* Load the library for the first communicator. 1 when a tuner is loaded. */
static int load_locked(void) {
  char why[700];
  if (!reg.spec_done) {
    const char* spec = reg.spec[0] ? reg.spec : TUNER_DEFAULT_LIBRARY;
    int absent = 0;
    void* dl = plugin_open_named(spec, "libnccl-tuner", &absent, why, sizeof why);
    if (dl) {
      set_path(dl, spec);
      if (probe(dl, why, sizeof why)) {
        reg.dl = dl;
        INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: loaded %s (%s, v%d)", reg.path, reg.name,
             reg.version);
        return 1;
      }
      if (why[0] || reg.spec[0])
        WARN("TUNER/Plugin: %s: %s; weft's model decides alone", reg.path,
             why[0] ? why : "exports no ncclTunerPlugin_v2..v6 symbol");
      dlclose(dl);
      reg.spec_done = 1;
      return 0; /* found but unusable: no fallback to the net library */
    }
    reg.spec_done = 1;
    if (reg.spec[0])
      WARN("TUNER/Plugin: NCCL_TUNER_PLUGIN=%s: %s; trying the net plugin's library", reg.spec,
           why);
    else if (!absent)
      WARN("TUNER/Plugin: %s: %s", TUNER_DEFAULT_LIBRARY, why);
    else
      INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: no %s found", TUNER_DEFAULT_LIBRARY);
  }
  /* NCCL's fallback: the external net plugin's own library may carry a tuner. */
  char netlib[PATH_MAX];
  if (!net_external_library(netlib, sizeof netlib)) return 0;
  void* dl = dlopen(netlib, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return 0;
  set_path(dl, netlib);
  if (probe(dl, why, sizeof why)) {
    reg.dl = dl;
    INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: using the tuner of net plugin %s (%s, v%d)",
         reg.path, reg.name, reg.version);
    return 1;
  }
  if (why[0])
    WARN("TUNER/Plugin: net plugin %s: %s; weft's model decides alone", reg.path, why);
  else
    INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: net plugin %s has no tuner", reg.path);
  dlclose(dl);
  return 0;
}

static void unload_locked(void) {
  if (reg.dl == NULL || reg.users > 0) return;
  dlclose(reg.dl);
  reg.dl = NULL;
  reg.version = 0;
  reg.raw = NULL;
  reg.complete = 0;
  memset(&reg.view, 0, sizeof reg.view);
}

/* What a v5 init may leave in the constants: finite, non-negative numbers. */
static int constants_sane(const ncclTunerConstants_v5_t* c, size_t* bad) {
  const double* d = (const double*)c;
  for (size_t i = 0; i < sizeof *c / sizeof(double); i++)
    if (!isfinite(d[i]) || d[i] < 0) {
      *bad = i;
      return 0;
    }
  return 1;
}

ncclResult_t tuner_open_for_comm(uint64_t comm_id, size_t nranks, size_t nnodes,
                                 const ncclNvlDomainInfo_v5_t* nvl,
                                 ncclTunerConstants_v5_t* constants, weft_tuner** out) {
  if (out == NULL || constants == NULL || nvl == NULL) return ncclInvalidArgument;
  *out = NULL;
  weft_tuner* t = calloc(1, sizeof *t);
  if (t == NULL) {
    WARN("TUNER: out of memory for a communicator's tuner");
    return ncclSystemError;
  }
  pthread_mutex_lock(&reg.lock);
  read_settings_locked();
  if (reg.disabled || (reg.dl == NULL && !load_locked())) goto none;

  ncclTunerConstants_v5_t mine = *constants;
  ncclNvlDomainInfo_v5_t nvl_copy = *nvl;
  void* ctx = NULL;
  ncclResult_t res = reg.complete
                         ? reg.view.init(&ctx, comm_id, nranks, nnodes, weft_log, &nvl_copy, &mine)
                         : raw_init(&ctx, comm_id, nranks, nnodes, &nvl_copy, &mine);
  if (res == ncclSuccess && !reg.complete) {
    char why[200];
    if (tuner_shim_adapt(reg.raw, reg.version, &reg.view, why, sizeof why) != 0) {
      WARN("TUNER/Plugin: %s: %s: %s after init; weft's model decides alone",
           reg.path, tuner_shim_symbol(reg.version), why);
      ncclResult_t (*fini)(void*) = raw_finalize();
      if (fini) fini(ctx);
      snprintf(reg.broken, sizeof reg.broken, "%s", reg.path);
      reg.spec_done = 1;
      unload_locked();
      goto none;
    }
    reg.complete = 1;
    snprintf(reg.name, sizeof reg.name, "%s", reg.view.name);
    INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: %s: %s read after init (%s)", reg.path,
         tuner_shim_symbol(reg.version), reg.name);
  }
  if (res != ncclSuccess) {
    if (!reg.init_warned)
      WARN("TUNER/Plugin: %s (%s v%d): init(nRanks %zu, nNodes %zu) failed (%s); weft's model "
           "decides for this communicator",
           reg.path, reg.name, reg.version, nranks, nnodes, plugin_result_name(res));
    else
      INFO(NCCL_TUNING, "TUNER/Plugin: %s: init failed again (%s)", reg.name, plugin_result_name(res));
    reg.init_warned = 1;
    unload_locked();
    goto none;
  }
  size_t bad = 0;
  if (reg.version >= 5 && !constants_sane(&mine, &bad)) {
    WARN("TUNER/Plugin: %s: init left constant #%zu at %g (must be finite and >= 0); keeping "
         "weft's constants",
         reg.name, bad, ((const double*)&mine)[bad]);
  } else {
    *constants = mine;
  }
  reg.users++;
  *t = (weft_tuner){&reg.view, ctx, reg.name, reg.path, reg.version, reg.algo_rows};
  pthread_mutex_unlock(&reg.lock);
  INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: %s (v%d) tunes comm 0x%llx (%zu ranks, %zu nodes)",
       t->name, t->version, (unsigned long long)comm_id, nranks, nnodes);
  *out = t;
  return ncclSuccess;
none:
  pthread_mutex_unlock(&reg.lock);
  free(t);
  return ncclSuccess;
}

void tuner_close_for_comm(weft_tuner* t) {
  if (t == NULL) return;
  pthread_mutex_lock(&reg.lock);
  ncclResult_t res = t->api->finalize(t->ctx);
  if (res != ncclSuccess)
    WARN("TUNER/Plugin: %s: finalize failed (%s); its context may leak", t->name,
         plugin_result_name(res));
  reg.users--;
  unload_locked();
  pthread_mutex_unlock(&reg.lock);
  free(t);
}

ncclResult_t tuner_loader_reset(void) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&reg.lock);
  if (reg.users > 0) {
    res = ncclInvalidUsage;
    WARN("TUNER: loader reset refused: a communicator still holds the tuner");
  } else {
    unload_locked();
    reg.ready = 0;
    reg.init_warned = 0;
    reg.broken[0] = '\0';
  }
  pthread_mutex_unlock(&reg.lock);
  return res;
}
