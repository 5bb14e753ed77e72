/* The env plugin loader: weft reads its settings through an env plugin as NCCL 2.28.7+ does.
 * At the first read of a setting: the conf files are applied into the environment (so a conf
 * file may name the plugin), then NCCL_ENV_PLUGIN (read with getenv: it cannot come from the
 * plugin) picks the library — unset: libnccl-env.so if one is on the loader path; `none`: no
 * plugin; a name or path: as given, then libnccl-env-<name>.so — and ncclEnvPlugin_v2, else
 * _v1, is looked up and initialized with the NCCL version weft speaks. From then on every
 * setting is the plugin's getEnv answer (util/param.c copies it). A plugin that cannot be
 * opened, exports neither table, has a NULL entry or fails init is one WARN (INFO for the
 * optional default library) and the environment answers alone. finalize runs at exit.
 *
 * weft's own env plugin (libnccl-env-weft.so, table name "weft-policy") is recognised and not
 * consulted: weft applies the same policy file itself, with the node-count rules and the
 * cross-rank agreement the plugin cannot have (docs/policy.md). The loaded plugin is this
 * file's one guarded global, written once under pthread_once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl_env.h"
#include "util/log.h"
#include "util/param.h"

#define ENV_DEFAULT_LIBRARY "libnccl-env.so"
#define WEFT_ENV_PLUGIN_NAME "weft-policy"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static struct {
  void* dl;
  int version; /* 2 or 1; 0: none in use */
  const ncclEnv_v2_t* v2;
  const ncclEnv_v1_t* v1;
  char name[64];
  char path[512];
} env;

/* NCCL's search: the name as given; then, for a bare name that is not itself a library file
 * name, libnccl-env-<name>.so. */
static void* open_library(const char* spec, char* tried, size_t len) {
  void* dl = dlopen(spec, RTLD_NOW | RTLD_LOCAL);
  snprintf(tried, len, "%s (%s)", spec, dl ? "ok" : dlerror());
  if (dl) return dl;
  size_t n = strlen(spec);
  int file_name = !strncmp(spec, "lib", 3) && n >= 3 && !strcmp(spec + n - 3, ".so");
  if (strchr(spec, '/') || file_name) return NULL;
  char alt[300];
  snprintf(alt, sizeof alt, "libnccl-env-%s.so", spec);
  dl = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
  size_t used = strlen(tried);
  snprintf(tried + used, len - used, ", %s (%s)", alt, dl ? "ok" : dlerror());
  return dl;
}

static void env_finalize_at_exit(void) {
  if (env.version == 2 && env.v2->finalize) env.v2->finalize();
  else if (env.version == 1 && env.v1->finalize) env.v1->finalize();
}

static const char* get_v2(const char* name) { return env.v2->getEnv(name); }
static const char* get_v1(const char* name) { return env.v1->getEnv(name); }

static void drop(const char* why) {
  WARN("ENV/Plugin: %s: %s; settings come from the environment alone", env.path, why);
  dlclose(env.dl);
  env.dl = NULL;
  env.version = 0;
}

static void env_load(void) {
  param_load_conf_files();
  const char* spec = getenv("NCCL_ENV_PLUGIN");
  if (spec && !strcasecmp(spec, "none")) {
    INFO(NCCL_INIT | NCCL_ENV, "ENV/Plugin: NCCL_ENV_PLUGIN=none, no env plugin");
    return;
  }
  int named = spec && *spec;
  char tried[1200];
  env.dl = open_library(named ? spec : ENV_DEFAULT_LIBRARY, tried, sizeof tried);
  if (env.dl == NULL) {
    if (named)
      WARN("ENV/Plugin: NCCL_ENV_PLUGIN=%s cannot be opened: %s; settings come from the "
           "environment alone", spec, tried);
    else
      INFO(NCCL_INIT | NCCL_ENV, "ENV/Plugin: no %s, settings come from the environment",
           ENV_DEFAULT_LIBRARY);
    return;
  }
  snprintf(env.path, sizeof env.path, "%s", named ? spec : ENV_DEFAULT_LIBRARY);
  env.v2 = dlsym(env.dl, "ncclEnvPlugin_v2");
  env.v1 = env.v2 ? NULL : dlsym(env.dl, "ncclEnvPlugin_v1");
  env.version = env.v2 ? 2 : env.v1 ? 1 : 0;
  if (env.version == 0) {
    drop("exports neither ncclEnvPlugin_v2 nor ncclEnvPlugin_v1");
    return;
  }
  const char* name = env.version == 2 ? env.v2->name : env.v1->name;
  int complete = env.version == 2 ? env.v2->init && env.v2->getEnv && env.v2->finalize
                                  : env.v1->init && env.v1->getEnv && env.v1->finalize;
  if (!complete || name == NULL) {
    char why[96];
    snprintf(why, sizeof why, "ncclEnvPlugin_v%d has a NULL name, init, getEnv or finalize",
             env.version);
    drop(why);
    return;
  }
  snprintf(env.name, sizeof env.name, "%s", name);
  if (!strcmp(env.name, WEFT_ENV_PLUGIN_NAME)) {
    INFO(NCCL_INIT | NCCL_ENV,
         "ENV/Plugin: %s is weft's policy plugin; weft applies WEFT_POLICY itself (with the "
         "node-count rules and the rank agreement), so it is not consulted", env.path);
    dlclose(env.dl);
    env.dl = NULL;
    env.version = 0;
    return;
  }
  ncclResult_t r = env.version == 2
                       ? env.v2->init(WEFT_NCCL_MAJOR, WEFT_NCCL_MINOR, WEFT_NCCL_PATCH, "",
                                      weft_log)
                       : env.v1->init(WEFT_NCCL_MAJOR, WEFT_NCCL_MINOR, WEFT_NCCL_PATCH, "");
  if (r != ncclSuccess) {
    char why[96];
    snprintf(why, sizeof why, "%s init returned %d", env.name, (int)r);
    drop(why);
    return;
  }
  INFO(NCCL_INIT | NCCL_ENV, "ENV/Plugin: using %s (v%d) from %s", env.name, env.version,
       env.path);
  atexit(env_finalize_at_exit);
}

/* The source param.c reads through once the plugin is known. */
static const char* env_get(const char* name) {
  pthread_once(&env_once, env_load);
  if (env.version == 2) return get_v2(name);
  if (env.version == 1) return get_v1(name);
  return getenv(name);
}

__attribute__((constructor)) static void env_register(void) { param_set_env_source(env_get); }
