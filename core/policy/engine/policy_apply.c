/* Applying a choice: every item goes through param_apply_policy, which sets it into the
 * environment (so plugins reading getenv see it too) unless the environment, a conf file or the
 * env plugin set the name, which wins (util/param.h has the order). Settings are process-wide; a process whose communicators resolve to
 * different clusters gets a WARN, since a later cluster does not unset what an earlier one set. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_internal.h"
#include "util/log.h"
#include "util/param.h"

static pthread_mutex_t applied_lock = PTHREAD_MUTEX_INITIALIZER;
static int applied_any;
static char applied_name[POLICY_NAME_MAX + 1];
static uint64_t applied_hash;

static void note_process_wide(const weft_policy* p, int cluster) {
  const char* name = policy_cluster_name(p, cluster);
  uint64_t hash = policy_settings_hash(p, cluster);
  pthread_mutex_lock(&applied_lock);
  if (applied_any && (strcmp(applied_name, name) || applied_hash != hash))
    WARN("policy %s: this process applied cluster '%s' for an earlier communicator and now "
         "'%s'; settings are process-wide, so names only '%s' set keep their values",
         p->path, applied_name, name, applied_name);
  applied_any = 1;
  snprintf(applied_name, sizeof applied_name, "%s", name);
  applied_hash = hash;
  pthread_mutex_unlock(&applied_lock);
}

int policy_apply(const weft_policy* p, int cluster) {
  const policy_item* items;
  int n = policy_items(p, cluster, &items);
  if (n == 0) return 0;
  note_process_wide(p, cluster);
  const char* name = policy_cluster_name(p, cluster);
  int applied = 0;
  for (int i = 0; i < n; i++) {
    const policy_item* it = &items[i];
    if (param_apply_policy(it->name, it->value)) {
      applied++;
      INFO(NCCL_ENV, "policy: %s=%s (%s of '%s', %s:%d)", it->name, it->value, it->from, name,
           p->path, it->line);
    } else {
      const char* v = param_value(it->name);
      weft_param_source s = param_source_of(it->name);
      const char* where = s == WEFT_SRC_ENV_PLUGIN ? "answered by the env plugin"
                          : s == WEFT_SRC_CONF_ETC ? "set in /etc/nccl.conf"
                          : s == WEFT_SRC_CONF_USER ? "set in the user's nccl.conf"
                                                    : "set in the environment";
      INFO(NCCL_ENV, "policy: %s=%s %s wins over '%s' %s=%s (%s:%d)", it->name, v ? v : "",
           where, name, it->name, it->value, p->path, it->line);
    }
  }
  return applied;
}
