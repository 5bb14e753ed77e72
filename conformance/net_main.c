/* The net suite's driver: options, loading the plugin in the runner (after a child has shown
 * that dlopen survives), finding the exported versions, picking the one under test, and the gate
 * that skips tests needing a usable plugin when there is none. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net_suite.h"
#include "net_tests.h"

static void usage(void) {
  fprintf(stderr,
          "usage: weft-conformance net PLUGIN.so [--abi vN] [--filter GLOB[,GLOB…]] [--json FILE]\n"
          "                           [--timeout S] [--call-limit S] [--bench] [--list] [-v]\n"
          "  --abi vN       version of the plugin's table the data-path tests use (6..12;\n"
          "                 default: the newest it exports)\n"
          "  --filter       run tests whose names match a glob; !GLOB excludes\n"
          "  --json FILE    write a machine-readable report\n"
          "  --timeout S    per-test timeout in seconds (default 60; big transfers get a multiple)\n"
          "  --call-limit S a single plugin call taking longer fails the test (default 1)\n"
          "  --bench        measure bandwidth and latency instead of testing\n"
          "  --list         print the selected test names and exit\n");
}

static void load_plugin(net_ctx* c) {
  if (!conf_probe_dlopen(c->path, c->load_error, sizeof c->load_error)) return;
  c->dl = dlopen(c->path, RTLD_NOW | RTLD_LOCAL);
  if (!c->dl) {
    snprintf(c->load_error, sizeof c->load_error, "%s", dlerror());
    return;
  }
  for (int v = 0; v <= 99; v++) {
    char sym[32];
    snprintf(sym, sizeof sym, "ncclNetPlugin_v%d", v);
    void* p = dlsym(c->dl, sym);
    if (!p) continue;
    if (v >= WEFT_NET_MIN_VERSION && v <= WEFT_NET_MAX_VERSION) {
      c->exported |= 1u << v;
      c->raw[v] = p;
    } else {
      size_t used = strlen(c->other_symbols);
      snprintf(c->other_symbols + used, sizeof c->other_symbols - used, "%s%s", used ? ", " : "",
               sym);
    }
  }
  if (c->requested_version) {
    if (c->exported & (1u << c->requested_version)) c->version = c->requested_version;
  } else {
    for (int v = WEFT_NET_MAX_VERSION; v >= WEFT_NET_MIN_VERSION; v--)
      if (c->exported & (1u << v)) {
        c->version = v;
        break;
      }
  }
}

/* Tests that only look at symbols run always; the rest need the chosen version's table. */
static conf_result net_gate(void* ctx, const conf_test* t, char* why, size_t len) {
  net_ctx* c = ctx;
  if (strcmp(t->name, "net_plugin_loads_with_rtld_now_local") == 0) return CONF_PASS;
  if (!c->dl) {
    snprintf(why, len, "the plugin could not be loaded (%s)", c->load_error);
    return CONF_SKIP;
  }
  if (strcmp(t->name, "net_plugin_exports_a_supported_version") == 0 ||
      strstr(t->name, "_table_has_name_and_mandatory_entries"))
    return CONF_PASS;
  if (!c->version) {
    snprintf(why, len, "no usable ncclNetPlugin version (see net_plugin_exports_a_supported_version)");
    return CONF_SKIP;
  }
  weft_net_view view;
  char reason[256];
  if (net_shim_adapt(c->raw[c->version], c->version, &view, reason, sizeof reason) != ncclSuccess) {
    snprintf(why, len, "ncclNetPlugin_v%d is unusable: %s (see net_v%d_table_has_name_and_"
             "mandatory_entries)", c->version, reason, c->version);
    return CONF_SKIP;
  }
  net_shim_release(&view);
  return CONF_PASS;
}

