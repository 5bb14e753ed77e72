/* weft's GPU data path, checked through the public NCCL API and the CUDA runtime only:
 * collectives and point-to-point on random data against a host reference (suite coll), CUDA
 * graph capture and replay (suite graph), ncclMemAlloc buffers and buffer/window registration
 * (suite mem), a net plugin failure under running kernels (suite netfail, with GdrSim). The
 * configuration (algorithm, protocol, transport) comes from the environment: one ctest entry
 * per configuration (tests/gpu/gpu.cmake).
 *
 *   gpu_coll (--procs N | --gpus N [--init all|group]) [--share]
 *            [--suite coll|graph|mem|netfail] [--colls std|p2p|extra|all|AllReduce,…] [--big]
 *            [--extra K] [--window|--register malloc|memalloc] [--default-seed S]
 *            [--timeout S]
 * --share: the ranks share the visible GPUs (rank % ndev), so one GPU runs 2..8 ranks.
 * --window (suites coll and graph): each case's send and receive buffers come from cudaMalloc
 * (malloc) or ncclMemAlloc (memalloc) and are registered whole as symmetric windows
 * (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC; grouped when one process drives several
 * ranks) before the call and deregistered after it completed (graph: after the graphs are
 * destroyed), so weft may run them zero copy; the checks are the same. A gate first: one small
 * AllReduce in windows ("not available yet" skips the run).
 * --register: the same, with ncclCommRegister instead (local, not grouped; each buffer's offset
 * in its registration differs by rank) and ncclCommDeregister.
 * Every suite also requires bit-identical outputs across ranks where the collective gives every
 * rank the same result (gpu_same.h).
 *
 * Environment:
 *   WEFT_TEST_SEED=S     seed of the sample and of every input (printed at start)
 *   WEFT_TEST_FULL=1     the full matrix of --colls instead of the sample (all sizes, up to 64 MiB)
 *   WEFT_GPU_CASE=C[,C]  only these cases (names as in "rerun:" lines; from the full matrix)
 *   WEFT_GPU_FILTER=a,b  only cases with fields a and b (e.g. AllReduce,bfloat16,inplace)
 *   WEFT_GPU_LIST=1      print the selected cases and exit (needs no GPU)
 *   WEFT_GPU_VERBOSE=1   one line per case
 *   WEFT_GPU_WAIT_S, WEFT_GPU_WATCHDOG_S   bounds on a stream wait (120) and a case (150)
 *   WEFT_GPU_NETFAIL_S   suite netfail: bound on each phase (error, abort, stream) per rank (20)
 *   WEFT_GDRSIM_FAIL_SEND / _RECV   suite netfail: the failure GdrSim injects (one is required)
 * Exit: 0 passed; 1 failed; 77 skipped: no usable GPU, fewer GPUs than ranks, or weft answers
 * "not available yet" (the device data path; AlltoAll/Gather/Scatter; ncclMemAlloc,
 * registration, capture); suite netfail also in the fake-CUDA self-test build. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gpu_case.h"
#include "gpu_run.h"
#include "gpu_suites.h"
#include "gpu_world.h"
#include "testutil.h"

static void usage(void) {
  fprintf(stderr, "usage: gpu_coll (--procs N | --gpus N [--init all|group]) [--share] "
                  "[--suite coll|graph|mem|netfail] [--colls std|p2p|extra|all|AllReduce,…] "
                  "[--big] [--extra K] [--window|--register malloc|memalloc] [--default-seed S] "
                  "[--timeout S]\n");
  exit(2);
}

typedef struct {
  gpu_case_list cases;
  int verbose;
  int window;       /* GPU_REG_*: --window (every case's buffers in windows), --register */
  gpu_mem_kind mem; /* their allocation */
} coll_opts;

/* The collective suite on one world: a gate (a small AllReduce: "not available yet" skips the
 * whole run), then every selected case. */
