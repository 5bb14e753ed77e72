/* A rank process from start to end: header (process 0), the backend, the unique id, the
 * communicators, the device report, buffers, every collective asked for, the summary with the
 * baselines, the --plot picture, teardown. Errors print once, where they happen, and give the
 * exit code. Under --vs, initialisation and teardown are turns of their own (vs.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "vs.h"

#ifndef WEFT_PERF_VERSION
#define WEFT_PERF_VERSION "0"
#endif

enum { DEVICE_LINE = 320 };

static const char* average_name(int a) {
  static const char* names[] = {"rank 0", "mean over processes", "min over processes",
                                "max over processes"};
  return a >= 0 && a <= 3 ? names[a] : "?";
}

static void run_header(struct perf_proc* p) {
  const struct perf_setup* s = p->s;
  char ver[32];
  perf_nccl_version_text(p->lib->version, ver, sizeof ver);
  printf("# weft-perf version %s nccl-headers=%d nccl-library=%d\n", WEFT_PERF_VERSION,
         NCCL_VERSION_CODE, p->lib->version);
  printf("# Library: %s (ncclGetVersion %d = %s)\n", p->lib->path, p->lib->version, ver);
  printf("# Launch: %s: %d ranks (%d processes x %d); buffers: %s memory\n", s->launcher, p->nranks,
         p->nprocs, p->nlocal, p->be->is_host ? "host" : "device");
  printf("# Time: %s (-a %d); bandwidth in GB/s = 1e9 bytes/s\n", average_name(p->o->average),
         p->o->average);
  if (p->o->reg)
    printf("# Registration (-R %d): buffers registered with %s%s\n", p->o->reg,
           p->o->reg == 1 ? "ncclCommRegister" : "ncclCommWindowRegister (NCCL_WIN_COLL_SYMMETRIC)",
           p->be->is_host ? "" : ", allocated with ncclMemAlloc");
  perf_print_nvls(stdout, s);
  if (p->o->ncpus) {
    char now[128];
    if (perf_current_cpus(now, sizeof now)) snprintf(now, sizeof now, "?");
    printf("# CPU (--cpu): local rank process k pinned to the k-th of %d listed CPUs; process "
           "%d runs on CPU %s\n",
           p->o->ncpus, p->proc, now);
  }
  if (s->vs_fd >= 0)
    printf(
        "# --vs: library %c of 2, measured in turns with the other (its table follows this "
        "one)\n",
        s->vs_lib ? 'B' : 'A');
  const struct perf_baseline* b = s->baseline;
  if (b) perf_baseline_print(stdout, b);
  printf("#\n");
  fflush(stdout);
  if (p->json) {
    perf_json_kv_str(p->json, "library", "path", p->lib->path);
    perf_json_kv_num(p->json, "library", "nccl_version", p->lib->version);
    perf_json_library(p->json, s->lib_label, p->lib->path, p->lib->version);
    perf_json_describe_run(p->json, s, p->nprocs, p->nlocal, p->be->name);
  }
}

void perf_print_nvls(FILE* out, const struct perf_setup* s) {
  const char* v = getenv("NCCL_NVLS_ENABLE");
  if (s->nvls_set)
    fprintf(out,
            "# NCCL_NVLS_ENABLE=0: set by weft-perf, NVLink multicast stays off (export "
            "NCCL_NVLS_ENABLE to choose)\n");
  else
    fprintf(out, "# NCCL_NVLS_ENABLE=%s: from the environment\n", v ? v : "");
}

/* The CPU's model name (/proc/cpuinfo's first "model name"), "" when unknown. */
void perf_cpu_model(char* buf, size_t len) {
  buf[0] = '\0';
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10)) continue;
    const char* v = strchr(line, ':');
    if (!v) break;
    v++;
    while (*v == ' ' || *v == '\t') v++;
    snprintf(buf, len, "%s", v);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
    break;
  }
  fclose(f);
}

