/* weft-policy explain: which cluster a host gets and why, for FILE or, without one, for the file
 * init would read (WEFT_POLICY, else /etc/weft/policy.yaml when it exists). Facts are this host's unless given
 * on the command line (a --nic or --gpu replaces the host's list); nodes and ranks per node are
 * unknown unless given, and a cluster that depends on them is reported as undecided.
 * --env-plugin: what libnccl-env-weft.so would answer getEnv on this host instead: the file it
 * would read when FILE is not given (WEFT_POLICY, else /etc/weft/policy.yaml), the same choice
 * (a cluster that needs the node count or ranks per node does not match), and per setting the
 * environment's value or the policy's. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/param.h"
#include "weft-policy.h"

#define ENV_PLUGIN_DEFAULT_POLICY "/etc/weft/policy.yaml"

typedef struct {
  const char* file;
  int env_plugin;
  int topology_given;
  policy_facts f;
} explain_args;

static int parse_count(const char* opt, const char* s, int* out) {
  char* end = NULL;
  long v = s ? strtol(s, &end, 10) : 0;
  if (s == NULL || *s == '\0' || *end != '\0' || v < 1 || v > 1000000000) {
    fprintf(stderr, "weft-policy explain: %s takes a positive integer\n", opt);
    return 0;
  }
  *out = (int)v;
  return 1;
}

static int parse_args(int argc, char** argv, explain_args* a) {
  int nics_given = 0, gpus_given = 0;
  a->file = NULL;
  policy_facts_local(&a->f);
  for (int i = 0; i < argc; i++) {
    const char* opt = argv[i];
    const char* val = NULL;
    if (!strcmp(opt, "--env-plugin")) {
      a->env_plugin = 1;
      continue;
    }
    if (!strncmp(opt, "--", 2)) {
      const char* eq = strchr(opt, '=');
      static char name[32];
      if (eq) {
        snprintf(name, sizeof name, "%.*s", (int)(eq - opt), opt);
        val = eq + 1;
        opt = name;
      } else if (i + 1 < argc) {
        val = argv[++i];
      }
      if (val == NULL) {
        fprintf(stderr, "weft-policy explain: %s needs a value\n", opt);
        return 0;
      }
    }
    if (!strcmp(opt, "--hostname")) {
      snprintf(a->f.hostname, sizeof a->f.hostname, "%s", val);
    } else if (!strcmp(opt, "--nic")) {
      if (!nics_given++) a->f.nnics = 0;
      policy_facts_add_nic(&a->f, val);
    } else if (!strcmp(opt, "--gpu")) {
      if (!gpus_given++) a->f.ngpus = 0;
      if (a->f.ngpus < POLICY_MAX_GPUS)
        snprintf(a->f.gpus[a->f.ngpus++], sizeof a->f.gpus[0], "%s", val);
    } else if (!strcmp(opt, "--nodes")) {
      if (!parse_count(opt, val, &a->f.nodes_min)) return 0;
      a->f.nodes_max = a->f.nodes_min;
      a->topology_given = 1;
    } else if (!strcmp(opt, "--ranks-per-node")) {
      if (!parse_count(opt, val, &a->f.rpn_min)) return 0;
      a->f.rpn_max = a->f.rpn_min;
      a->topology_given = 1;
    } else if (val != NULL || a->file != NULL) {
      fprintf(stderr, "weft-policy explain: unexpected argument '%s'\n", opt);
      return 0;
    } else {
      a->file = opt;
    }
  }
  if (a->env_plugin && a->topology_given) {
    fprintf(stderr, "weft-policy explain: --env-plugin sees no communicator; --nodes and "
                    "--ranks-per-node do not apply\n");
    return 0;
  }
  if (a->file == NULL && a->env_plugin) {
    /* The plugin's own choice of file. */
    const char* env = getenv("WEFT_POLICY");
    if (env && !strcmp(env, "none")) {
      printf("WEFT_POLICY=none: the env plugin reads no policy and answers from the "
             "environment alone\n");
      exit(0);
    }
    a->file = env && *env ? env : ENV_PLUGIN_DEFAULT_POLICY;
  }
  if (a->file == NULL) {
    /* The file init would read: WEFT_POLICY (through the settings, so an nccl.conf may name
     * it, as at init), else the default path, which may be absent. */
    const char* path = param_str(WEFT_PARAM_POLICY);
    if (!strcmp(path, "none")) {
      printf("WEFT_POLICY=none: init reads no policy file; built-in defaults and the "
             "environment apply\n");
      exit(0);
    }
    if (!param_is_set(WEFT_PARAM_POLICY) && access(path, F_OK) != 0) {
      printf("no FILE given, WEFT_POLICY is unset and %s does not exist: init reads no policy "
             "file; built-in defaults and the environment apply\n", path);
      exit(0);
    }
    printf("(no FILE given: %s, from %s)\n", path,
           param_is_set(WEFT_PARAM_POLICY) ? "WEFT_POLICY" : "the default path");
    a->file = path;
  }
  return 1;
}

