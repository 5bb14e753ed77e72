/* libnccl-env-weft.so: weft's cluster policy as an env plugin, so that stock NCCL 2.28.7+ (and
 * weft) read the policy's settings through getEnv. At init it reads the policy file
 * (WEFT_POLICY, else /etc/weft/policy.yaml; WEFT_POLICY=none: off) with weft's policy engine,
 * compiled into this library, matches this host's local facts (hostname, NICs, GPU models from
 * /proc, the environment; never a CUDA context or a plugin), and keeps the chosen block's
 * NAME=VALUE items. getEnv answers the process environment first (which, under NCCL, already
 * holds the nccl.conf files), then those items, then nothing. A rule that needs the node count
 * or ranks per node cannot be evaluated without a communicator and does not match. A policy
 * that cannot be read or validated is one WARN and the environment alone: a job never fails
 * because of a policy file.
 *
 * Returned strings: the environment's own storage, or the loaded policy's, which is immutable
 * from init to finalize; so a pointer stays valid at least until the next getEnv of the same
 * name or finalize, as the ABI asks. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_env.h"
#include "policy/policy.h"
#include "util/log.h"

#define EXPORT __attribute__((visibility("default")))
#define PLUGIN_NAME "weft-policy"
#define DEFAULT_POLICY "/etc/weft/policy.yaml"

/* The loaded policy and its items, under lock (getEnv takes it too: finalize may run while
 * another thread asks, and getEnv is no hot path, NCCL caching what it read). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static weft_policy* loaded;
static const policy_item* items;
static int nitems;
static ncclDebugLogger_t nccl_logger; /* v2: the library's; v1: NULL, weft's own log */

static void plog(ncclDebugLogLevel level, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void plog(ncclDebugLogLevel level, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  unsigned long subsys = NCCL_INIT | NCCL_ENV;
  ncclDebugLogger_t logger = __atomic_load_n(&nccl_logger, __ATOMIC_ACQUIRE);
  if (logger) logger(level, subsys, __FILE__, __LINE__, "ENV/Plugin " PLUGIN_NAME ": %s", msg);
  else weft_log(level, subsys, __FILE__, __LINE__, "ENV/Plugin " PLUGIN_NAME ": %s", msg);
}

/* The file to read, or NULL with *why set when there is none (not an error). */
static const char* policy_file(const char** why) {
  const char* path = getenv("WEFT_POLICY");
  if (path && !strcmp(path, "none")) {
    *why = "WEFT_POLICY=none";
    return NULL;
  }
  if (path && *path) return path;
  if (access(DEFAULT_POLICY, F_OK) != 0 && errno == ENOENT) {
    *why = "no " DEFAULT_POLICY;
    return NULL;
  }
  return DEFAULT_POLICY;
}

/* One line per item: what it sets, or that the environment wins. */
static void log_items(const weft_policy* p, int cluster) {
  const char* name = policy_cluster_name(p, cluster);
  for (int i = 0; i < nitems; i++) {
    const policy_item* it = &items[i];
    const char* env = getenv(it->name);
    if (env)
      plog(NCCL_LOG_INFO, "%s=%s set in the environment wins over '%s' %s=%s (%s:%d)",
           it->name, env, name, it->name, it->value, policy_path(p), it->line);
    else
      plog(NCCL_LOG_INFO, "%s=%s (%s of '%s', %s:%d)", it->name, it->value, it->from, name,
           policy_path(p), it->line);
  }
}

/* Read and match the policy; on success publish its items. Caller holds lock. */
static void load_policy(void) {
  const char* why = NULL;
  const char* path = policy_file(&why);
  if (path == NULL) {
    plog(NCCL_LOG_INFO, "no policy (%s); answering from the environment", why);
    return;
  }
  policy_errors* errs = malloc(sizeof *errs);
  if (errs == NULL) {
    plog(NCCL_LOG_WARN, "policy %s: out of memory; answering from the environment alone", path);
    return;
  }
  weft_policy* p = NULL;
  if (policy_load_file(path, &p, errs) != 0) {
    /* One line: the first error, and how to see the rest. */
    int more = errs->n - 1 + errs->dropped;
    char rest[160] = "";
    if (more > 0)
      snprintf(rest, sizeof rest, " (and %d more; weft-policy check %s lists them)", more, path);
    plog(NCCL_LOG_WARN, "policy ignored: %s%s; answering from the environment alone",
         errs->n ? errs->msg[0] : "invalid policy file", rest);
    free(errs);
    return;
  }
  free(errs);
  policy_facts* f = malloc(sizeof *f);
  if (f == NULL) {
    plog(NCCL_LOG_WARN, "policy %s: out of memory; answering from the environment alone", path);
    policy_free(p);
    return;
  }
  policy_facts_local(f);
  policy_choice ch;
  policy_choose_local(p, f, &ch);
  free(f);
  const char* cname = policy_cluster_name(p, ch.cluster);
  unsigned long long hash = (unsigned long long)policy_settings_hash(p, ch.cluster);
  nitems = policy_items(p, ch.cluster, &items);
  /* The one line to compare across ranks: no check can run between processes here. */
  if (ch.cluster >= 0)
    plog(NCCL_LOG_INFO, "policy %s: cluster '%s' (line %d), settings %016llx, %d items: %s",
         policy_path(p), cname, policy_cluster_line(p, ch.cluster), hash, nitems, ch.why);
  else
    plog(NCCL_LOG_INFO, "policy %s: cluster '%s', settings %016llx, %d items: %s; %s",
         policy_path(p), policy_has_defaults(p) ? cname : "(none)", hash, nitems, ch.why,
         policy_has_defaults(p) ? "using its defaults" : "the file has no defaults");
  log_items(p, ch.cluster);
  loaded = p;
}

static ncclResult_t env_init_v2(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix,
                                ncclDebugLogger_t logger) {
  pthread_mutex_lock(&lock);
  __atomic_store_n(&nccl_logger, logger, __ATOMIC_RELEASE);
  if (loaded == NULL) {
    plog(NCCL_LOG_INFO, "init by %u.%u.%u%s", major, minor, patch, suffix ? suffix : "");
    load_policy();
  }
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

static ncclResult_t env_init_v1(uint8_t major, uint8_t minor, uint8_t patch,
                                const char* suffix) {
  return env_init_v2(major, minor, patch, suffix, NULL);
}

static ncclResult_t env_finalize(void) {
  pthread_mutex_lock(&lock);
  policy_free(loaded);
  loaded = NULL;
  items = NULL;
  nitems = 0;
  __atomic_store_n(&nccl_logger, NULL, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

/* The environment, then the policy's items (first of a name wins, as the engine rejects a name
 * set twice in one block), then nothing. */
static const char* env_get(const char* name) {
  if (name == NULL) return NULL;
  const char* v = getenv(name);
  if (v) return v;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nitems && v == NULL; i++)
    if (!strcmp(items[i].name, name)) v = items[i].value;
  pthread_mutex_unlock(&lock);
  return v;
}

EXPORT const ncclEnv_v2_t ncclEnvPlugin_v2 = {PLUGIN_NAME, env_init_v2, env_finalize, env_get};
EXPORT const ncclEnv_v1_t ncclEnvPlugin_v1 = {PLUGIN_NAME, env_init_v1, env_finalize, env_get};