void perf_json_describe_run(struct perf_json* j, const struct perf_setup* s, int nprocs, int nlocal,
                            const char* buffers) {
  if (!j) return;
  const struct perf_opts* o = s->o;
  const char* nvls = getenv("NCCL_NVLS_ENABLE");
  char host[256] = "", cpu[160] = "";
  gethostname(host, sizeof host - 1);
  perf_cpu_model(cpu, sizeof cpu);
  perf_json_kv_str(j, "run", "weft_perf_version", WEFT_PERF_VERSION);
  perf_json_kv_str(j, "run", "host", host);
  perf_json_kv_str(j, "run", "cpu", cpu);
  perf_json_kv_num(j, "run", "cpus_online", (double)sysconf(_SC_NPROCESSORS_ONLN));
  perf_json_kv_str(j, "run", "launcher", s->launcher);
  perf_json_kv_num(j, "run", "nprocs", nprocs);
  perf_json_kv_num(j, "run", "ranks_per_process", nlocal);
  perf_json_kv_num(j, "run", "nranks", nprocs * nlocal);
  perf_json_kv_str(j, "run", "buffers", buffers);
  perf_json_kv_num(j, "run", "average", o->average);
  perf_json_kv_str(j, "run", "nccl_nvls_enable", nvls ? nvls : "");
  perf_json_kv_num(j, "run", "nvls_set_by_weft_perf", s->nvls_set);
  if (o->vs) {
    perf_json_kv_str(j, "run", "interleave", "per size, turns A B, B A, ...");
    perf_json_kv_num(j, "run", "vs_turns", o->vs_turns);
    perf_json_kv_num(j, "run", "vs_rep_us", o->vs_rep_us);
    perf_json_kv_num(j, "run", "vs_passes_max", perf_vs_passes_max(nprocs));
  }
  perf_json_kv_num(j, "config", "minbytes", (double)o->minbytes);
  perf_json_kv_num(j, "config", "maxbytes", (double)o->maxbytes);
  perf_json_kv_num(j, "config", "stepfactor", (double)o->stepfactor);
  perf_json_kv_num(j, "config", "stepbytes", (double)o->stepbytes);
  perf_json_kv_num(j, "config", "iters", o->iters);
  perf_json_kv_num(j, "config", "warmup_iters", o->warmup);
  perf_json_kv_num(j, "config", "agg_iters", o->agg_iters);
  perf_json_kv_num(j, "config", "check", o->check);
  perf_json_kv_num(j, "config", "cudagraph_launches", o->graph_launches);
  perf_json_kv_num(j, "config", "local_register", o->reg);
  const struct perf_baseline* b = s->baseline;
  if (b && b->have_memcpy) {
    perf_json_kv_num(j, "baselines", "memcpy_gbps", b->memcpy_gbps);
    perf_json_kv_num(j, "baselines", "memcpy_bytes", (double)b->memcpy_bytes);
  }
  if (b && b->have_tcp) {
    perf_json_kv_num(j, "baselines", "tcp_loopback_gbps", b->tcp_gbps);
    perf_json_kv_num(j, "baselines", "tcp_write_bytes", (double)b->tcp_chunk);
  }
}

/* The ratio lines: AllReduce at its largest size against the baselines. */
/* The size the host-mode bars are set for (docs/perf.md). */
#define PERF_BAR_BYTES ((size_t)64 << 20)

