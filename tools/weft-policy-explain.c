/* weft-policy explain: which cluster a host gets and why. Facts are this host's unless given
 * on the command line (a --nic or --gpu replaces the host's list); nodes and ranks per node are
 * unknown unless given, and a cluster that depends on them is reported as undecided. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft-policy.h"

typedef struct {
  const char* file;
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
    } else if (!strcmp(opt, "--ranks-per-node")) {
      if (!parse_count(opt, val, &a->f.rpn_min)) return 0;
      a->f.rpn_max = a->f.rpn_min;
    } else if (val != NULL || a->file != NULL) {
      fprintf(stderr, "weft-policy explain: unexpected argument '%s'\n", opt);
      return 0;
    } else {
      a->file = opt;
    }
  }
  if (a->file == NULL) {
    fprintf(stderr, "weft-policy explain: which FILE?\n");
    return 0;
  }
  return 1;
}

static void print_facts(const policy_facts* f) {
  printf("facts: hostname '%s'; NICs:", f->hostname);
  for (int i = 0; i < f->nnics; i++) printf("%s %s", i ? "," : "", f->nics[i]);
  printf("%s; GPUs:", f->nnics ? "" : " none");
  for (int i = 0; i < f->ngpus; i++) printf("%s %s", i ? "," : "", f->gpus[i]);
  printf("%s\n", f->ngpus ? "" : " none");
  if (f->nodes_min == f->nodes_max) printf("       nodes %d", f->nodes_min);
  else printf("       nodes unknown (--nodes N)");
  if (f->rpn_min == f->rpn_max) printf("; ranks per node %d\n", f->rpn_min);
  else printf("; ranks per node unknown (--ranks-per-node N)\n");
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
  explain_args* a = malloc(sizeof *a);
  policy_errors* e = malloc(sizeof *e);
  int rc = 2;
  weft_policy* p = NULL;
  if (a == NULL || e == NULL) goto done;
  if (!parse_args(argc, argv, a)) goto done;
  rc = 1;
  if (policy_load_file(a->file, &p, e) != 0) {
    wp_print_errors(e);
    goto done;
  }
  rc = 0;
  int n = policy_cluster_count(p);
  printf("policy %s: %d cluster%s, %s\n", a->file, n, n == 1 ? "" : "s",
         policy_has_defaults(p) ? "defaults" : "no defaults");
  print_facts(&a->f);
  policy_choice ch;
  policy_choose(p, &a->f, &ch);
  printf("clusters, in order (the first that matches wins):\n");
  for (int i = 0; i < n; i++) {
    char why[512];
    policy_tri r = policy_eval_cluster(p, i, &a->f, why, sizeof why);
    const char* verdict = r == POLICY_NO ? "no" : r == POLICY_UNKNOWN ? "undecided" : "matches";
    if (r == POLICY_YES && ch.decided && ch.cluster != i)
      verdict = "would match, but an earlier cluster wins";
    printf("  %d. '%s' (line %d): %s: %s\n", i + 1, policy_cluster_name(p, i),
           policy_cluster_line(p, i), verdict, why);
    const char* d = policy_cluster_description(p, i);
    if (d) printf("     %s\n", d);
  }
  if (!ch.decided) {
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
