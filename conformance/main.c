/* weft-conformance: tests any net or tuner plugin against the contracts of the ABI headers.
 *   weft-conformance net PLUGIN.so [options]     (see net_main.c)
 *   weft-conformance tuner PLUGIN.so [options]   (see tuner_tests.c)
 *   weft-conformance profiler PLUGIN.so [options] (see profiler_tests.c)
 *   weft-conformance gin|rma|collnet PLUGIN.so [options]  (see kind_main.c, kind_tests.c,
 *                                                 collnet_tests.c)
 *   weft-conformance versions LIB.so...          (see versions.c: tables exported, and which
 *                                                 one weft and NCCL 2.19-2.30 would load)
 * Exit status: 0 when no test failed, 1 when one did, 2 on a usage error; --help exits 0. */
#include <stdio.h>
#include <string.h>

#include "kind_suite.h"
#include "net_tests.h"
#include "profiler_tests.h"
#include "tuner_tests.h"
#include "versions.h"

#ifndef WEFT_TOOL_VERSION
#define WEFT_TOOL_VERSION "0"
#endif

static void usage(FILE* to) {
  fprintf(to,
          "usage: weft-conformance net PLUGIN.so [--abi vN] [--filter GLOB] [--json FILE]\n"
          "                            [--timeout S] [--call-limit S] [--bench] [--list] [-v]\n"
          "       weft-conformance tuner PLUGIN.so [--filter GLOB] [--json FILE] [--timeout S]\n"
          "                            [--list] [-v]\n"
          "       weft-conformance gin|rma|collnet PLUGIN.so [--abi vN] [--filter GLOB]\n"
          "                            [--json FILE]\n"
          "                            [--timeout S] [--list] [-v]\n"
          "       weft-conformance versions LIB.so...\n"
          "Each test runs in a child process under a timeout; output is one line per test\n"
          "(PASS name | FAIL name: reason | INCONCLUSIVE name: reason | SKIP name: reason),\n"
          "under a FAIL or INCONCLUSIVE the plugin's own log lines of that test, then a count and\n"
          "a summary of what to fix first. Exit status: 0 when no test failed, 1 when one did,\n"
          "2 on a usage error.\n"
          "  -h, --help     this text\n"
          "      --version  print weft-conformance's version and exit\n");
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("weft-conformance (weft) %s\n", WEFT_TOOL_VERSION);
    return 0;
  }
  if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    usage(stdout);
    return 0;
  }
  if (argc >= 3 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0)) {
    usage(stdout);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], NET_RELOAD_CHILD_CMD) == 0)
    return net_reload_child_main(argc - 2, argv + 2);
  if (argc < 3) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "net") == 0) return net_suite_main(argc - 2, argv + 2);
  if (strcmp(argv[1], "tuner") == 0) return tuner_suite_main(argc - 2, argv + 2);
  if (strcmp(argv[1], "profiler") == 0) return profiler_suite_main(argc - 2, argv + 2);
  if (strcmp(argv[1], "gin") == 0) return kind_suite_main(KIND_SUITE_GIN, argc - 2, argv + 2);
  if (strcmp(argv[1], "rma") == 0) return kind_suite_main(KIND_SUITE_RMA, argc - 2, argv + 2);
  if (strcmp(argv[1], "collnet") == 0)
    return kind_suite_main(KIND_SUITE_COLLNET, argc - 2, argv + 2);
  if (strcmp(argv[1], "versions") == 0) return versions_main(argc - 2, argv + 2);
  usage(stderr);
  return 2;
}