static void ratio_lines(struct perf_proc* p) {
  const struct perf_baseline* b = p->s->baseline;
  const struct perf_ar_best* a = &p->ar;
  if (!b || !a->have || (!b->have_memcpy && !b->have_tcp)) return;
  const char* shm_off = getenv("NCCL_SHM_DISABLE");
  int socket_run = shm_off && atoi(shm_off) == 1;
  printf("# AllReduce %zu B %s %s, %d ranks: out-of-place busbw %.3f GB/s\n", a->size, a->type,
         a->op, p->nranks, a->busbw);
  /* The bars are set for 64 MiB: a smaller largest size is shown, not judged against them. */
  int bar_size = a->size >= PERF_BAR_BYTES;
  char small[96] = "";
  if (!bar_size)
    snprintf(small, sizeof small, "  [no verdict: the bar is for 64 MiB, this run's largest is "
             "%zu B]", a->size);
  if (b->have_memcpy) {
    double r = a->busbw / b->memcpy_gbps;
    printf("#   vs memcpy        : %.2fx (bar >= 0.40 over shm, at 64 MiB)%s\n", r,
           socket_run ? ""
           : !bar_size ? small
           : r >= 0.4 ? "  [this run: meets]"
                      : "  [this run: below]");
    perf_json_kv_num(p->json, "ratios", "allreduce_busbw_over_memcpy", r);
  }
  if (b->have_tcp) {
    double r = a->busbw / b->tcp_gbps;
    printf(
        "#   vs TCP loopback  : %.2fx (bar >= 0.50 over the socket transport, "
        "NCCL_SHM_DISABLE=1, at 64 MiB)%s\n",
        r,
        !socket_run ? ""
        : !bar_size ? small
        : r >= 0.5  ? "  [this run: meets]"
                    : "  [this run: below]");
    perf_json_kv_num(p->json, "ratios", "allreduce_busbw_over_tcp", r);
  }
  perf_json_kv_num(p->json, "ratios", "bar_applies", bar_size);
  perf_json_kv_num(p->json, "ratios", "allreduce_size", (double)a->size);
  perf_json_kv_num(p->json, "ratios", "allreduce_busbw_gbps", a->busbw);
  printf("#\n");
  fflush(stdout);
}

static int init_comms(struct perf_proc* p) {
  const struct perf_nccl* L = p->lib;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclResult_t res = ncclSuccess;
  if (p->s->id_from_env || p->proc == 0) res = L->GetUniqueId(&id);
  if (res != ncclSuccess) {
    char msg[1200];
    perf_nccl_describe(L, res, NULL, "ncclGetUniqueId", msg, sizeof msg);
    perf_rank_error(p, "%s", msg);
    return -1;
  }
  if (!p->s->id_from_env && p->ch->bcast(p->ch, &id, sizeof id)) return -1;
  int grouped = p->nlocal > 1;
  if (grouped) res = L->GroupStart();
  int fail_i = 0;
  for (int i = 0; i < p->nlocal && res == ncclSuccess; i++) {
    if (p->be->set_device(p->devs[i])) {
      perf_rank_error(p, "selecting device %d: %s", p->devs[i], p->be->error());
      return -1;
    }
    res = L->CommInitRank(&p->comms[i], p->nranks, id, p->proc * p->nlocal + i);
    fail_i = i;
  }
  if (grouped) {
    ncclResult_t end = L->GroupEnd();
    if (res == ncclSuccess) res = end;
  }
  if (res != ncclSuccess) {
    char msg[1200];
    perf_nccl_describe(L, res, p->comms[fail_i], "ncclCommInitRank", msg, sizeof msg);
    perf_rank_error(p, "%s", msg);
    return -1;
  }
  return 0;
}

/* The library's idea of where buffers live must match the backend's. */
static int check_mode(struct perf_proc* p) {
  int is_dev = -1;
  if (p->lib->weftCommGetMode(p->comms[0], &is_dev) != ncclSuccess || is_dev < 0) return 0;
  if (is_dev && p->be->is_host) {
    perf_rank_error(p,
                    "the library runs this communicator on GPUs but the buffers are host "
                    "memory (use --backend cuda, or WEFT_DEVICE=host for host mode)");
    return -1;
  }
  if (!is_dev && !p->be->is_host) {
    perf_rank_error(p,
                    "the library runs this communicator in host mode but the buffers are "
                    "device memory (use --backend host)");
    return -1;
  }
  return 0;
}

