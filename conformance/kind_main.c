/* The GIN and RMA suites' driver: options, loading the plugin in the runner (after a child has
 * shown that dlopen survives), the exported versions and the one under test, adapting it to the
 * views (kind_shim.h), the gate that skips what cannot run, and the root-cause order of the
 * summary. Test names are the suite's word ("gin_", "rma_") and the table's name. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kind_suite.h"
#include "plugin/net_shim.h"
#include "stage.h"

static const char* suite_word(int suite) {
  return suite == KIND_SUITE_GIN ? "gin" : suite == KIND_SUITE_RMA ? "rma" : "collnet";
}

static void version_range(int suite, int* lo, int* hi) {
  *lo = suite == KIND_SUITE_GIN ? WEFT_GIN_MIN_VERSION
        : suite == KIND_SUITE_RMA ? WEFT_RMA_MIN_VERSION : WEFT_COLLNET_MIN_VERSION;
  *hi = suite == KIND_SUITE_GIN ? WEFT_GIN_MAX_VERSION
        : suite == KIND_SUITE_RMA ? WEFT_RMA_MAX_VERSION : WEFT_COLLNET_MAX_VERSION;
}

static const char* table_symbol(int suite, int v) {
  return suite == KIND_SUITE_GIN ? gin_shim_symbol(v)
         : suite == KIND_SUITE_RMA ? rma_shim_symbol(v) : collnet_shim_symbol(v);
}

static void usage(int suite) {
  fprintf(stderr,
          "usage: weft-conformance %s PLUGIN.so [--abi vN] [--filter GLOB[,GLOB...]] [--json FILE]\n"
          "                           [--timeout S] [--list] [-v]\n"
          "  --abi vN     the table version to test (%s; default: the newest exported)\n"
          "  --filter     run tests whose names match a glob; !GLOB excludes\n"
          "  --json FILE  write a machine-readable report\n"
          "  --timeout S  per-test timeout in seconds (default 60)\n"
          "  --list       print the selected test names and exit\n",
          suite_word(suite), suite == KIND_SUITE_GIN ? "11..15" : suite == KIND_SUITE_RMA ? "13..15" : "6..12");
}

static void load(kind_ctx* c) {
  if ((c->dl = conf_open_plugin(c->path, c->load_error, sizeof c->load_error)) == NULL) return;
  int lo, hi;
  version_range(c->suite, &lo, &hi);
  for (int v = lo; v <= hi; v++) {
    const void* t = dlsym(c->dl, table_symbol(c->suite, v));
    if (t) {
      c->exported |= 1u << v;
      c->raw[v] = t;
    }
  }
  if (c->suite == KIND_SUITE_RMA && !(c->exported & (1u << 13))) { /* NCCL reads a GIN v13 table as RMA v13 */
    const void* t = dlsym(c->dl, gin_shim_symbol(13));
    if (t) {
      c->exported |= 1u << 13;
      c->raw[13] = t;
      c->gin13_as_rma = 1;
    }
  }
  for (int v = WEFT_NET_MAX_VERSION; v >= WEFT_NET_MIN_VERSION && !c->net_raw; v--)
    if ((c->net_raw = dlsym(c->dl, net_shim_symbol(v))) != NULL) c->net_version = v;
  if (c->requested_version) {
    if (c->exported & (1u << c->requested_version)) c->version = c->requested_version;
  } else {
    for (int v = hi; v >= lo && !c->version; v--)
      if (c->exported & (1u << v)) c->version = v;
  }
  if (!c->version) return;
  char reason[200];
  const char* sym = c->gin13_as_rma && c->version == 13 ? gin_shim_symbol(13)
                                                       : table_symbol(c->suite, c->version);
  const void* t = c->raw[c->version];
  ncclResult_t r =
      c->suite == KIND_SUITE_GIN   ? gin_shim_adapt(t, c->version, &c->gin, reason, sizeof reason)
      : c->suite == KIND_SUITE_RMA ? rma_shim_adapt(t, c->version, &c->rma, reason, sizeof reason)
                                   : collnet_shim_adapt(t, c->version, &c->collnet, reason, sizeof reason);
  if (r != ncclSuccess) {
    snprintf(c->adapt_error, sizeof c->adapt_error, "%s: %s", sym, reason);
    return;
  }
  c->data = c->suite == KIND_SUITE_GIN ? (c->gin.has_host_rma ? &c->gin.rma : NULL)
            : c->suite == KIND_SUITE_RMA ? &c->rma : NULL;
}

