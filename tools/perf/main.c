/* weft-perf: nccl-tests' benchmark for any NCCL-ABI library, weft by default.
 *
 * main decides everything that must be the same in every rank before any rank exists: the
 * options, the library (loaded here, inherited by forked ranks), where buffers live, how many
 * processes and how they are started, and the baselines (measured before the ranks start so
 * nothing competes with them). Then it either forks the ranks (-np, the default in host mode)
 * and serves as their hub, or runs as one rank of a launcher's job, or (--vs) coordinates two
 * libraries' runs (vs.h): then this process loads no library at all.
 *
 * NVLink multicast (NVLS) is never switched on by weft-perf: NCCL_NVLS_ENABLE=0 goes into the
 * environment of the run (before any library or rank exists) unless the user set it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "vs.h"

static struct perf_opts opts;
static struct perf_nccl lib; /* lives as long as the process: its stubs point here */
static struct perf_baseline baseline;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "weft-perf: timeout (-T): giving up\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(PERF_EXIT_FAIL);
}

static const struct perf_backend* choose_backend(const struct perf_opts* o) {
  if (o->backend == PERF_BACKEND_HOST) return &perf_backend_host;
  if (o->backend == PERF_BACKEND_CUDA) return &perf_backend_cuda;
  const char* dev = getenv("WEFT_DEVICE");
  if (dev && !strcmp(dev, "host")) return &perf_backend_host;
  return perf_gpu_probe() > 0 ? &perf_backend_cuda : &perf_backend_host;
}

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, NULL, _IOLBF, 0);
  char err[512];
  int rc = perf_parse_args(argc, argv, &opts, err, sizeof err);
  if (rc == 1) {
    perf_usage(stdout, argv[0]);
    return PERF_EXIT_OK;
  }
  if (rc == 3) {
    printf("weft-perf (weft) %s\n", WEFT_PERF_VERSION);
    return PERF_EXIT_OK;
  }
  if (rc) {
    fprintf(stderr, "weft-perf: %s\n", err);
    return PERF_EXIT_USAGE;
  }
  perf_opts_finish(&opts);
  if (opts.ncpus && perf_cpus_allowed(opts.cpus, opts.ncpus, err, sizeof err)) {
    fprintf(stderr, "weft-perf: --cpu: %s\n", err);
    return PERF_EXIT_USAGE;
  }
  int nvls_set = 0;
  if (!getenv("NCCL_NVLS_ENABLE")) {
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    nvls_set = 1;
  }

  if (opts.baseline_only) {
    perf_baseline_run(opts.maxbytes, &baseline);
    perf_baseline_print(stdout, &baseline);
    return baseline.have_memcpy || baseline.have_tcp ? PERF_EXIT_OK : PERF_EXIT_FAIL;
  }

  struct perf_world world;
  int from_env = perf_world_from_env(&world, err, sizeof err);
  if (from_env < 0) {
    fprintf(stderr, "weft-perf: %s\n", err);
    return PERF_EXIT_USAGE;
  }
  if (from_env && (opts.given & PERF_GIVEN_NP)) {
    fprintf(stderr,
            "weft-perf: -np forks local ranks, but this process already is rank %d of %d "
            "(%s); drop -np\n",
            world.proc, world.nprocs, world.launcher);
    return PERF_EXIT_USAGE;
  }
  if (from_env && world.nprocs > 1 && !getenv("NCCL_COMM_ID")) {
    fprintf(stderr,
            "weft-perf: running as rank %d of %d (%s) needs NCCL_COMM_ID=host:port "
            "(reachable from every rank; rank 0 listens there): weft-perf has no MPI "
            "to pass the unique id\n",
            world.proc, world.nprocs, world.launcher);
    return PERF_EXIT_USAGE;
  }

  if (from_env && opts.vs) {
    fprintf(stderr,
            "weft-perf: --vs forks both libraries' processes itself, but this process already "
            "is rank %d of %d (%s); run it once, without a launcher (-np N)\n",
            world.proc, world.nprocs, world.launcher);
    return PERF_EXIT_USAGE;
  }

  const struct perf_backend* be = choose_backend(&opts);
  if (opts.graph_launches && be->is_host) {
    fprintf(stderr,
            "weft-perf: -G %d: CUDA graphs need device buffers, but this run uses host "
            "memory (no GPU, WEFT_DEVICE=host or --backend host)\n",
            opts.graph_launches);
    return PERF_EXIT_USAGE;
  }
  struct perf_setup setup = {
      .o = &opts,
      .lib = &lib,
      .be = be,
      .nlocal = opts.ngpus,
      .local_proc = -1,
      .nvls_set = nvls_set,
      .vs_fd = -1,
      .argc = argc,
      .argv = argv,
  };
  if (be == &perf_backend_cuda && opts.all && !(opts.given & PERF_GIVEN_GPUS) &&
      !(opts.given & PERF_GIVEN_NP) && !from_env) {
    int gpus = perf_gpu_probe();
    setup.nlocal = gpus > 0 ? gpus : 1; /* the whole machine, as scripts/bench promises */
  }

  int np = from_env ? world.nprocs : opts.np ? opts.np : be->is_host ? 2 : 1;
  char launcher[160];
  if (opts.vs) { /* each library is loaded in its own processes, never here */
    if (opts.baseline || (be->is_host && np == 2)) {
      perf_baseline_run(opts.maxbytes, &baseline);
      setup.baseline = &baseline;
    }
    if (np == 1)
      snprintf(launcher, sizeof launcher, "one process");
    else
      snprintf(launcher, sizeof launcher, "fork (-np %d)", np);
    setup.launcher = launcher;
    if (opts.timeout_s > 0) {
      signal(SIGALRM, on_alarm);
      alarm((unsigned)opts.timeout_s);
    }
    return perf_vs_run(&setup, np);
  }

  if (perf_nccl_load(&lib, opts.lib, err, sizeof err)) {
    fprintf(stderr, "weft-perf: %s\n", err);
    return PERF_EXIT_USAGE;
  }
  setup.lib_label = perf_nccl_label(&lib);

  int want_baseline = opts.baseline || (be->is_host && !from_env && np == 2);
  if (want_baseline && (!from_env || world.proc == 0)) {
    perf_baseline_run(opts.maxbytes, &baseline);
    setup.baseline = &baseline;
  }

  if (from_env) {
    snprintf(launcher, sizeof launcher, "%s, rank %d of %d", world.launcher, world.proc,
             world.nprocs);
    setup.launcher = launcher;
    setup.local_proc = world.local_proc;
    setup.id_from_env = world.nprocs > 1;
    if (opts.timeout_s > 0) {
      signal(SIGALRM, on_alarm);
      alarm((unsigned)opts.timeout_s);
    }
    return perf_rank_run(world.proc, world.nprocs, world.nprocs == 1 ? perf_chan_local() : NULL,
                         &setup);
  }
  if (np == 1) {
    setup.launcher = "one process";
    if (opts.timeout_s > 0) {
      signal(SIGALRM, on_alarm);
      alarm((unsigned)opts.timeout_s);
    }
    return perf_rank_run(0, 1, perf_chan_local(), &setup);
  }
  snprintf(launcher, sizeof launcher, "fork (-np %d)", np);
  setup.launcher = launcher;
  return perf_launch_fork(np, opts.timeout_s, perf_rank_run, &setup);
}
