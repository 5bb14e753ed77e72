/* The GIN, RMA and CollNet loader (kind.h for the rules): the candidate list of a kind, the
 * symbol probe, the checks, init and devices, and the window registration with NCCL's flags.
 * The one global is the file the last GIN open came from (NCCL's RMA loader looks there),
 * guarded by its lock. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/kind.h"
#include "plugin/plugin_open.h"
#include "util/log.h"
#include "util/param.h"

#define KIND_SPEC_MAX 256

static struct {
  pthread_mutex_t lock;
  char path[PATH_MAX];
} last_gin = {.lock = PTHREAD_MUTEX_INITIALIZER};

const char* kind_plugin_label(weft_plugin_kind kind) {
  return kind == WEFT_KIND_GIN ? "GIN" : kind == WEFT_KIND_RMA ? "RMA" : "CollNet";
}

typedef struct {
  char spec[KIND_SPEC_MAX];
  int is_default; /* absent is an INFO */
  int is_borrowed; /* another kind's library: absent symbol is an INFO */
} kind_cand;

/* The setting's list (or the default library), then the borrowed libraries. */
static int candidates(weft_plugin_kind kind, const char* net_lib, kind_cand* out, int max) {
  int n = 0;
  if (kind != WEFT_KIND_COLLNET) {
    weft_param_id id = kind == WEFT_KIND_GIN ? WEFT_PARAM_GIN_PLUGIN : WEFT_PARAM_RMA_PLUGIN;
    const char* def = kind == WEFT_KIND_GIN ? "libnccl-gin.so" : "libnccl-rma.so";
    if (!param_is_set(id)) {
      snprintf(out[n].spec, KIND_SPEC_MAX, "%s", def);
      out[n++].is_default = 1;
    } else if (strcasecmp(param_str(id), "none") != 0) {
      char* copy = strdup(param_str(id));
      char* save = NULL;
      for (char* tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
           tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        size_t len = strlen(tok);
        while (len > 0 && (tok[len - 1] == ' ' || tok[len - 1] == '\t')) tok[--len] = '\0';
        if (len == 0) continue;
        if (n >= KIND_MAX_LISTED) {
          WARN("%s/Plugin: %s lists more than %d libraries; ignoring %s and the rest",
               kind_plugin_label(kind), param_info(id)->name, KIND_MAX_LISTED, tok);
          break;
        }
        if (len >= KIND_SPEC_MAX) {
          WARN("%s/Plugin: %s entry longer than %d characters ignored: %.40s...",
               kind_plugin_label(kind), param_info(id)->name, KIND_SPEC_MAX - 1, tok);
          continue;
        }
        snprintf(out[n++].spec, KIND_SPEC_MAX, "%s", tok);
      }
      free(copy);
    }
  }
  if (kind == WEFT_KIND_RMA) {
    pthread_mutex_lock(&last_gin.lock);
    if (last_gin.path[0] && n < max && strlen(last_gin.path) < KIND_SPEC_MAX) {
      snprintf(out[n].spec, KIND_SPEC_MAX, "%s", last_gin.path);
      out[n++].is_borrowed = 1;
    }
    pthread_mutex_unlock(&last_gin.lock);
  }
  if (net_lib && net_lib[0] && n < max && strlen(net_lib) < KIND_SPEC_MAX) {
    snprintf(out[n].spec, KIND_SPEC_MAX, "%s", net_lib);
    out[n++].is_borrowed = 1;
  }
  return n;
}

/* The newest known table in dl. */
static const void* probe(weft_plugin_kind kind, void* dl, int* version, const char** sym) {
  int hi = kind == WEFT_KIND_GIN ? WEFT_GIN_MAX_VERSION
           : kind == WEFT_KIND_RMA ? WEFT_RMA_MAX_VERSION : WEFT_COLLNET_MAX_VERSION;
  int lo = kind == WEFT_KIND_GIN ? WEFT_GIN_MIN_VERSION
           : kind == WEFT_KIND_RMA ? WEFT_RMA_MIN_VERSION : WEFT_COLLNET_MIN_VERSION;
  for (int v = hi; v >= lo; v--) {
    *sym = kind == WEFT_KIND_GIN ? gin_shim_symbol(v)
           : kind == WEFT_KIND_RMA ? rma_shim_symbol(v) : collnet_shim_symbol(v);
    const void* t = dlsym(dl, *sym);
    if (t) {
      *version = v;
      return t;
    }
  }
  if (kind == WEFT_KIND_RMA) { /* an RMA v13 is the GIN v13 table */
    *sym = gin_shim_symbol(13);
    const void* t = dlsym(dl, *sym);
    if (t) {
      *version = 13;
      return t;
    }
  }
  return NULL;
}