static void print_facts(const policy_facts* f, int env_plugin) {
  printf("facts: hostname '%s'; NICs:", f->hostname);
  for (int i = 0; i < f->nnics; i++) printf("%s %s", i ? "," : "", f->nics[i]);
  printf("%s; GPUs:", f->nnics ? "" : " none");
  for (int i = 0; i < f->ngpus; i++) printf("%s %s", i ? "," : "", f->gpus[i]);
  printf("%s\n", f->ngpus ? "" : " none");
  if (env_plugin) {
    printf("       nodes and ranks per node: not known to an env plugin\n");
    return;
  }
  if (f->nodes_min == f->nodes_max) printf("       nodes %d", f->nodes_min);
  else printf("       nodes unknown (--nodes N)");
  if (f->rpn_min == f->rpn_max) printf("; ranks per node %d\n", f->rpn_min);
  else printf("; ranks per node unknown (--ranks-per-node N)\n");
}

/* What the env plugin answers for each item: the environment's value when set, else the
 * policy's. */
static void print_env_plugin_items(const weft_policy* p, int cluster) {
  const policy_item* items;
  int n = policy_items(p, cluster, &items);
  printf("the env plugin logs: cluster '%s', settings %016llx, %d items\n",
         cluster >= 0 || policy_has_defaults(p) ? policy_cluster_name(p, cluster) : "(none)",
         (unsigned long long)policy_settings_hash(p, cluster), n);
  if (n == 0) {
    printf("  (answers from the environment alone)\n");
    return;
  }
  printf("getEnv answers:\n");
  for (int i = 0; i < n; i++) {
    const char* env = getenv(items[i].name);
    if (env)
      printf("  %s=%s    # the environment wins over %s=%s (%s, line %d)\n", items[i].name, env,
             items[i].name, items[i].value, items[i].from, items[i].line);
    else
      printf("  %s=%s    # %s, line %d%s\n", items[i].name, items[i].value, items[i].from,
             items[i].line,
             !strcmp(items[i].from, "plugin_env")
                 ? "; only for readers that ask getEnv (a plugin calling getenv does not see it)"
                 : "");
  }
  printf("every other name: the environment's value, or unset\n");
}

static void print_items(const weft_policy* p, int cluster) {
  const policy_item* items;
  int n = policy_items(p, cluster, &items);
  if (n == 0) {
    printf("  (sets nothing: built-in defaults and the environment apply)\n");
    return;
  }
  for (int i = 0; i < n; i++) {
    printf("  %s=%s    # %s, line %d", items[i].name, items[i].value, items[i].from,
           items[i].line);
    const char* env = getenv(items[i].name);
    if (env) printf("; the environment sets %s=%s and wins", items[i].name, env);
    printf("\n");
  }
  printf("settings hash %016llx (ranks compare it with the cluster name)\n",
         (unsigned long long)policy_settings_hash(p, cluster));
}

int wp_explain(int argc, char** argv) {
  explain_args* a = calloc(1, sizeof *a); /* the flags start cleared */
  policy_errors* e = malloc(sizeof *e);
  int rc = 2;
  weft_policy* p = NULL;
  if (a == NULL || e == NULL) goto done;
  if (!parse_args(argc, argv, a)) goto done;
  rc = 1;
  if (policy_load_file(a->file, &p, e) != 0) {
    wp_print_errors(e);
    if (a->env_plugin)
      printf("the env plugin logs one WARN (%s) and answers from the environment alone\n",
             e->n ? e->msg[0] : "invalid policy file");
    goto done;
  }
  rc = 0;
  int n = policy_cluster_count(p);
  printf("policy %s: %d cluster%s, %s\n", a->file, n, n == 1 ? "" : "s",
         policy_has_defaults(p) ? "defaults" : "no defaults");
  print_facts(&a->f, a->env_plugin);
  policy_choice ch;
  if (a->env_plugin) policy_choose_local(p, &a->f, &ch);
  else policy_choose(p, &a->f, &ch);
  printf("clusters, in order (the first that matches wins):\n");
  for (int i = 0; i < n; i++) {
    char why[512];
    policy_tri r = policy_eval_cluster(p, i, &a->f, why, sizeof why);
    const char* verdict = r == POLICY_NO        ? "no"
                          : r != POLICY_UNKNOWN ? "matches"
                          : a->env_plugin       ? "no (an env plugin sees no communicator)"
                                                : "undecided";
    if (r == POLICY_YES && ch.decided && ch.cluster != i)
      verdict = "would match, but an earlier cluster wins";
    printf("  %d. '%s' (line %d): %s: %s\n", i + 1, policy_cluster_name(p, i),
           policy_cluster_line(p, i), verdict, why);
    const char* d = policy_cluster_description(p, i);
    if (d) printf("     %s\n", d);
  }
  if (a->env_plugin) {
    if (ch.cluster >= 0) printf("result: cluster '%s'\n", policy_cluster_name(p, ch.cluster));
    else
      printf("result: no cluster matched; %s\n",
             policy_has_defaults(p) ? "the defaults apply" : "the file has no defaults");
    print_env_plugin_items(p, ch.cluster);
  } else if (!ch.decided) {
    printf("result: undecided: %s; pass --nodes N and --ranks-per-node N\n", ch.why);
  } else if (ch.cluster >= 0) {
    printf("result: cluster '%s'\n", policy_cluster_name(p, ch.cluster));
    print_items(p, ch.cluster);
  } else {
    printf("result: %s; %s\n", ch.why,
           policy_has_defaults(p) ? "the defaults apply" : "the file has no defaults");
    if (policy_has_defaults(p)) print_items(p, -1);
  }
done:
  policy_free(p);
  free(a);
  free(e);
  return rc;
}
