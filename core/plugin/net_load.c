/* The net plugin loader: the registry of candidate plugins (NCCL_NET_PLUGIN's libraries, then
 * the built-in socket), opening a library and probing its ABI version, and choosing a plugin
 * for each communicator (see net.h for the rules). The registry is this file's one guarded
 * global: every access holds reg.lock, including the plugin calls made while choosing
 * (init, devices, getProperties, finalize), so opens and closes are serialised as in NCCL. */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/net.h"
#include "plugin/profiler.h"
#include "plugin/plugin_open.h"
#include "plugin/net_shim.h"
#include "util/log.h"
#include "util/param.h"

#define NET_SPEC_MAX 256 /* longest name one NCCL_NET_PLUGIN entry may have */
#define NET_NAME_MAX 64  /* plugin names kept for matching and messages */
#define NET_DEFAULT_LIBRARY "libnccl-net.so"
#define NET_BUILTIN_PATH "built-in"

typedef struct {
  char spec[NET_SPEC_MAX]; /* as listed in NCCL_NET_PLUGIN, or the default library */
  int is_default;          /* the unset default: absent is not worth a WARN */
  int builtin;             /* the internal socket net: always loaded, never dlclose'd */
  char path[PATH_MAX];     /* the file dlopen found */
  char name[NET_NAME_MAX]; /* the plugin's name; "" until first loaded */
  int version;             /* ABI version in use */
  int skipped;             /* unusable: WARNed once, not tried again */
  void* dl;                /* dlopen handle while loaded */
  int loaded;              /* view is valid */
  weft_net_view view;
  int users; /* open weft_net handles */
  int same_name_warned;
} net_cand;

static struct {
  pthread_mutex_t lock;
  int ready;
  int count; /* externals first, the built-in (if any) last */
  net_cand cand[NET_MAX_EXTERNAL_PLUGINS + 1];
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the registry ---- */

/* Returns 0 when the list is full (the caller stops there). */
static int add_external(const char* spec, int is_default) {
  if (reg.count >= NET_MAX_EXTERNAL_PLUGINS) {
    WARN("NET/Plugin: NCCL_NET_PLUGIN lists more than %d libraries; ignoring %s and the rest",
         NET_MAX_EXTERNAL_PLUGINS, spec);
    return 0;
  }
  if (strlen(spec) >= NET_SPEC_MAX) {
    WARN("NET/Plugin: NCCL_NET_PLUGIN entry longer than %d characters ignored: %.40s...",
         NET_SPEC_MAX - 1, spec);
    return 1;
  }
  net_cand* c = &reg.cand[reg.count++];
  snprintf(c->spec, sizeof c->spec, "%s", spec);
  c->is_default = is_default;
  return 1;
}

static void add_builtin(void) {
  const ncclNet_v11_t* builtin = net_builtin();
  if (builtin == NULL) {
    INFO(NCCL_INIT | NCCL_NET, "NET/Plugin: no built-in net is registered");
    return;
  }
  net_cand* c = &reg.cand[reg.count];
  char why[160];
  if (net_shim_adapt(builtin, 11, &c->view, why, sizeof why) != ncclSuccess) {
    WARN("NET/Plugin: built-in net %s unusable: %s", builtin->name ? builtin->name : "(unnamed)",
         why);
    return;
  }
  reg.count++;
  c->builtin = 1;
  c->loaded = 1;
  c->version = 11;
  snprintf(c->spec, sizeof c->spec, "%s", NET_BUILTIN_PATH);
  snprintf(c->path, sizeof c->path, "%s", NET_BUILTIN_PATH);
  snprintf(c->name, sizeof c->name, "%s", builtin->name);
}

/* NCCL_NET_PLUGIN, read once (until net_loader_reset). */
static void registry_init_locked(void) {
  if (reg.ready) return;
  memset(reg.cand, 0, sizeof reg.cand);
  reg.count = 0;
  if (!param_is_set(WEFT_PARAM_NET_PLUGIN)) {
    add_external(NET_DEFAULT_LIBRARY, 1);
  } else {
    const char* list = param_str(WEFT_PARAM_NET_PLUGIN);
    INFO(NCCL_ENV | NCCL_NET, "NCCL_NET_PLUGIN set to %s", list);
    if (strcasecmp(list, "none") != 0) {
      char* copy = strdup(list);
      char* save = NULL;
      for (char* tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
           tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        size_t n = strlen(tok);
        while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) tok[--n] = '\0';
        if (n > 0 && !add_external(tok, 0)) break;
      }
      free(copy);
    }
  }
  add_builtin();
  reg.ready = 1;
}