static int coll_body(gpu_world* w, void* arg) {
  coll_opts* o = arg;
  const int lead = w->loc[0].rank == 0;
  int rc = gpu_run_gate(w);
  if (rc == GPU_PASS && o->window) rc = gpu_run_window_gate(w, o->mem, o->window);
  if (rc != GPU_PASS) return rc;
  int failed = 0, passed = 0, na_kinds = 0, na_cases = 0;
  double t0 = gpu_now_s();
  for (int i = 0; i < o->cases.n; i++) {
    const gpu_case* c = &o->cases.v[i];
    if (na_kinds >> c->kind & 1) {
      na_cases++;
      continue;
    }
    double t1 = gpu_now_s();
    rc = gpu_run_case_win(w, c, w->seed, o->mem, o->window);
    char name[GPU_CASE_STR];
    gpu_case_name(c, name);
    if (rc == GPU_SKIP && gpu_kind_optional(c->kind)) {
      na_kinds |= 1u << c->kind;
      na_cases++;
      if (lead)
        printf("nccl%s is not available yet: its cases are skipped (%s)\n",
               gpu_kind_name[c->kind], ncclGetLastError(w->loc[0].comm));
      continue;
    }
    if (rc == GPU_SKIP) {
      fprintf(stderr, "FAIL rank %d: %s: weft answered \"not available yet\" (%s)\n",
              w->loc[0].rank, name, ncclGetLastError(w->loc[0].comm));
      gpu_print_rerun(stderr, w->seed, name);
      rc = GPU_FAIL;
    }
    if (rc == GPU_FAIL && ++failed >= 10) {
      fprintf(stderr, "rank %d: 10 failed cases: stopping\n", w->loc[0].rank);
      break;
    }
    passed += rc == GPU_PASS;
    if (o->verbose && lead)
      printf("  [%d/%d] %s: %.1f ms%s\n", i + 1, o->cases.n, name, (gpu_now_s() - t1) * 1e3,
             rc == GPU_PASS ? "" : " FAILED");
  }
  if (lead || failed)
    printf("rank %d: %d cases passed, %d failed, %d not available yet (%.1f s)\n",
           w->loc[0].rank, passed, failed, na_cases, gpu_now_s() - t0);
  return failed ? GPU_FAIL : na_cases ? GPU_SKIP : GPU_PASS;
}

