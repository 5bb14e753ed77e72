/* Cluster policy: one YAML file (WEFT_POLICY, else /etc/weft/policy.yaml) that says, per cluster,
 * which net plugin, tuner and settings a communicator uses. The engine (the engine/ folder, a
 * static library of its own that tools/weft-policy links too) reads and validates a file,
 * matches it against this host's facts and applies the chosen block through
 * param_apply_policy, so an explicit environment variable always wins. lifecycle/policy_comm.c hooks
 * it into communicator init and checks that every rank chose the same cluster. docs/policy.md is
 * the user's reference. */
#ifndef WEFT_POLICY_H
#define WEFT_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "nccl.h"

enum {
  POLICY_MAX_ERRORS = 20, /* errors kept per file; the rest are counted */
  POLICY_ERR_LEN = 320,
  POLICY_NAME_MAX = 63,   /* characters of a cluster name */
  POLICY_MAX_NICS = 64,
  POLICY_MAX_GPUS = 16,
};

/* Errors of one load, each "FILE:LINE:COL: text" (line and column start at 1). */
typedef struct {
  int n;
  int dropped; /* errors past POLICY_MAX_ERRORS */
  char msg[POLICY_MAX_ERRORS][POLICY_ERR_LEN];
} policy_errors;

typedef struct weft_policy weft_policy;

/* Read, parse and validate a policy file. Returns 0 and *out, or -1 with errs filled (*out
 * untouched). Bounded: file size, nesting depth, scalar length, entries, alias expansion. */
int policy_load_file(const char* path, weft_policy** out, policy_errors* errs);
/* The same from memory; name stands for the file in messages. */
int policy_load_buffer(const char* name, const char* buf, size_t len, weft_policy** out,
                       policy_errors* errs);
void policy_free(weft_policy* p);
/* Warnings on a loaded file, in the errors' format ("FILE:LINE:COL: warning: …"): what loads
 * but likely does not do what was meant (a nodes/ranks_per_node cluster before one that sets
 * bootstrap settings). w->n is 0 when there are none. */
void policy_lint(const weft_policy* p, policy_errors* w);

const char* policy_path(const weft_policy* p);
int policy_cluster_count(const weft_policy* p);
/* i in [0, count): the cluster's name; -1: "(defaults)". */
const char* policy_cluster_name(const weft_policy* p, int i);
/* Where cluster i starts in the file (line), or 0. */
int policy_cluster_line(const weft_policy* p, int i);
const char* policy_cluster_description(const weft_policy* p, int i);
int policy_has_defaults(const weft_policy* p);

/* What matching looks at. Ranges stand for facts not known yet: nodes and ranks per node are
 * known once the ranks have met; before that they lie in [1, nranks]. */
typedef struct {
  char hostname[256];
  int nnics;
  char nics[POLICY_MAX_NICS][64];
  int ngpus;
  char gpus[POLICY_MAX_GPUS][96];
  int nodes_min, nodes_max;
  int rpn_min, rpn_max;
} policy_facts;

/* This host: gethostname; interface names (getifaddrs) and RDMA device names
 * (/sys/class/infiniband) as NICs; GPU models from /proc/driver/nvidia/gpus. Topology
 * unknown ([1, INT_MAX]). */
void policy_facts_local(policy_facts* f);
/* Append GPU models read from dir/<bus id>/information ("Model:" lines); tests pass a fake dir. */
void policy_facts_read_gpus(policy_facts* f, const char* dir);
void policy_facts_add_nic(policy_facts* f, const char* name);

typedef enum { POLICY_NO = 0, POLICY_YES = 1, POLICY_UNKNOWN = 2 } policy_tri;

/* Cluster i against the facts. why gets, on YES, each condition that held; on NO, the first
 * condition that failed; on UNKNOWN, the condition that needs facts not known yet. */
policy_tri policy_eval_cluster(const weft_policy* p, int i, const policy_facts* f, char* why,
                               size_t len);

/* The env: conditions of the clusters before and at index upto (every cluster when upto is
 * negative or past the end), as "NAME of 'cluster'" joined with ", " into buf (cut to len).
 * Returns how many there are. A choice that depends on them follows each rank's own
 * environment, which the mismatch hint then names. */
int policy_env_conditions(const weft_policy* p, int upto, char* buf, size_t len);

/* First match wins. cluster: the index, or -1 (defaults, or nothing when the file has no
 * defaults). decided is 0 when a cluster before any match depends on facts not known yet; the
 * choice must then wait for them. */
typedef struct {
  int cluster;
  int decided;
  char why[512];
} policy_choice;
void policy_choose(const weft_policy* p, const policy_facts* f, policy_choice* out);
/* The same where the facts will never be completed (the env plugin, which sees one process and
 * no communicator): a cluster that depends on facts not known counts as not matching, and why
 * says so; the result is always decided. */
void policy_choose_local(const weft_policy* p, const policy_facts* f, policy_choice* out);

/* What a choice sets: environment-style NAME=VALUE items, in file order. */
typedef struct {
  const char* name;
  const char* value;
  const char* from; /* "net.plugin", "settings", … */
  int line, col;
} policy_item;
int policy_items(const weft_policy* p, int cluster, const policy_item** items);
/* FNV-1a over the sorted NAME=VALUE items; 0 when there are none. */
uint64_t policy_settings_hash(const weft_policy* p, int cluster);
/* Apply the items through param_apply_policy, one INFO each (and one saying so where the
 * environment wins). Returns the number applied. */
int policy_apply(const weft_policy* p, int cluster);

/* The reference of schema version 1, generated from the schema's key tables and the parameter
 * table (markdown). */
void policy_print_schema(FILE* out);

/* ---- what a communicator resolved (lifecycle/policy_comm.c fills it) ---- */

typedef enum {
  POLICY_STATUS_NONE = 0, /* no policy file: built-in defaults */
  POLICY_STATUS_OK,
  POLICY_STATUS_INVALID
} policy_status;

/* What one rank resolved; kept in struct ncclComm and compared across ranks. */
typedef struct {
  int status;   /* policy_status */
  int decided;  /* chosen before bootstrap (local facts sufficed) */
  int cluster;  /* index, -1 defaults/nothing */
  uint64_t hash;
  char name[POLICY_NAME_MAX + 1]; /* cluster name, "(defaults)" or "(none)" */
  char detail[192];               /* the file, or its first error */
  char env_conds[160];            /* policy_env_conditions of the file ("" when none) */
} weft_policy_outcome;

#endif