/* ---- opening one library ---- */

static int is_lib_so(const char* s) {
  size_t n = strlen(s);
  return strncmp(s, "lib", 3) == 0 && n >= 3 && strcmp(s + n - 3, ".so") == 0;
}

static int not_found(const char* err) {
  return err && strstr(err, "No such file or directory") != NULL;
}

/* dlopen the spec as given, then as libnccl-net-<spec>.so when it is a bare name. On failure
 * WARNs (unless the default library is simply absent) and returns NULL. */
static void* open_library(net_cand* c) {
  char alt[NET_SPEC_MAX + 32] = "";
  char err1[512] = "", err2[512] = "";
  void* dl = dlopen(c->spec, RTLD_NOW | RTLD_LOCAL);
  if (dl) return dl;
  const char* e = dlerror();
  snprintf(err1, sizeof err1, "%s", e ? e : "unknown error");
  /* spec is at most NET_SPEC_MAX bytes, so alt holds the name (the check is for the compiler) */
  if (strchr(c->spec, '/') == NULL && !is_lib_so(c->spec) &&
      snprintf(alt, sizeof alt, "libnccl-net-%s.so", c->spec) < (int)sizeof alt) {
    dl = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
    if (dl) return dl;
    e = dlerror();
    snprintf(err2, sizeof err2, "%s", e ? e : "unknown error");
  }
  int absent = not_found(err1) && (alt[0] == '\0' || not_found(err2));
  if (absent && c->is_default) {
    INFO(NCCL_INIT | NCCL_NET, "NET/Plugin: no %s found; using the built-in nets", c->spec);
  } else if (absent) {
    WARN("NET/Plugin: %s: no such library (tried %s%s%s), skipping", c->spec, c->spec,
         alt[0] ? " and " : "", alt);
  } else {
    /* Found but not loadable: report the error that is not "not found". */
    WARN("NET/Plugin: %s: cannot load: %s, skipping", c->spec,
         !not_found(err1) || alt[0] == '\0' ? err1 : err2);
  }
  return NULL;
}

/* Why a library exports no version we load: name what it does export, if anything. */
static void no_symbol_reason(void* dl, char* why, size_t len) {
  static const int others[] = {13, 14, 5, 4, 3, 2};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    char sym[32];
    snprintf(sym, sizeof sym, "ncclNetPlugin_v%d", others[i]);
    if (dlsym(dl, sym)) {
      snprintf(why, len, "exports only %s (weft loads ncclNetPlugin_v%d..v%d)", sym,
               WEFT_NET_MAX_VERSION, WEFT_NET_MIN_VERSION);
      return;
    }
  }
  snprintf(why, len, "exports no ncclNetPlugin_v%d..v%d symbol", WEFT_NET_MAX_VERSION,
           WEFT_NET_MIN_VERSION);
}

static void mark_skipped(net_cand* c, const char* why) {
  WARN("NET/Plugin: %s%s%s%s: %s, skipping", c->path[0] ? c->path : c->spec,
       c->name[0] ? " (" : "", c->name, c->name[0] ? ")" : "", why);
  c->skipped = 1;
}

/* Load an external candidate: dlopen, newest symbol first, bind (only init must be there: the
 * table is read after init, as stock NCCL does). 0 (skipped) on failure. */
static int cand_load(net_cand* c) {
  void* dl = open_library(c);
  if (dl == NULL) {
    c->skipped = 1;
    return 0;
  }
  struct link_map* lm = NULL;
  if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
    snprintf(c->path, sizeof c->path, "%s", lm->l_name);
  else
    snprintf(c->path, sizeof c->path, "%s", c->spec);

  char why[256];
  const void* raw = NULL;
  int version = 0;
  for (int v = WEFT_NET_MAX_VERSION; v >= WEFT_NET_MIN_VERSION && raw == NULL; v--) {
    raw = dlsym(dl, net_shim_symbol(v));
    if (raw) version = v;
  }
  if (raw == NULL) {
    no_symbol_reason(dl, why, sizeof why);
    goto fail_close;
  }
  char reason[200];
  if (net_shim_bind(raw, version, &c->view, reason, sizeof reason) != ncclSuccess) {
    snprintf(why, sizeof why, "%s: %s", net_shim_symbol(version), reason);
    goto fail_close;
  }
  c->dl = dl;
  c->loaded = 1;
  c->version = version;
  return 1;

fail_close:
  mark_skipped(c, why);
  dlclose(dl);
  return 0;
}