int net_suite_main(int argc, char** argv) {
  static net_ctx ctx;
  conf_options opt = {.timeout_s = 60};
  ctx.call_limit_s = 1.0;
  ctx.wait_s = 10.0;
  if (argc < 1) {
    usage();
    return 2;
  }
  /* A bare name means libnccl-net-<name>.so on the loader path, as NCCL_NET_PLUGIN does. */
  static char libname[256];
  ctx.path = conf_plugin_path(argv[0], "net", libname, sizeof libname);
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--abi") == 0 && next) {
      const char* v = next[0] == 'v' ? next + 1 : next;
      ctx.requested_version = atoi(v);
      if (ctx.requested_version < WEFT_NET_MIN_VERSION || ctx.requested_version > WEFT_NET_MAX_VERSION) {
        fprintf(stderr, "weft-conformance: --abi %s: versions v%d..v%d are supported\n", next,
                WEFT_NET_MIN_VERSION, WEFT_NET_MAX_VERSION);
        return 2;
      }
      i++;
    } else if (strcmp(a, "--filter") == 0 && next) {
      opt.filter = next;
      i++;
    } else if (strcmp(a, "--json") == 0 && next) {
      opt.json_path = next;
      i++;
    } else if (strcmp(a, "--timeout") == 0 && next) {
      opt.timeout_s = atof(next);
      i++;
    } else if (strcmp(a, "--call-limit") == 0 && next) {
      ctx.call_limit_s = atof(next);
      i++;
    } else if (strcmp(a, "--bench") == 0) {
      ctx.bench = 1;
    } else if (strcmp(a, "--list") == 0) {
      opt.list_only = 1;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      opt.verbose = 1;
    } else {
      usage();
      return 2;
    }
  }
  if (opt.timeout_s <= 0 || ctx.call_limit_s <= 0) {
    usage();
    return 2;
  }
  /* A request's wait bound stays below the test's timeout. */
  if (ctx.wait_s > opt.timeout_s / 3) ctx.wait_s = opt.timeout_s / 3;
  nt_ctx = &ctx;
  conf_stage_init();
  if (!opt.list_only) load_plugin(&ctx);
  if (ctx.bench) {
    if (!ctx.dl) {
      fprintf(stderr, "weft-conformance: cannot load %s: %s\n", ctx.path, ctx.load_error);
      return 1;
    }
    if (!ctx.version) {
      fprintf(stderr, "weft-conformance: %s exports no usable ncclNetPlugin_v6..v12\n", ctx.path);
      return 1;
    }
    conf_verbose = opt.verbose;
    return net_bench_run();
  }

  static const struct {
    const conf_test* t;
    const int* n;
  } groups[] = {{net_tests_abi, &net_tests_abi_count},
                {net_tests_conn, &net_tests_conn_count},
                {net_tests_data, &net_tests_data_count},
                {net_tests_mr, &net_tests_mr_count},
                {net_tests_cuda, &net_tests_cuda_count},
                {net_tests_stress, &net_tests_stress_count}};
  int total = 0;
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) total += *groups[g].n;
  conf_test* all = calloc((size_t)total, sizeof *all);
  if (!all) return 1;
  int k = 0;
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (int i = 0; i < *groups[g].n; i++) all[k++] = groups[g].t[i];

  char versions[64] = "", json_versions[64] = "";
  for (int v = WEFT_NET_MIN_VERSION; v <= WEFT_NET_MAX_VERSION; v++) {
    if (!(ctx.exported & (1u << v))) continue;
    size_t a = strlen(versions), b = strlen(json_versions);
    snprintf(versions + a, sizeof versions - a, "%sv%d", a ? " " : "", v);
    snprintf(json_versions + b, sizeof json_versions - b, "%s%d", b ? ", " : "", v);
  }
  if (!opt.list_only) {
    printf("# weft-conformance net %s: ", ctx.path);
    if (!ctx.dl)
      printf("not loadable\n");
    else if (!ctx.version)
      printf("no usable version\n");
    else
      printf("\"%s\", exports %s, testing v%d\n", *(const char* const*)ctx.raw[ctx.version]
             ? *(const char* const*)ctx.raw[ctx.version] : "(null)", versions, ctx.version);
  }
  char extra[256];
  snprintf(extra, sizeof extra, "\"abi\": %d, \"exported\": [%s]", ctx.version, json_versions);
  int rc = conf_run("net", ctx.path, all, total, &ctx, net_gate, &opt, extra);
  free(all);
  return rc;
}