static void finalize_ctx(weft_kind_plugin* p);

static void skip_warn(const weft_kind_plugin* p, const char* what) {
  WARN("%s/Plugin: %s%s%s%s: %s, skipping", kind_plugin_label(p->kind), p->path,
       p->name ? " (" : "", p->name ? p->name : "", p->name ? ")" : "", what);
}

/* Adapt, init, devices. 1 when usable (p filled), 0 when skipped (WARNed). */
static int try_table(weft_plugin_kind kind, const void* t, int version, const char* sym,
                     uint64_t comm_id, weft_kind_plugin* p) {
  char why[200], msg[300];
  ncclResult_t r;
  if (kind == WEFT_KIND_GIN) r = gin_shim_adapt(t, version, &p->gin, why, sizeof why);
  else if (kind == WEFT_KIND_RMA) r = rma_shim_adapt(t, version, &p->rma, why, sizeof why);
  else r = collnet_shim_adapt(t, version, &p->collnet, why, sizeof why);
  p->version = version;
  p->name = *(const char* const*)t;
  if (r != ncclSuccess) {
    snprintf(msg, sizeof msg, "%s: %s", sym, why);
    skip_warn(p, msg);
    return 0;
  }
  const char* call = "init";
  if (kind == WEFT_KIND_GIN) r = p->gin.gin.init(&p->ctx, comm_id, weft_log);
  else if (kind == WEFT_KIND_RMA) r = p->rma.init(&p->ctx, comm_id, weft_log);
  else r = collnet_shim_init(&p->collnet, &p->ctx, comm_id, weft_log);
  if (r == ncclSuccess) {
    call = "devices";
    p->ndev = 0;
    ncclResult_t (*devices)(int*) = kind == WEFT_KIND_GIN ? p->gin.gin.devices
                                    : kind == WEFT_KIND_RMA
                                        ? p->rma.devices
                                        : ((const ncclCollNet_v6_t*)t)->devices;
    r = devices(&p->ndev);
    if (r == ncclSuccess && p->ndev <= 0) {
      INFO(NCCL_INIT | NCCL_NET, "%s/Plugin: %s (%s) reports no devices; not used",
           kind_plugin_label(kind), p->path, p->name);
      finalize_ctx(p);
      return 0;
    }
    if (r != ncclSuccess) finalize_ctx(p);
  }
  if (r != ncclSuccess) {
    snprintf(msg, sizeof msg, "%s %s returned %s", sym, call, plugin_result_name(r));
    skip_warn(p, msg);
    return 0;
  }
  return 1;
}