/* A WARN (once per candidate) when c's name is also another candidate's: NCCL_NET cannot tell
 * them apart, and the first one listed wins. */
static void warn_same_name(net_cand* c) {
  if (c->same_name_warned) return;
  for (int i = 0; i < reg.count; i++) {
    const net_cand* o = &reg.cand[i];
    if (o == c || o->name[0] == '\0' || strcasecmp(o->name, c->name) != 0) continue;
    const net_cand* first = o < c ? o : c;
    WARN("NET/Plugin: %s and %s both answer to the name \"%s\"; NCCL_NET=%s picks %s (listed "
         "first)",
         o->path[0] ? o->path : o->spec, c->path, c->name, c->name,
         first->path[0] ? first->path : first->spec);
    c->same_name_warned = 1;
    return;
  }
}

/* An external candidate no communicator holds goes back to the file system. */
static void cand_unload(net_cand* c) {
  if (c->builtin || !c->loaded || c->users > 0) return;
  net_shim_release(&c->view);
  c->loaded = 0;
  dlclose(c->dl);
  c->dl = NULL;
}

/* init, then (first init after a load) the table check, then the name, devices and device 0,
 * for one communicator. Returns 1 with *ctx_out and *ndev_out, 0 when c is unusable (marked
 * skipped, one WARN) or -1 when it is usable but not the one asked for. */
static int cand_open(net_cand* c, const char* want, uint64_t comm_id, int traffic_class,
                     void** ctx_out, int* ndev_out) {
  char why[300];
  ncclNetCommConfig_v12_t config = {.trafficClass = traffic_class};
  void* ctx = NULL;
  ncclResult_t res = c->view.api.init(&ctx, comm_id, &config, weft_log, prof_net_callback);
  if (res != ncclSuccess) {
    snprintf(why, sizeof why, "init failed (%s)", plugin_result_name(res));
    mark_skipped(c, why);
    return 0;
  }
  if (!c->view.complete) {
    char reason[200];
    if (net_shim_complete(&c->view, reason, sizeof reason) != ncclSuccess) {
      snprintf(why, sizeof why, "%s: %s after init", net_shim_symbol(c->version), reason);
      if (c->view.api.finalize) c->view.api.finalize(ctx);
      mark_skipped(c, why);
      return 0;
    }
    snprintf(c->name, sizeof c->name, "%s", c->view.api.name);
    INFO(NCCL_INIT | NCCL_NET, "NET/Plugin: loaded %s (%s, v%d)", c->path, c->name, c->version);
    warn_same_name(c);
  }
  const ncclNet_v12_t* api = &c->view.api;
  if (want && strcasecmp(want, c->name) != 0) {
    api->finalize(ctx);
    return -1;
  }
  int ndev = 0;
  res = api->devices(&ndev);
  if (res != ncclSuccess || ndev <= 0) {
    if (res != ncclSuccess)
      snprintf(why, sizeof why, "devices() failed (%s)", plugin_result_name(res));
    else
      snprintf(why, sizeof why, "no devices (devices() reported %d)", ndev);
    goto fail_finalize;
  }
  ncclNetProperties_v12_t props;
  res = api->getProperties(0, &props);
  if (res != ncclSuccess) {
    snprintf(why, sizeof why, "getProperties(0) failed (%s)", plugin_result_name(res));
    goto fail_finalize;
  }
  if (props.netDeviceType != NCCL_NET_DEVICE_HOST) {
    snprintf(why, sizeof why,
             "device 0 is an offload device (netDeviceType %d); weft drives host-side "
             "connections only",
             (int)props.netDeviceType);
    goto fail_finalize;
  }
  *ctx_out = ctx;
  *ndev_out = ndev;
  return 1;

fail_finalize:
  api->finalize(ctx);
  mark_skipped(c, why);
  return 0;
}

/* The WARN when nothing matched: what was asked and what there is (a library never loaded is
 * shown by its file, its name being unknown). */
static void warn_nothing(const char* want, int active) {
  char avail[2048] = "";
  size_t o = 0;
  for (int i = 0; i < reg.count && o < sizeof avail; i++) {
    const net_cand* c = &reg.cand[i];
    if (c->skipped) continue;
    const char* label = c->name[0] ? c->name : c->spec;
    int unused = active >= 0 && !c->builtin && i != active;
    o += (size_t)snprintf(avail + o, sizeof avail - o, "%s%s%s%s%s", o ? ", " : "", label,
                          unused ? " (unused while " : "", unused ? reg.cand[active].name : "",
                          unused ? " is in use)" : "");
  }
  if (want)
    WARN("NET: NCCL_NET/netName \"%s\" names no usable network; available: %s", want,
         avail[0] ? avail : "none");
  else
    WARN("NET: failed to initialize any net plugin; available: %s", avail[0] ? avail : "none");
}