static int device_report(struct perf_proc* p) {
  char host[64] = "?";
  gethostname(host, sizeof host - 1);
  size_t mine_len = (size_t)p->nlocal * DEVICE_LINE;
  char* mine = calloc(1, mine_len);
  char* all = calloc((size_t)p->nranks, DEVICE_LINE);
  if (!mine || !all) {
    free(mine);
    free(all);
    return -1;
  }
  for (int i = 0; i < p->nlocal; i++) {
    char dev[160];
    p->be->describe(p->devs[i], dev, sizeof dev);
    snprintf(mine + (size_t)i * DEVICE_LINE, DEVICE_LINE,
             "#  Rank %2d Group %2d Pid %6d on %10s device %s", p->proc * p->nlocal + i, 0,
             (int)getpid(), host, dev);
  }
  int rc = p->ch->allgather(p->ch, mine, mine_len, all);
  if (rc == 0 && p->is_root_proc) {
    printf("# Using devices\n");
    for (int r = 0; r < p->nranks; r++) {
      char* line = all + (size_t)r * DEVICE_LINE;
      line[DEVICE_LINE - 1] = '\0';
      printf("%s\n", line);
    }
    printf("#\n");
    fflush(stdout);
  }
  free(mine);
  free(all);
  return rc;
}

/* -R on device buffers: the library's ncclMemAlloc, as nccl-tests does. */
static int lib_alloc(struct perf_proc* p, void** ptr) {
  ncclResult_t res = p->lib->MemAlloc(ptr, p->bufbytes);
  if (res == ncclSuccess) return 0;
  char why[512];
  perf_nccl_describe(p->lib, res, NULL, "ncclMemAlloc (-R)", why, sizeof why);
  perf_rank_error(p, "%s", why);
  *ptr = NULL;
  return -1;
}

static int alloc_buffers(struct perf_proc* p) {
  size_t page = 4096;
  p->bufbytes = (p->o->maxbytes + page - 1) / page * page;
  if (p->bufbytes == 0) p->bufbytes = page;
  p->mem_alloc = p->o->reg && !p->be->is_host;
  for (int i = 0; i < p->nlocal; i++) {
    if (p->be->set_device(p->devs[i]) || p->be->stream_create(&p->streams[i])) {
      perf_rank_error(p, "selecting device %d: %s", p->devs[i], p->be->error());
      return -1;
    }
    if (p->mem_alloc) {
      if (lib_alloc(p, &p->send[i]) || lib_alloc(p, &p->recv[i])) return -1;
      continue;
    }
    if (p->be->alloc(&p->send[i], p->bufbytes) || p->be->alloc(&p->recv[i], p->bufbytes)) {
      perf_rank_error(p, "allocating 2 x %zu bytes: %s", p->bufbytes, p->be->error());
      return -1;
    }
  }
  if (!p->be->is_host && p->o->check) {
    if (perf_backend_host.alloc(&p->stage_send, p->bufbytes) ||
        perf_backend_host.alloc(&p->stage_recv, p->bufbytes)) {
      perf_rank_error(p, "allocating host staging buffers: %s", perf_backend_host.error());
      return -1;
    }
  }
  return 0;
}

/* -R: every local rank registers its two buffers with its communicator (window registration is
 * collective: one group over the local ranks). */
static int register_buffers(struct perf_proc* p) {
  if (!p->o->reg) return 0;
  const char* what = p->o->reg == 1 ? "ncclCommRegister (-R 1)" : "ncclCommWindowRegister (-R 2)";
  ncclResult_t res = ncclSuccess;
  int grouped = p->o->reg == 2 && p->nlocal > 1;
  if (grouped) res = p->lib->GroupStart();
  for (int i = 0; i < p->nlocal && res == ncclSuccess; i++)
    for (int b = 0; b < 2 && res == ncclSuccess; b++) {
      void* buf = b ? p->recv[i] : p->send[i];
      void** h = &p->regs[2 * i + b];
      if (p->o->reg == 1)
        res = p->lib->CommRegister(p->comms[i], buf, p->bufbytes, h);
      else
        res = p->lib->CommWindowRegister(p->comms[i], buf, p->bufbytes, (ncclWindow_t*)h,
                                         NCCL_WIN_COLL_SYMMETRIC);
    }
  if (grouped) {
    ncclResult_t e = p->lib->GroupEnd();
    if (res == ncclSuccess) res = e;
  }
  if (res == ncclSuccess) return 0;
  char why[512];
  perf_nccl_describe(p->lib, res, p->comms[0], what, why, sizeof why);
  perf_rank_error(p, "%s", why);
  return -1;
}