ncclResult_t kind_plugin_open(weft_plugin_kind kind, const char* net_lib, uint64_t comm_id,
                              weft_kind_plugin** out) {
  *out = NULL;
  kind_cand cands[KIND_MAX_LISTED + 2];
  memset(cands, 0, sizeof cands);
  int n = candidates(kind, net_lib, cands, KIND_MAX_LISTED + 2);
  const char* prefix = kind == WEFT_KIND_GIN ? "libnccl-gin" : "libnccl-rma";
  for (int i = 0; i < n; i++) {
    int absent = 0;
    char why[700];
    void* dl = plugin_open_named(cands[i].spec, prefix, &absent, why, sizeof why);
    if (dl == NULL) {
      if (absent && (cands[i].is_default || cands[i].is_borrowed))
        INFO(NCCL_INIT | NCCL_NET, "%s/Plugin: %s: %s", kind_plugin_label(kind), cands[i].spec,
             why);
      else
        WARN("%s/Plugin: %s: %s, skipping", kind_plugin_label(kind), cands[i].spec, why);
      continue;
    }
    weft_kind_plugin* p = calloc(1, sizeof *p);
    if (p == NULL) {
      dlclose(dl);
      return ncclSystemError;
    }
    p->kind = kind;
    p->dl = dl;
    plugin_lib_path(dl, cands[i].spec, p->path, sizeof p->path);
    int version = 0;
    const char* sym = NULL;
    const void* t = probe(kind, dl, &version, &sym);
    if (t == NULL) {
      if (cands[i].is_borrowed)
        INFO(NCCL_INIT | NCCL_NET, "%s/Plugin: %s has no %s table", kind_plugin_label(kind),
             p->path, kind_plugin_label(kind));
      else
        skip_warn(p, kind == WEFT_KIND_GIN ? "exports no ncclGinPlugin_v15..v11 symbol"
                                           : "exports no ncclRmaPlugin_v15..v13 or "
                                             "ncclGinPlugin_v13 symbol");
      dlclose(dl);
      free(p);
      continue;
    }
    if (!try_table(kind, t, version, sym, comm_id, p)) {
      if (p->dl) dlclose(p->dl);
      free(p);
      continue;
    }
    INFO(NCCL_INIT | NCCL_NET, "%s/Plugin: loaded %s (%s, v%d, %d device%s)",
         kind_plugin_label(kind), p->path, p->name, p->version, p->ndev, p->ndev == 1 ? "" : "s");
    if (kind == WEFT_KIND_GIN) {
      pthread_mutex_lock(&last_gin.lock);
      snprintf(last_gin.path, sizeof last_gin.path, "%s", p->path);
      pthread_mutex_unlock(&last_gin.lock);
    }
    *out = p;
    return ncclSuccess;
  }
  INFO(NCCL_INIT | NCCL_NET, "%s/Plugin: none usable", kind_plugin_label(kind));
  return ncclSuccess;
}

/* The context init gave, finalized (a failed open's too). */
static void finalize_ctx(weft_kind_plugin* p) {
  ncclResult_t r = ncclSuccess;
  if (p->kind == WEFT_KIND_GIN && p->ctx) r = p->gin.gin.finalize(p->ctx);
  else if (p->kind == WEFT_KIND_RMA && p->ctx) r = p->rma.finalize(p->ctx);
  else if (p->kind == WEFT_KIND_COLLNET) r = collnet_shim_finalize(&p->collnet, p->ctx);
  if (r != ncclSuccess)
    WARN("%s/Plugin: %s (%s): finalize returned %s", kind_plugin_label(p->kind), p->path,
         p->name ? p->name : "?", plugin_result_name(r));
  p->ctx = NULL;
}

void kind_plugin_close(weft_kind_plugin* p) {
  if (p == NULL) return;
  finalize_ctx(p);
  if (p->dl) dlclose(p->dl);
  free(p);
}

ncclResult_t kind_plugin_reg_window(weft_kind_plugin* p, void* coll, void* data, size_t size,
                                    int type, int win_flags, void** mhandle) {
  if (p == NULL || p->kind == WEFT_KIND_COLLNET) {
    WARN("kind_plugin_reg_window: no GIN or RMA plugin (p %p)", (void*)p);
    return ncclInvalidUsage;
  }
  uint64_t flags = kind_shim_win_mr_flags(win_flags);
  ncclResult_t r;
  if (p->kind == WEFT_KIND_GIN) {
    void* gin_handle = NULL;
    r = p->gin.gin.regMrSym(coll, data, size, type, flags, mhandle, &gin_handle);
  } else {
    r = p->rma.regMrSym(coll, data, size, type, flags, mhandle);
  }
  if (r != ncclSuccess)
    WARN("%s/Plugin: %s (%s): regMrSym(%p, %zu bytes, type %d, mrFlags 0x%llx) returned %s",
         kind_plugin_label(p->kind), p->path, p->name, data, size, type,
         (unsigned long long)flags, plugin_result_name(r));
  return r;
}