ncclResult_t net_open_for_comm(const char* net_name, uint64_t comm_id, int traffic_class,
                               weft_net** out) {
  if (out == NULL) return ncclInvalidArgument;
  if (traffic_class == INT_MIN) traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF; /* config undef */
  char want_buf[NET_NAME_MAX * 2];
  const char* want = NULL;
  if (net_name && net_name[0]) {
    want = net_name;
  } else if (param_is_set(WEFT_PARAM_NET)) {
    snprintf(want_buf, sizeof want_buf, "%s", param_str(WEFT_PARAM_NET));
    want = want_buf;
  }
  weft_net* net = calloc(1, sizeof *net);
  if (net == NULL) {
    WARN("NET: out of memory for a communicator's net");
    return ncclSystemError;
  }

  pthread_mutex_lock(&reg.lock);
  registry_init_locked();
  int active = -1;
  for (int i = 0; i < reg.count; i++)
    if (!reg.cand[i].builtin && reg.cand[i].users > 0) active = i;

  for (int i = 0; i < reg.count; i++) {
    net_cand* c = &reg.cand[i];
    if (c->skipped) continue;
    if (!c->builtin && active >= 0 && i != active) continue;
    if (want && c->name[0] && strcasecmp(want, c->name) != 0) continue;
    if (!c->loaded && !cand_load(c)) continue;
    void* ctx = NULL;
    int ndev = 0;
    if (cand_open(c, want, comm_id, traffic_class, &ctx, &ndev) != 1) {
      cand_unload(c);
      continue;
    }
    c->users++;
    *net = (weft_net){.api = &c->view.api,
                      .ctx = ctx,
                      .ndev = ndev,
                      .name = c->name,
                      .path = c->path,
                      .version = c->version,
                      .refs = 1,
                      .cand = i};
    INFO(NCCL_INIT | NCCL_NET, "NET/%s plugin %s (v%d) selected, %d devices", c->name, c->path,
         c->version, ndev);
    pthread_mutex_unlock(&reg.lock);
    *out = net;
    return ncclSuccess;
  }
  warn_nothing(want, active);
  pthread_mutex_unlock(&reg.lock);
  free(net);
  return ncclInvalidUsage;
}

void net_retain(weft_net* net) {
  if (net == NULL) return;
  pthread_mutex_lock(&reg.lock);
  net->refs++;
  pthread_mutex_unlock(&reg.lock);
}

void net_close_for_comm(weft_net* net) {
  if (net == NULL) return;
  pthread_mutex_lock(&reg.lock);
  if (--net->refs > 0) {
    pthread_mutex_unlock(&reg.lock);
    return;
  }
  net_cand* c = &reg.cand[net->cand];
  ncclResult_t res = net->api->finalize(net->ctx);
  if (res != ncclSuccess)
    WARN("NET/%s: finalize failed (%s); the communicator's context may leak", c->name,
         plugin_result_name(res));
  c->users--;
  cand_unload(c);
  pthread_mutex_unlock(&reg.lock);
  free(net);
}

int net_external_library(char* buf, size_t len) {
  int found = 0;
  pthread_mutex_lock(&reg.lock);
  for (int i = 0; i < reg.count && !found; i++) {
    if (reg.cand[i].builtin || reg.cand[i].users == 0) continue;
    if (buf && len) snprintf(buf, len, "%s", reg.cand[i].path);
    found = 1;
  }
  pthread_mutex_unlock(&reg.lock);
  return found;
}

ncclResult_t net_loader_reset(void) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&reg.lock);
  for (int i = 0; i < reg.count; i++)
    if (reg.cand[i].users > 0) res = ncclInvalidUsage;
  if (res == ncclSuccess) {
    for (int i = 0; i < reg.count; i++) {
      net_cand* c = &reg.cand[i];
      if (c->builtin) net_shim_release(&c->view);
      else cand_unload(c);
    }
    reg.count = 0;
    reg.ready = 0;
  } else {
    WARN("NET: loader reset refused: a communicator still holds a net");
  }
  pthread_mutex_unlock(&reg.lock);
  return res;
}
