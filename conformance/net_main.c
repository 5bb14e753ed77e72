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

#include "cli.h"
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
  if ((c->dl = conf_open_plugin(c->path, c->load_error, sizeof c->load_error)) == NULL) return;
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

/* What the probe child sends back. */
typedef struct {
  int result;
  int ndev;
  char name[80];
  char why[512];
  char said[200]; /* with 0 devices: the plugin's log line that says why, if any */
} probe_record;

/* Open the version under test in a throw-away child as the data-path tests do (table, init, the
 * table after init, devices), so the gate knows whether there is anything to test. The runner
 * itself never inits the plugin: its tests fork from it. */
static void probe_plugin(net_ctx* c) {
  c->probed = 1;
  c->probe_result = CONF_FAIL;
  snprintf(c->probe_why, sizeof c->probe_why, "the probe process did not report");
  int fds[2];
  if (pipe(fds) != 0) return;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(2, 1);
    alarm(120);
    probe_record rec;
    memset(&rec, 0, sizeof rec);
    nt_plugin p;
    rec.result = nt_init_table(&p, c->version);
    if (rec.result == CONF_PASS) {
      const char* name = *(const char* const*)c->raw[c->version];
      snprintf(rec.name, sizeof rec.name, "%s", name ? name : "(null)");
      if (p.api->devices(&rec.ndev) != ncclSuccess) rec.ndev = -1;
      /* Its reason, as it logged it: a line naming devices, else its last line. */
      if (rec.ndev == 0 && !conf_log_find("device", rec.said, sizeof rec.said))
        conf_log_find(NULL, rec.said, sizeof rec.said);
      nt_close(&p);
    }
    snprintf(rec.why, sizeof rec.why, "%s", conf_reason());
    ssize_t w = write(fds[1], &rec, sizeof rec);
    (void)w;
    _exit(0);
  }
  close(fds[1]);
  probe_record rec;
  size_t got = 0;
  while (pid > 0 && got < sizeof rec) {
    ssize_t n = read(fds[0], (char*)&rec + got, sizeof rec - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fds[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  if (got < sizeof rec) return;
  rec.name[sizeof rec.name - 1] = rec.why[sizeof rec.why - 1] = '\0';
  rec.said[sizeof rec.said - 1] = '\0';
  c->probe_result = (conf_result)rec.result;
  c->probe_ndev = rec.ndev;
  snprintf(c->probe_said, sizeof c->probe_said, "%s", rec.said);
  snprintf(c->probe_name, sizeof c->probe_name, "%s", rec.name);
  snprintf(c->probe_why, sizeof c->probe_why, "%s", rec.why);
}

/* Tests that need nothing of the plugin but its file, its symbols or its init. */
static int needs_no_device(const char* name) {
  return strcmp(name, "net_plugin_loads_with_rtld_now_local") == 0 ||
         strcmp(name, "net_plugin_exports_a_supported_version") == 0 ||
         strstr(name, "_table_has_name_and_mandatory_entries") != NULL ||
         strcmp(name, "net_init_with_logger_succeeds") == 0 ||
         strcmp(name, "net_init_again_after_finalize_and_reload_works") == 0;
}

/* Tests that only look at symbols run always; init tests need the chosen version's table; the
 * rest need a device (0 devices on this host: skipped, said once before the tests). */
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
  if (needs_no_device(t->name)) return CONF_PASS;
  if (!c->probed) probe_plugin(c);
  if (c->probe_result != CONF_PASS) {
    snprintf(why, len, "the plugin does not get through init (%s; see net_init_with_logger_"
             "succeeds and net_v%d_table_has_name_and_mandatory_entries)", c->probe_why,
             c->version);
    return CONF_SKIP;
  }
  if (c->probe_ndev == 0) {
    snprintf(why, len, "0 devices on this host");
    return CONF_SKIP;
  }
  return CONF_PASS;
}

/* For the summary: what a failure means, and the stage of the plugin's life it belongs to (the
 * summary lists lower stages first). By test family (the longest matching prefix), unless the
 * reason shows a symptom of an earlier stage: a close, leak or thread test whose message never
 * completed or arrived wrong failed by the data path, which is then its cause; such failures
 * come after the data tests' own, which show the loss most directly. */
enum { ST_LOAD = 0, ST_ABI = 10, ST_INIT = 20, ST_DEVICES = 30, ST_CONNECT = 40, ST_DATA = 50,
       ST_DATA_SYMPTOM = 55, ST_REQUESTS = 60, ST_MEMORY = 65, ST_THREADS = 70, ST_PEER = 80,
       ST_TEARDOWN = 90 };

static const char* data_cause =
    "a message was lost, cut or corrupted on the way (the reason shows it): every message must "
    "arrive intact and complete, in post order";

/* The reason shows a message that never completed or arrived wrong. */
static int data_symptom(const char* reason) {
  static const char* const signs[] = {"not complete after", "differ from what was sent",
                                      "bytes arrived", "arrived where", "out of order",
                                      "bytes differ"};
  for (size_t i = 0; i < sizeof signs / sizeof signs[0]; i++)
    if (strstr(reason, signs[i])) return 1;
  return 0;
}

static const char* net_hint(const char* name, const char* reason, int* stage) {
  static const struct {
    const char* prefix;
    int stage;
    const char* hint;
  } hints[] = {
      {"net_plugin_loads", ST_LOAD, "the library must dlopen with RTLD_NOW|RTLD_LOCAL "
                                    "(undefined symbols, constructors); nothing else can run "
                                    "until it does"},
      {"net_plugin_exports", ST_ABI, "export ncclNetPlugin_v6..v11 (stock NCCL 2.28 reads the same)"},
      {"net_v", ST_ABI, "every mandatory entry must be set once init has returned"},
      {"net_init", ST_INIT, "init must succeed with a logger and give independent contexts; NCCL "
                            "skips a plugin whose init fails"},
      {"net_devices", ST_DEVICES, "devices() must be stable"},
      {"net_properties", ST_DEVICES, "NCCL sizes rings, trees and buffers from these properties"},
      {"net_bad_device", ST_DEVICES, "out-of-range device indexes must be refused, not crash"},
      {"net_accept_before", ST_CONNECT, "a blocking accept deadlocks stock NCCL's proxy (weft "
                                        "survives it, which does not make it right): return a "
                                        "NULL comm and let the caller poll"},
      {"net_listen", ST_CONNECT, "listen must return promptly with a handle of at most 128 bytes"},
      {"net_connect", ST_CONNECT, "connect/accept must complete by polling and must not block"},
      {"net_connect_close_cycles", ST_TEARDOWN, "closing comms must release their sockets and "
                                                "file descriptors"},
      {"net_concurrent", ST_CONNECT, "connections must pair up by handle"},
      {"net_close", ST_TEARDOWN, "closing comms must work after their requests completed"},
      {"net_message", ST_DATA, "data must arrive intact at every size"},
      {"net_recv_larger", ST_DATA, "test() must report the size that was sent"},
      {"net_messages_keep", ST_DATA, "messages on a comm must complete in post order"},
      {"net_isend_does_not", ST_DATA, "isend must not block while the receiver is idle"},
      {"net_full_request", ST_REQUESTS, "the plugin must hold NCCL_NET_MAX_REQUESTS requests in "
                                        "flight"},
      {"net_grouped", ST_REQUESTS, "grouped receives must fill their slots by tag"},
      {"net_regmr", ST_MEMORY, "memory registration"},
      {"net_iflush", ST_MEMORY, "iflush"},
      {"net_two_threads", ST_THREADS, "separate comms must be usable from separate threads"},
      {"net_sender_exit", ST_PEER, "a dead peer must surface as an error of test(), not a hang"},
      {"net_receiver_exit", ST_PEER, "a dead peer must surface as an error of test(), not a hang"},
  };
  int best = -1;
  size_t best_len = 0;
  for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++) {
    size_t n = strlen(hints[i].prefix);
    if (n > best_len && strncmp(name, hints[i].prefix, n) == 0) {
      best = (int)i;
      best_len = n;
    }
  }
  *stage = best >= 0 ? hints[best].stage : ST_TEARDOWN;
  if (reason && data_symptom(reason)) {
    if (*stage > ST_DATA) *stage = ST_DATA_SYMPTOM;
    return data_cause;
  }
  return best >= 0 ? hints[best].hint : NULL;
}