static conf_result gate(void* ctx, const conf_test* t, char* why, size_t len) {
  kind_ctx* c = ctx;
  const char* name = strchr(t->name, '_') + 1;
  if (strcmp(name, "plugin_loads_with_rtld_now_local") == 0) return CONF_PASS;
  if (c->dl == NULL) {
    snprintf(why, len, "the plugin does not load");
    return CONF_SKIP;
  }
  if (strcmp(name, "plugin_exports_a_supported_version") == 0) return CONF_PASS;
  if (!c->version) {
    snprintf(why, len, "no supported table is exported");
    return CONF_SKIP;
  }
  if (strcmp(name, "table_has_name_and_mandatory_entries") == 0) return CONF_PASS;
  if (c->adapt_error[0]) {
    snprintf(why, len, "the table is incomplete (%s)", c->adapt_error);
    return CONF_SKIP;
  }
  return CONF_PASS;
}

enum { ST_LOAD = 0, ST_ABI = 10, ST_INIT = 20, ST_GROUP = 40, ST_DATA = 50, ST_MEMORY = 65,
       ST_PEER = 80, ST_TEARDOWN = 90 };

static const char* hint(const char* name, const char* reason, int* stage) {
  static const struct {
    const char* part;
    int stage;
    const char* hint;
  } hints[] = {
      {"plugin_loads", ST_LOAD, "the library must dlopen with RTLD_NOW|RTLD_LOCAL"},
      {"plugin_exports", ST_ABI, "export ncclGinPlugin_vN / ncclRmaPlugin_vN (NCCL 2.30 reads "
                                 "GIN v13-v14 and RMA v13-v14, 2.32 GIN v13-v15 and RMA v13-v17)"},
      {"table_has", ST_ABI, "every mandatory entry must be set: NCCL calls them unchecked"},
      {"init_gives", ST_INIT, "NCCL calls init once per communicator and skips a plugin whose "
                              "init fails"},
      {"devices_and", ST_INIT, "NCCL picks the backend from these properties"},
      {"bad_device", ST_INIT, "out-of-range devices must be refused, not crash"},
      {"group_of", ST_GROUP, "connect must form the group from every rank's listen handle"},
      {"context_has", ST_GROUP, "GPU code reaches a GDAKI backend only through the device handle"},
      {"regmr", ST_MEMORY, "collective registration must be repeatable"},
      {"many_contexts", ST_GROUP, "every context index below nContexts must carry puts"},
      {"put_lands", ST_DATA, "a signal must become visible only after the data of its own put"},
      {"strong_signal", ST_DATA, "a strong signal must order every earlier put of its context"},
      {"signal_counts", ST_DATA, "every signal must be applied exactly once, atomically"},
      {"iget", ST_DATA, "iget must copy the remote registration's bytes"},
      {"iflush", ST_DATA, "after iflush completes, earlier puts must be visible at the target"},
      {"bad_arguments", ST_DATA, "a bad rank, range or signal op must be refused, not applied"},
      {"close_with", ST_TEARDOWN, "closing with puts in flight must return, not hang or crash"},
      {"peer_leaving", ST_PEER, "a peer that leaves must surface as an error, not a hang"},
      {"init_and_devices", ST_INIT, "NCCL skips a CollNet whose init fails or has no device"},
      {"reduce_support", ST_INIT, "NCCL asks reduceSupport for every (type, op) before use"},
      {"allreduce", ST_DATA, "every claimed (type, op) must reduce exactly as NCCL would"},
  };
  const char* tail = strchr(name, '_') ? strchr(name, '_') + 1 : name;
  for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
    if (strncmp(tail, hints[i].part, strlen(hints[i].part)) == 0) {
      *stage = hints[i].stage;
      if (reason && strstr(reason, "differ from what was sent") && hints[i].stage > ST_DATA)
        *stage = ST_DATA + 5;
      return hints[i].hint;
    }
  *stage = ST_TEARDOWN;
  return NULL;
}