/* Before the buffers go; only after a clean run (a failed one aborts, which drops them). */
static void deregister_buffers(struct perf_proc* p) {
  for (int i = 0; p->o->reg && i < 2 * p->nlocal; i++) {
    if (!p->regs[i]) continue;
    ncclResult_t res = p->o->reg == 1
                           ? p->lib->CommDeregister(p->comms[i / 2], p->regs[i])
                           : p->lib->CommWindowDeregister(p->comms[i / 2], (ncclWindow_t)p->regs[i]);
    if (res != ncclSuccess) {
      char why[512];
      perf_nccl_describe(p->lib, res, p->comms[i / 2], "deregistering a buffer (-R)", why,
                         sizeof why);
      perf_rank_error(p, "%s", why);
    }
    p->regs[i] = NULL;
  }
}

static void free_buffers(struct perf_proc* p) {
  for (int i = 0; i < p->nlocal; i++) {
    if (p->mem_alloc) {
      if (p->send && p->send[i]) p->lib->MemFree(p->send[i]);
      if (p->recv && p->recv[i]) p->lib->MemFree(p->recv[i]);
      if (p->streams && p->streams[i]) p->be->stream_destroy(p->streams[i]);
      continue;
    }
    if (p->send && p->send[i]) p->be->release(p->send[i]);
    if (p->recv && p->recv[i]) p->be->release(p->recv[i]);
    if (p->streams && p->streams[i]) p->be->stream_destroy(p->streams[i]);
  }
  if (p->stage_send) perf_backend_host.release(p->stage_send);
  if (p->stage_recv) perf_backend_host.release(p->stage_recv);
}

