/* The policy in communicator init. Order (see docs/policy.md, "When the policy applies"):
 *
 * 1. policy_comm_begin, first thing in comm_init_run, before bootstrap reads any setting: read
 *    the file, match with this host's facts (nodes and ranks per node lie in [1, nranks]).
 *    When that decides the cluster — no cluster before the match depends on the node count or
 *    ranks per node — apply it now, so bootstrap settings (NCCL_SOCKET_IFNAME,
 *    WEFT_INIT_TIMEOUT_MS, …) take effect for this very init.
 * 2. policy_comm_agree, right after the rank-info allgather: nodes (distinct host names) and
 *    ranks per node (most ranks on one host) are known; a choice that waited for them is made
 *    and applied now, still before any net plugin is opened. Then every rank's (status,
 *    cluster, settings hash) is allgathered and compared.
 *
 * A rank whose file is invalid still joins bootstrap, so that every rank fails promptly with
 * the same message instead of waiting for it until the init timeout. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "policy/policy.h"
#include "util/check.h"
#include "util/param.h"

/* What each rank sends for the comparison. Fixed size; strings NUL-terminated on receipt. */
typedef struct {
  int32_t status;
  int32_t cluster;
  uint64_t hash;
  char name[POLICY_NAME_MAX + 1];
  char detail[192];
} policy_wire;

static void set_name(weft_policy_outcome* o, const char* name) {
  snprintf(o->name, sizeof o->name, "%s", name);
}

static void mark_invalid(weft_policy_outcome* o, int rank, const policy_errors* e) {
  for (int i = 0; i < e->n; i++) WARN("rank %d: policy: %s", rank, e->msg[i]);
  if (e->dropped) WARN("rank %d: policy: … and %d more errors", rank, e->dropped);
  o->status = POLICY_STATUS_INVALID;
  o->decided = 1;
  o->cluster = -1;
  o->hash = 0;
  set_name(o, "(invalid)");
  snprintf(o->detail, sizeof o->detail, "%.191s", e->n ? e->msg[0] : "invalid policy file");
}

/* Load the file WEFT_POLICY names (or the default path). NULL and status NONE when there is
 * none to read; NULL and status INVALID after WARNing its errors. */
static weft_policy* load(const struct ncclComm* comm, weft_policy_outcome* o) {
  const char* path = param_str(WEFT_PARAM_POLICY);
  o->cluster = -1;
  if (!strcmp(path, "none")) {
    o->status = POLICY_STATUS_NONE;
    o->decided = 1;
    set_name(o, "(none)");
    snprintf(o->detail, sizeof o->detail, "WEFT_POLICY=none");
    return NULL;
  }
  /* The default path may be absent; a path the user named must exist. */
  if (!param_is_set(WEFT_PARAM_POLICY) && access(path, F_OK) != 0 && errno == ENOENT) {
    o->status = POLICY_STATUS_NONE;
    o->decided = 1;
    set_name(o, "(none)");
    snprintf(o->detail, sizeof o->detail, "no %.180s", path);
    return NULL;
  }
  weft_policy* p = NULL;
  policy_errors* e = malloc(sizeof *e);
  if (e == NULL) {
    WARN("rank %d: policy: out of memory reading %s", comm->rank, path);
    o->status = POLICY_STATUS_INVALID;
    o->decided = 1;
    set_name(o, "(invalid)");
    snprintf(o->detail, sizeof o->detail, "%.170s: out of memory", path);
    return NULL;
  }
  if (policy_load_file(path, &p, e) != 0) {
    mark_invalid(o, comm->rank, e);
    p = NULL;
  }
  free(e);
  return p;
}

/* Choose with f and, when decided, apply and record. */
static void choose_and_apply(const weft_policy* p, const policy_facts* f,
                             weft_policy_outcome* o) {
  policy_choice ch;
  policy_choose(p, f, &ch);
  if (!ch.decided) {
    INFO(NCCL_INIT, "policy %s: choice waits for the rank exchange: %s", policy_path(p), ch.why);
    return;
  }
  o->status = POLICY_STATUS_OK;
  o->decided = 1;
  o->cluster = ch.cluster;
  policy_env_conditions(p, -1, o->env_conds, sizeof o->env_conds);
  o->hash = policy_settings_hash(p, ch.cluster);
  snprintf(o->detail, sizeof o->detail, "%.191s", policy_path(p));
  if (ch.cluster >= 0) {
    set_name(o, policy_cluster_name(p, ch.cluster));
    INFO(NCCL_INIT, "policy %s: cluster '%s' (line %d) matched: %s", policy_path(p), o->name,
         policy_cluster_line(p, ch.cluster), ch.why);
  } else {
    set_name(o, "(defaults)");
    INFO(NCCL_INIT, "policy %s: %s; %s", policy_path(p), ch.why,
         policy_has_defaults(p) ? "using its defaults" : "the file has no defaults");
  }
  policy_apply(p, ch.cluster);
}

