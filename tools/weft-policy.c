/* weft-policy: the cluster admin's view of a policy file.
 *   weft-policy check FILE…      exit 0 when every file is valid (warnings, on stderr, do not
 *                            change that); else one error per line, exit 1
 *   weft-policy explain [FILE] [--hostname H] [--nic N]… [--gpu MODEL]… [--nodes N]
 *                            [--ranks-per-node N]
 *                            which cluster matches here (or with the facts given) and why, the
 *                            settings it applies, and each other cluster's first failed condition;
 *                            without FILE, the file init would read (WEFT_POLICY, else
 *                            /etc/weft/policy.yaml)
 *   weft-policy explain --env-plugin [FILE] [--hostname H] [--nic N]… [--gpu MODEL]…
 *                            what libnccl-env-weft.so would answer getEnv here
 *   weft-policy schema           the reference of schema version 1 (markdown)
 *   weft-policy --version        weft's version
 * Exit status 2 is a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "weft-policy.h"

#ifndef WEFT_TOOL_VERSION
#define WEFT_TOOL_VERSION "0"
#endif

static int usage(FILE* out, int rc) {
  fprintf(out,
          "usage: weft-policy check FILE...\n"
          "       weft-policy explain [FILE] [--hostname H] [--nic NAME]... [--gpu MODEL]...\n"
          "                               [--nodes N] [--ranks-per-node N]\n"
          "       weft-policy explain --env-plugin [FILE] [--hostname H] [--nic NAME]...\n"
          "                               [--gpu MODEL]...\n"
          "       weft-policy schema\n"
          "       weft-policy --version\n"
          "Commands:\n"
          "  check FILE...      exit 0 when every policy file is valid; else one error per\n"
          "                     line (file:line: reason), exit 1\n"
          "  explain FILE       which cluster of FILE matches this host (or the facts given:\n"
          "                     --hostname, --nic, --gpu, --nodes, --ranks-per-node) and why,\n"
          "                     the settings it applies, and each other cluster's first\n"
          "                     failed condition\n"
          "  explain --env-plugin [FILE]\n"
          "                     what libnccl-env-weft.so would answer getEnv here\n"
          "  schema             the reference of policy schema version 1 (markdown)\n"
          "  -h, --help         this text\n"
          "      --version      print weft-policy's version and exit\n"
          "Exit status: 0 success, 1 when check finds an invalid file, 2 a usage error.\n");
  return rc;
}

void wp_print_errors(const policy_errors* e) {
  for (int i = 0; i < e->n; i++) fprintf(stderr, "%s\n", e->msg[i]);
  if (e->dropped) fprintf(stderr, "(%d more errors not shown)\n", e->dropped);
}

static int cmd_check(int argc, char** argv) {
  if (argc < 1) return usage(stderr, 2);
  int bad = 0;
  policy_errors* e = malloc(sizeof *e);
  if (e == NULL) return 1;
  for (int i = 0; i < argc; i++) {
    weft_policy* p = NULL;
    if (policy_load_file(argv[i], &p, e) != 0) {
      wp_print_errors(e);
      bad = 1;
      continue;
    }
    policy_lint(p, e);
    wp_print_errors(e);
    printf("%s: ok (%d cluster%s%s", argv[i], policy_cluster_count(p),
           policy_cluster_count(p) == 1 ? "" : "s", policy_has_defaults(p) ? ", defaults" : "");
    if (e->n) printf("; %d warning%s", e->n + e->dropped, e->n + e->dropped == 1 ? "" : "s");
    printf(")\n");
    policy_free(p);
  }
  free(e);
  return bad;
}

int main(int argc, char** argv) {
  if (argc < 2) return usage(stderr, 2);
  const char* cmd = argv[1];
  if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
  if (!strcmp(cmd, "explain")) return wp_explain(argc - 2, argv + 2);
  if (!strcmp(cmd, "schema")) {
    if (argc != 2) return usage(stderr, 2);
    policy_print_schema(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("weft-policy (weft) %s\n", WEFT_TOOL_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help"))
    return usage(stdout, 0);
  fprintf(stderr, "weft-policy: unknown command '%s'\n", cmd);
  return usage(stderr, 2);
}
