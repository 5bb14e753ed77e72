/* Warnings on a valid file (weft-policy check prints them; the file still loads): orders that
 * work, but not as the writer likely meant. One rule so far, from docs/policy.md "When the
 * policy applies": a cluster with a nodes or ranks_per_node condition placed before a cluster
 * (or defaults) that sets a bootstrap setting. On a communicator of more than one rank the
 * earlier cluster cannot be decided before the ranks meet, so the choice waits for the rank
 * exchange, and the later cluster's bootstrap settings apply only from the next communicator. */
#include <string.h>

#include "policy_internal.h"

/* The settings bootstrap reads (params.def, section bootstrap/). */
static int is_bootstrap_setting(const char* name) {
  static const char* const names[] = {"NCCL_COMM_ID",         "WEFT_COMM_SECRET",
                                      "NCCL_SOCKET_IFNAME",   "NCCL_SOCKET_FAMILY",
                                      "WEFT_INIT_TIMEOUT_MS", "WEFT_BOOTSTRAP_TIMEOUT_MS"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(name, names[i])) return 1;
  return 0;
}

static const char* topology_condition(const pl_cluster* cl) {
  return cl->nodes.set ? "nodes" : cl->rpn.set ? "ranks_per_node" : NULL;
}

/* The warning for the uses of cluster j (-1: defaults), if any. */
static void lint_use(const weft_policy* p, int j, policy_errors* w) {
  const pl_use* u = j >= 0 ? &p->clusters[j].use : &p->defaults;
  const policy_item* boot = NULL;
  for (int k = 0; k < u->nitems && boot == NULL; k++)
    if (is_bootstrap_setting(u->items[k].name)) boot = &u->items[k];
  if (boot == NULL) return;
  int before = j >= 0 ? j : p->nclusters;
  for (int i = 0; i < before; i++) {
    const char* cond = topology_condition(&p->clusters[i]);
    if (cond == NULL) continue;
    const char* name = j >= 0 ? p->clusters[j].name : "(defaults)";
    pl_error(w, p->path, boot->line, boot->col,
             "warning: '%s' sets %s, a bootstrap setting, but cluster '%s' (line %d) before it "
             "has a %s condition: on a communicator of more than one rank the choice then waits "
             "for the rank exchange and %s applies only from the next communicator (list '%s' "
             "after '%s')",
             name, boot->name, p->clusters[i].name, p->clusters[i].line, cond, boot->name,
             p->clusters[i].name, name);
    return;
  }
}

void policy_lint(const weft_policy* p, policy_errors* w) {
  memset(w, 0, sizeof *w);
  for (int j = 0; j < p->nclusters; j++) lint_use(p, j, w);
  if (p->has_defaults) lint_use(p, -1, w);
}