static uint64_t parse_u64(const char* s) {
  char* end = NULL;
  uint64_t v = strtoull(s, &end, 0);
  if (!end || *end) usage();
  return v;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  gpu_set_cmdline(argc, argv);
  setvbuf(stdout, NULL, _IOLBF, 0);
  int procs = 0, gpus = 0, init_group = 0, big = 0, extra = 40, timeout = 280;
  const char* suite = "coll";
  const char* window = NULL; /* --window or --register: the memory */
  int reg = GPU_REG_NONE;
  unsigned kinds = gpu_parse_kinds("std");
  uint64_t default_seed = 0x5eed9b0c;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--big")) {
      big = 1;
      continue;
    }
    if (!strcmp(a, "--share")) { /* ranks share the visible GPUs (rank % ndev) */
      gpu_set_share(1);
      continue;
    }
    if (!v) usage();
    i++;
    if (!strcmp(a, "--procs")) procs = atoi(v);
    else if (!strcmp(a, "--gpus")) gpus = atoi(v);
    else if (!strcmp(a, "--init")) {
      if (strcmp(v, "all") && strcmp(v, "group")) usage();
      init_group = !strcmp(v, "group");
    } else if (!strcmp(a, "--suite")) suite = v;
    else if (!strcmp(a, "--colls")) {
      if (!(kinds = gpu_parse_kinds(v))) usage();
    } else if (!strcmp(a, "--extra")) extra = atoi(v);
    else if (!strcmp(a, "--default-seed")) default_seed = parse_u64(v);
    else if (!strcmp(a, "--timeout")) timeout = atoi(v);
    else if (!strcmp(a, "--window") || !strcmp(a, "--register")) {
      if ((strcmp(v, "malloc") && strcmp(v, "memalloc")) || window) usage();
      window = v;
      reg = !strcmp(a, "--window") ? GPU_REG_WINDOW : GPU_REG_LOCAL;
    } else usage();
  }
  if (window && strcmp(suite, "coll") && strcmp(suite, "graph")) {
    fprintf(stderr, "gpu_coll: --window and --register apply to the suites coll and graph\n");
    usage();
  }
  const gpu_mem_kind win_mem = window && !strcmp(window, "memalloc") ? GPU_MEM_NCCL : GPU_MEM_CUDA;
  if ((procs > 0) == (gpus > 0) || procs > 64 || gpus > GPU_MAX_LOCAL || extra < 0) usage();
  const int nranks = procs ? procs : gpus;
  const int full = gpu_env_int("WEFT_TEST_FULL", 0) == 1;
  if (full) timeout = 0;
  const uint64_t seed = test_seed(default_seed);

  gpu_body_fn body = NULL;
  void* arg = NULL;
  coll_opts co;
  memset(&co, 0, sizeof co);
  co.verbose = gpu_env_int("WEFT_GPU_VERBOSE", 0);
  co.window = reg;
  co.mem = win_mem;
  gpu_graph_opts go = {reg, win_mem};
  if (!strcmp(suite, "coll")) {
    gpu_space sp = {nranks, kinds, big, extra};
    const char* only = getenv("WEFT_GPU_CASE");
    const char* filter = getenv("WEFT_GPU_FILTER");
    if (full || (only && *only))
      gpu_full_matrix(&sp, &co.cases);
    else
      gpu_sample(&sp, seed, &co.cases);
    if (only && *only) gpu_list_keep_names(&co.cases, only);
    if (filter && *filter) gpu_list_keep_matching(&co.cases, filter);
    if (gpu_env_int("WEFT_GPU_LIST", 0)) {
      for (int i = 0; i < co.cases.n; i++) {
        char name[GPU_CASE_STR];
        gpu_case_name(&co.cases.v[i], name);
        printf("%s\n", name);
      }
      printf("%d cases\n", co.cases.n);
      gpu_list_free(&co.cases);
      return 0;
    }
    if (co.cases.n == 0) {
      fprintf(stderr, "gpu_coll: no case selected (WEFT_GPU_CASE/WEFT_GPU_FILTER?)\n");
      return GPU_FAIL;
    }
    body = coll_body;
    arg = &co;
  } else if (!strcmp(suite, "graph")) {
    body = gpu_graph_body;
    arg = &go;
    gpu_set_rerun_by_case(0);
  } else if (!strcmp(suite, "mem")) {
    body = gpu_mem_body;
    gpu_set_rerun_by_case(0);
  } else if (!strcmp(suite, "netfail")) {
    int pre = gpu_netfail_precheck();
    if (pre != GPU_PASS) return pre;
    body = gpu_netfail_body;
    gpu_set_rerun_by_case(0);
  } else {
    usage();
  }
  char what[128] = "";
  const char* win_what = !window                 ? ""
                         : reg == GPU_REG_LOCAL    ? win_mem == GPU_MEM_NCCL
                                                         ? ", registered ncclMemAlloc buffers"
                                                         : ", registered cudaMalloc buffers"
                         : win_mem == GPU_MEM_NCCL ? ", in ncclMemAlloc windows"
                                                   : ", in cudaMalloc windows";
  if (!strcmp(suite, "coll"))
    snprintf(what, sizeof what, " (%s: %d cases%s)", full ? "full matrix" : "sample",
             co.cases.n, win_what);
  else if (window)
    snprintf(what, sizeof what, " (%s)", win_what + 2);
  char env[400], banner[1024];
  gpu_format_env(env, sizeof env);
  snprintf(banner, sizeof banner, "gpu_coll: suite %s%s, %d ranks %s, seed 0x%" PRIx64 ";%s\n",
           suite, what, nranks, procs ? "in as many processes" : "in one process", seed, env);
  gpu_set_banner(banner);
  int rc = procs ? gpu_run_procs(procs, body, arg, seed, timeout)
                 : gpu_run_gpus(gpus, init_group, body, arg, seed);
  gpu_list_free(&co.cases);
  if (rc == GPU_FAIL) gpu_print_rerun(stderr, seed, NULL);
  return rc;
}