int perf_rank_run(int proc, int nprocs, struct perf_chan* ch, void* arg) {
  const struct perf_setup* s = arg;
  struct perf_proc P = {0};
  struct perf_proc* p = &P;
  p->s = s;
  p->o = s->o;
  p->lib = s->lib;
  p->be = s->be;
  p->ch = ch;
  p->proc = proc;
  p->nprocs = nprocs;
  p->nlocal = s->nlocal;
  p->nranks = nprocs * s->nlocal;
  p->is_root_proc = proc == 0;
  int rc = PERF_EXIT_FAIL;
  int n = p->nlocal;
  p->comms = calloc((size_t)n, sizeof *p->comms);
  p->streams = calloc((size_t)n, sizeof *p->streams);
  p->devs = calloc((size_t)n, sizeof *p->devs);
  p->send = calloc((size_t)n, sizeof *p->send);
  p->recv = calloc((size_t)n, sizeof *p->recv);
  p->ops = calloc((size_t)n, sizeof *p->ops);
  p->graphs = calloc((size_t)n, sizeof *p->graphs);
  p->regs = calloc((size_t)(2 * n), sizeof *p->regs);
  if (!p->comms || !p->streams || !p->devs || !p->send || !p->recv || !p->ops || !p->graphs ||
      !p->regs)
    goto out;
  int local_proc = s->local_proc >= 0 ? s->local_proc : proc;
  for (int i = 0; i < n; i++) p->devs[i] = s->be->is_host ? -1 : local_proc * n + i;
  if (p->o->ncpus) { /* before CUDA and the library start threads: those inherit the CPU */
    char why[160];
    int cpu = p->o->cpus[local_proc % p->o->ncpus];
    if (perf_pin_cpu(cpu, why, sizeof why)) {
      fprintf(stderr, "weft-perf: rank process %d: --cpu: %s\n", proc, why);
      goto out;
    }
  }

  if (p->o->root >= p->nranks) {
    if (p->is_root_proc)
      fprintf(stderr, "weft-perf: -r %d: there are only %d ranks\n", p->o->root, p->nranks);
    rc = PERF_EXIT_USAGE;
    goto out;
  }
  if (p->is_root_proc && p->o->json && s->vs_fd < 0) { /* under --vs the coordinator writes */
    p->json = perf_json_open(p->o->json, s->argc, s->argv);
    if (!p->json) {
      fprintf(stderr, "weft-perf: cannot write %s\n", p->o->json);
      rc = PERF_EXIT_USAGE;
      goto out;
    }
  }
  if (p->is_root_proc) run_header(p);
  if (perf_vs_turn(p)) goto out; /* --vs: initialisation is a turn */
  if (p->be->init()) {
    perf_rank_error(p, "%s backend: %s", p->be->name, p->be->error());
    goto out;
  }
  /* More ranks than GPUs: ranks share them round-robin (weft allows it, for correctness runs
   * on one GPU; stock NCCL refuses two ranks on one device at init). */
  int ndev = 0;
  if (!p->be->is_host && !p->be->device_count(&ndev) && ndev > 0)
    for (int i = 0; i < n; i++) p->devs[i] %= ndev;
  if (init_comms(p)) goto out;
  if (!p->ch) { /* launcher environments: exchanges go through the library */
    p->ch = perf_chan_nccl(p->lib, p->be, p->comms, p->streams, p->devs, n, nprocs);
    if (!p->ch) goto out_comms;
  }
  if (check_mode(p) || device_report(p) || alloc_buffers(p) || register_buffers(p))
    goto out_bufs;
  int failed = 0;
  for (int c = 0; c < p->o->ncolls && !failed; c++)
    failed = perf_bench_coll(p, &perf_colls[p->o->colls[c]]) != 0;
  if (failed) goto out_bufs;
  if (p->is_root_proc) ratio_lines(p);
  if (p->is_root_proc && p->o->explain && p->o->explain_png) {
    char title[96];
    snprintf(title, sizeof title, "weft-perf --explain, %d ranks", p->nranks);
    if (perf_explain_png(&p->explain, p->o->explain_png, title) == 0)
      printf("# explain: plot of predicted vs measured written to %s\n#\n", p->o->explain_png);
    else
      fprintf(stderr, "weft-perf: cannot write the explain plot %s: %s\n", p->o->explain_png,
              strerror(errno));
  }
  if (p->is_root_proc && p->o->plot && s->vs_fd < 0) {
    char title[96];
    const char* labels[2] = {s->lib_label, NULL};
    snprintf(title, sizeof title, "weft-perf: %s, %d ranks", s->lib_label, p->nranks);
    if (perf_plot_png(&p->results, labels, p->o->plot, title) == 0)
      printf("# plot: busbw and time per call against size written to %s\n#\n", p->o->plot);
    else
      fprintf(stderr, "weft-perf: cannot write the plot %s: %s\n", p->o->plot, strerror(errno));
  }
  rc = p->wrong_rows || p->below_min_bw ? PERF_EXIT_FAIL : PERF_EXIT_OK;
  if (perf_vs_turn(p)) rc = PERF_EXIT_FAIL; /* --vs: teardown is a turn */

out_bufs:
  if (rc == PERF_EXIT_OK) deregister_buffers(p);
  free_buffers(p);
out_comms:
  /* After a failure peers may be gone or stuck: abort instead of a collective destroy. */
  for (int i = 0; i < n; i++) {
    if (!p->comms[i]) continue;
    if (rc == PERF_EXIT_OK) {
      p->lib->CommFinalize(p->comms[i]);
      p->lib->CommDestroy(p->comms[i]);
    } else {
      p->lib->CommAbort(p->comms[i]);
    }
  }
  if (p->ch && p->ch != ch) p->ch->destroy(p->ch);
out:
  if (p->json && perf_json_close(p->json)) {
    fprintf(stderr, "weft-perf: writing %s failed\n", p->o->json);
    if (rc == PERF_EXIT_OK) rc = PERF_EXIT_FAIL;
  }
  free(p->comms);
  free(p->streams);
  free(p->devs);
  free(p->send);
  free(p->recv);
  free(p->ops);
  free(p->graphs);
  free(p->regs);
  perf_explain_free(&p->explain);
  perf_results_free(&p->results);
  return rc;
}