void policy_comm_begin(struct ncclComm* comm) {
  weft_policy_outcome* o = &comm->policy;
  memset(o, 0, sizeof *o);
  weft_policy* p = load(comm, o);
  if (p == NULL) {
    if (o->status == POLICY_STATUS_NONE)
      INFO(NCCL_INIT, "policy: none (%s); built-in defaults", o->detail);
    return;
  }
  o->status = POLICY_STATUS_OK;
  policy_facts f;
  policy_facts_local(&f);
  f.nodes_max = f.rpn_max = comm->nranks;
  choose_and_apply(p, &f, o);
  policy_free(p);
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

/* Nodes: distinct host hashes; ranks per node: the most ranks on one host. */
static int count_topology(const struct ncclComm* comm, int* nodes, int* rpn) {
  uint64_t* h = malloc((size_t)comm->nranks * sizeof *h);
  if (h == NULL) return -1;
  for (int r = 0; r < comm->nranks; r++) h[r] = comm->peers[r].host_hash;
  qsort(h, (size_t)comm->nranks, sizeof *h, cmp_u64);
  *nodes = 0;
  *rpn = 0;
  for (int r = 0, run = 0; r < comm->nranks; r++) {
    run = (r > 0 && h[r] == h[r - 1]) ? run + 1 : 1;
    if (run == 1) (*nodes)++;
    if (run > *rpn) *rpn = run;
  }
  free(h);
  return 0;
}

static void finish_deferred(struct ncclComm* comm) {
  weft_policy_outcome* o = &comm->policy;
  weft_policy* p = load(comm, o);
  if (p == NULL) return; /* the file vanished or broke since begin: recorded in o */
  policy_facts f;
  policy_facts_local(&f);
  if (count_topology(comm, &f.nodes_min, &f.rpn_min) != 0) {
    WARN("rank %d: policy: out of memory counting nodes", comm->rank);
    o->status = POLICY_STATUS_INVALID;
    set_name(o, "(invalid)");
    snprintf(o->detail, sizeof o->detail, "out of memory");
    policy_free(p);
    return;
  }
  f.nodes_max = f.nodes_min;
  f.rpn_max = f.rpn_min;
  choose_and_apply(p, &f, o);
  policy_free(p);
}

static int same_choice(const policy_wire* a, const policy_wire* b) {
  return a->status == b->status && a->hash == b->hash && !strcmp(a->name, b->name);
}

static void put(char* buf, size_t len, size_t* o, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char* buf, size_t len, size_t* o, const char* fmt, ...) {
  if (*o >= len - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *o, len - *o, fmt, ap);
  va_end(ap);
  if (n > 0) *o += (size_t)n;
  if (*o > len - 1) *o = len - 1;
}

/* "ranks 0-2,5 (hostA, hostB)" for the ranks whose choice equals all[first]'s. */
static void describe_group(const struct ncclComm* comm, const policy_wire* all, int first,
                           char* buf, size_t len, size_t* o) {
  int n = 0, shown = 0;
  for (int r = first; r < comm->nranks; r++) n += same_choice(&all[r], &all[first]);
  put(buf, len, o, "%s ", n == 1 ? "rank" : "ranks");
  for (int r = first; r < comm->nranks && shown < 6; r++) {
    if (!same_choice(&all[r], &all[first])) continue;
    int end = r;
    while (end + 1 < comm->nranks && same_choice(&all[end + 1], &all[first])) end++;
    put(buf, len, o, "%s%d", shown ? "," : "", r);
    if (end > r) put(buf, len, o, "-%d", end);
    shown++;
    r = end;
  }
  if (shown == 6) put(buf, len, o, ",…");
  /* Their hosts: the first three distinct names. */
  int hosts[3], nh = 0, more = 0;
  for (int r = first; r < comm->nranks; r++) {
    if (!same_choice(&all[r], &all[first])) continue;
    int dup = 0;
    for (int k = 0; k < nh && !dup; k++)
      dup = comm->peers[hosts[k]].host_hash == comm->peers[r].host_hash;
    if (dup) continue;
    if (nh < 3) hosts[nh++] = r;
    else more = 1;
  }
  put(buf, len, o, " (");
  for (int k = 0; k < nh; k++)
    put(buf, len, o, "%s%s", k ? ", " : "", comm->peers[hosts[k]].host);
  put(buf, len, o, "%s)", more ? ", …" : "");
  const policy_wire* w = &all[first];
  if (w->status == POLICY_STATUS_NONE)
    put(buf, len, o, " %s no policy file (%s)", n == 1 ? "has" : "have", w->detail);
  else if (w->cluster < 0)
    put(buf, len, o, " chose the defaults of %s (settings %016llx)", w->detail,
        (unsigned long long)w->hash);
  else
    put(buf, len, o, " chose cluster '%s' of %s (settings %016llx)", w->name, w->detail,
        (unsigned long long)w->hash);
}

static ncclResult_t compare(const struct ncclComm* comm, policy_wire* all) {
  for (int r = 0; r < comm->nranks; r++) {
    all[r].name[sizeof all[r].name - 1] = '\0';
    all[r].detail[sizeof all[r].detail - 1] = '\0';
  }
  for (int r = 0; r < comm->nranks; r++) {
    if (all[r].status != POLICY_STATUS_INVALID) continue;
    WARN("rank %d: policy: rank %d (%s) cannot use its policy file: %s", comm->rank, r,
         comm->peers[r].host, all[r].detail);
    return ncclInvalidUsage;
  }
  int groups = 0;
  char msg[900];
  size_t o = 0;
  for (int r = 0; r < comm->nranks; r++) {
    int seen = 0;
    for (int q = 0; q < r && !seen; q++) seen = same_choice(&all[q], &all[r]);
    if (seen) continue;
    if (groups == 4) {
      put(msg, sizeof msg, &o, "; and other choices");
      break;
    }
    if (groups) put(msg, sizeof msg, &o, "; ");
    describe_group(comm, all, r, msg, sizeof msg, &o);
    groups++;
  }
  if (groups > 1) {
    /* The hint: ranks of one host that chose differently can only differ by environment,
     * which the file's env: conditions read; else a host's facts (or both) decide. */
    int one_host_split = 0;
    for (int r = 0; r < comm->nranks && !one_host_split; r++)
      for (int q = 0; q < r && !one_host_split; q++)
        one_host_split = comm->peers[q].host_hash == comm->peers[r].host_hash &&
                         !same_choice(&all[q], &all[r]);
    const char* env = comm->policy.env_conds;
    char hint[400];
    if (*env && one_host_split)
      snprintf(hint, sizeof hint, "ranks of one host chose differently: the file's env: "
               "conditions (%.160s) read each rank's own environment; weft-policy explain "
               "FILE, run in a rank's environment, shows its choice", env);
    else if (*env)
      snprintf(hint, sizeof hint, "weft-policy explain FILE --hostname H, run in a rank's "
               "environment (the file's env: conditions: %.160s), shows why a host chose its "
               "cluster", env);
    else
      snprintf(hint, sizeof hint,
               "weft-policy explain FILE --hostname H shows why a host chose its cluster");
    WARN("rank %d: policy mismatch: every rank must resolve the same cluster, but %s (%s)",
         comm->rank, msg, hint);
    return ncclInvalidUsage;
  }
  INFO(NCCL_INIT, "policy: all %d ranks agree: %s", comm->nranks, comm->policy.name);
  return ncclSuccess;
}

ncclResult_t policy_comm_agree(struct ncclComm* comm) {
  weft_policy_outcome* o = &comm->policy;
  if (o->status == POLICY_STATUS_OK && !o->decided) finish_deferred(comm);
  policy_wire* all = calloc((size_t)comm->nranks, sizeof *all);
  if (all == NULL) {
    WARN("rank %d: policy: out of memory for %d ranks' choices", comm->rank, comm->nranks);
    return ncclSystemError;
  }
  policy_wire* me = &all[comm->rank];
  me->status = o->status;
  me->cluster = o->cluster;
  me->hash = o->hash;
  snprintf(me->name, sizeof me->name, "%s", o->name);
  snprintf(me->detail, sizeof me->detail, "%s", o->detail);
  ncclResult_t res = bootstrap_allgather(comm->bootstrap, all, sizeof *all);
  if (res == ncclSuccess) res = compare(comm, all);
  free(all);
  return res;
}