int net_suite_main(int argc, char** argv) {
  static net_ctx ctx;
  conf_options opt = {.timeout_s = 60, .hint = net_hint};
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
      i++;
      ctx.requested_version = conf_abi_option(next, WEFT_NET_MIN_VERSION, WEFT_NET_MAX_VERSION);
      if (!ctx.requested_version) return 2;
    } else if (strcmp(a, "--call-limit") == 0 && next) {
      ctx.call_limit_s = atof(next);
      i++;
    } else if (strcmp(a, "--bench") == 0) {
      ctx.bench = 1;
    } else if (!conf_common_option(&opt, argc, argv, &i)) {
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

  char versions[64], json_versions[64];
  conf_version_lists(ctx.exported, WEFT_NET_MIN_VERSION, WEFT_NET_MAX_VERSION, versions,
                     sizeof versions, json_versions, sizeof json_versions);
  if (!opt.list_only) {
    conf_print_table_line("net", ctx.path, ctx.dl != NULL, ctx.version, ctx.raw[ctx.version],
                          versions, NULL, NULL);
    if (ctx.dl && ctx.version) {
      probe_plugin(&ctx);
      const char* before = *(const char* const*)ctx.raw[ctx.version];
      if (ctx.probe_result == CONF_PASS && (before == NULL || strcmp(before, ctx.probe_name)))
        printf("# after init the table is named \"%s\"\n", ctx.probe_name);
      if (ctx.probe_result == CONF_PASS && ctx.probe_ndev == 0) {
        int need = 0;
        for (int i = 0; i < total; i++)
          if (conf_filter_match(opt.filter, all[i].name) && !needs_no_device(all[i].name)) need++;
        printf("# 0 devices: the plugin loads and inits but finds no device on this host (normal "
               "on a machine without its NIC); the %d test(s) that need a device are skipped\n",
               need);
        if (ctx.probe_said[0])
          printf("# the plugin says: %s\n", ctx.probe_said);
        else
          printf("# the plugin logged no reason (through the logger init got)\n");
      }
    }
  }
  char extra[256];
  snprintf(extra, sizeof extra, "\"abi\": %d, \"exported\": [%s]", ctx.version, json_versions);
  int rc = conf_run("net", ctx.path, all, total, &ctx, net_gate, &opt, extra);
  free(all);
  return rc;
}