int kind_suite_main(int suite, int argc, char** argv) {
  static kind_ctx ctx;
  conf_options opt = {.timeout_s = 60, .hint = hint};
  int is_gin = suite == KIND_SUITE_GIN;
  ctx.suite = suite;
  ctx.is_gin = is_gin;
  ctx.wait_s = 15;
  if (argc < 1) {
    usage(suite);
    return 2;
  }
  static char libname[256];
  /* a bare name: libnccl-<gin|rma>-<name>.so; CollNet lives in the net library */
  ctx.path = conf_plugin_path(argv[0], suite == KIND_SUITE_COLLNET ? "net" : suite_word(suite),
                              libname, sizeof libname);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--abi") == 0 && i + 1 < argc) {
      int lo, hi;
      version_range(suite, &lo, &hi);
      if (!(ctx.requested_version = conf_abi_option(argv[++i], lo, hi))) return 2;
    } else if (!conf_common_option(&opt, argc, argv, &i)) {
      usage(suite);
      return 2;
    }
  }
  if (opt.timeout_s <= 0) {
    usage(suite);
    return 2;
  }
  if (ctx.wait_s > opt.timeout_s / 3) ctx.wait_s = opt.timeout_s / 3;
  kc = &ctx;
  conf_stage_init();
  if (!opt.list_only) load(&ctx);

  const struct {
    const conf_test* t;
    int n;
  } parts[] = {{kind_load_tests, kind_load_tests_count},
               {suite == KIND_SUITE_COLLNET ? collnet_tests : kind_tests,
                suite == KIND_SUITE_COLLNET ? collnet_tests_count : kind_tests_count},
               {kind_gin_tests, is_gin ? kind_gin_tests_count : 0}};
  int total = 0;
  for (size_t p = 0; p < 3; p++) total += parts[p].n;
  conf_test* all = calloc((size_t)total, sizeof *all);
  char (*names)[96] = calloc((size_t)total, sizeof *names);
  if (all == NULL || names == NULL) return 1;
  int k = 0;
  for (size_t p = 0; p < 3; p++)
    for (int i = 0; i < parts[p].n; i++, k++) {
      all[k] = parts[p].t[i];
      snprintf(names[k], sizeof names[k], "%s_%s", suite_word(suite), all[k].name);
      all[k].name = names[k];
    }
  char versions[64], json_versions[64];
  conf_version_lists(ctx.exported, 0, WEFT_GIN_MAX_VERSION, versions, sizeof versions,
                     json_versions, sizeof json_versions);
  if (!opt.list_only)
    conf_print_table_line(suite_word(suite), ctx.path, ctx.dl != NULL, ctx.version,
                          ctx.raw[ctx.version], versions,
                          ctx.gin13_as_rma ? " (v13 as ncclGinPlugin_v13)" : NULL,
                          is_gin && ctx.version >= 14 ? " (no host data path: the data tests "
                                                        "skip)" : NULL);
  if (!opt.list_only && ctx.net_raw)
    printf("# the library also exports ncclNetPlugin_v%d: each test inits it first, as NCCL "
           "does before it opens the %s table\n", ctx.net_version,
           suite == KIND_SUITE_GIN ? "GIN" : suite == KIND_SUITE_RMA ? "RMA" : "CollNet");
  char extra[256];
  snprintf(extra, sizeof extra, "\"abi\": %d, \"exported\": [%s]", ctx.version, json_versions);
  int rc = conf_run(suite_word(suite), ctx.path, all, total, &ctx, gate, &opt, extra);
  free(all);
  free(names);
  return rc;
}
