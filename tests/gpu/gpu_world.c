/* Worlds of GPU ranks: the device probe, forked ranks or one process on several GPUs, the
 * watchdog, bounded stream waits and the leak check around a communicator (see gpu_world.h). */
#include "gpu_world.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_same.h"
#include "testutil.h"

/* ---- watchdog ----------------------------------------------------------------------------- */

static char g_watch_msg[512];
static size_t g_watch_len;

static void on_alarm(int sig) {
  (void)sig;
  ssize_t k = write(2, g_watch_msg, g_watch_len);
  (void)k;
  _exit(GPU_FAIL);
}

int gpu_env_int(const char* name, int fallback) {
  const char* s = getenv(name);
  return s && *s ? atoi(s) : fallback;
}

void gpu_watchdog_arm(const char* fmt, ...) {
  static int installed;
  if (!installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    installed = 1;
  }
  int limit = gpu_env_int("WEFT_GPU_WATCHDOG_S", 150);
  char what[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int n = snprintf(g_watch_msg, sizeof g_watch_msg,
                   "watchdog (pid %d): %s did not finish within %d s: failing "
                   "(WEFT_GPU_WATCHDOG_S sets the limit)\n",
                   (int)getpid(), what, limit);
  g_watch_len = n < 0 ? 0 : (size_t)n >= sizeof g_watch_msg ? sizeof g_watch_msg - 1 : (size_t)n;
  alarm(limit > 0 ? (unsigned)limit : 0);
}

void gpu_watchdog_disarm(void) { alarm(0); }

/* ---- waits -------------------------------------------------------------------------------- */

double gpu_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* 0: comm healthy; 1: an async error (printed). While work is in flight (strict = 0)
 * ncclInProgress is fine; once every stream is idle only ncclSuccess is. */
static int async_failed(const gpu_rank* r, const char* what, int strict) {
  ncclResult_t e = ncclSuccess;
  ncclResult_t q = ncclCommGetAsyncError(r->comm, &e);
  if (q != ncclSuccess) {
    fprintf(stderr, "FAIL rank %d (GPU %d): %s: ncclCommGetAsyncError returned %d (%s)\n",
            r->rank, r->dev, what, (int)q, ncclGetErrorString(q));
    return 1;
  }
  if (e == ncclSuccess || (e == ncclInProgress && !strict)) return 0;
  const char* last = ncclGetLastError(r->comm);
  fprintf(stderr, "FAIL rank %d (GPU %d): %s: asynchronous error %d (%s): %s\n", r->rank, r->dev,
          what, (int)e, ncclGetErrorString(e), last ? last : "");
  return 1;
}

int gpu_wait(gpu_world* w, const char* what) {
  const double limit = gpu_env_int("WEFT_GPU_WAIT_S", 120);
  const double t0 = gpu_now_s();
  int done[GPU_MAX_LOCAL] = {0};
  for (;;) {
    int left = 0;
    for (int i = 0; i < w->nlocal; i++) {
      if (done[i]) continue;
      gpu_rank* r = &w->loc[i];
      cudaError_t q = cudaStreamQuery(r->stream);
      if (q == cudaSuccess) {
        done[i] = 1;
      } else if (q == cudaErrorNotReady) {
        left++;
      } else {
        fprintf(stderr, "FAIL rank %d (GPU %d): %s: the stream reports %s (%d)\n", r->rank,
                r->dev, what, cudaGetErrorString(q), (int)q);
        return 1;
      }
    }
    for (int i = 0; i < w->nlocal; i++)
      if (async_failed(&w->loc[i], what, left == 0)) return 1;
    if (left == 0) return 0;
    double el = gpu_now_s() - t0;
    if (el > limit) {
      for (int i = 0; i < w->nlocal; i++)
        if (!done[i])
          fprintf(stderr, "FAIL rank %d (GPU %d): %s: stream still busy after %.0f s (hang?)\n",
                  w->loc[i].rank, w->loc[i].dev, what, el);
      return 1;
    }
    usleep(el < 0.01 ? 20 : 1000);
  }
}

void gpu_die(gpu_world* w) {
  gpu_watchdog_arm("ncclCommAbort after a failure");
  for (int i = 0; i < w->nlocal; i++)
    if (w->loc[i].comm) ncclCommAbort(w->loc[i].comm);
  fflush(NULL);
  exit(GPU_FAIL);
}

ncclResult_t gpu_group_start(const gpu_world* w) {
  return w->nlocal > 1 ? ncclGroupStart() : ncclSuccess;
}

ncclResult_t gpu_group_end(const gpu_world* w) {
  return w->nlocal > 1 ? ncclGroupEnd() : ncclSuccess;
}

/* ---- rerun lines -------------------------------------------------------------------------- */

static char g_cmdline[1024] = "gpu_coll";

void gpu_set_cmdline(int argc, char** argv) {
  size_t n = 0;
  g_cmdline[0] = 0;
  for (int i = 0; i < argc && n < sizeof g_cmdline; i++) {
    /* --default-seed is what WEFT_TEST_SEED replaces in the rerun line */
    if (!strcmp(argv[i], "--default-seed") && i + 1 < argc) {
      i++;
      continue;
    }
    int k = snprintf(g_cmdline + n, sizeof g_cmdline - n, "%s%s", n ? " " : "", argv[i]);
    if (k < 0) break;
    n += (size_t)k;
  }
}

static const char* const config_vars[] = {
    "WEFT_DEVICE",        "NCCL_ALGO",          "NCCL_PROTO",          "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",   "NCCL_NET_PLUGIN",    "NCCL_NET",            "NCCL_SOCKET_IFNAME",
    "NCCL_NVLS_ENABLE",   "NCCL_NET_GDR_LEVEL", "WEFT_GDRSIM_FAIL_SEND", "WEFT_GDRSIM_FAIL_RECV",
    "WEFT_TIMEOUT_MS",    "WEFT_ZERO_COPY"};

void gpu_format_env(char* out, size_t len) {
  size_t n = 0;
  out[0] = 0;
  for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0] && n < len; i++) {
    const char* v = getenv(config_vars[i]);
    int k = v ? snprintf(out + n, len - n, " %s=%s", config_vars[i], v) : 0;
    if (k > 0) n += (size_t)k;
  }
}

static int g_rerun_by_case = 1;

void gpu_set_rerun_by_case(int on) { g_rerun_by_case = on; }

void gpu_print_rerun(FILE* f, uint64_t seed, const char* case_name) {
  fprintf(f, "rerun: WEFT_TEST_SEED=0x%" PRIx64, seed);
  if (case_name && g_rerun_by_case) fprintf(f, " WEFT_GPU_CASE=%s", case_name);
  for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++) {
    const char* v = getenv(config_vars[i]);
    if (v) fprintf(f, " %s=%s", config_vars[i], v);
  }
  fprintf(f, " %s\n", g_cmdline);
}

/* ---- device probe (in a child: the caller stays free of CUDA) ----------------------------- */

typedef struct {
  int err;
  int count;
  char msg[200];
} probe_result;

/* 0 with *ndev set (maybe 0, with why), or -1 when the probe itself failed. */
static int probe_devices(int* ndev, char* why, size_t why_len) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fds[0]);
    alarm(60);
    probe_result pr;
    memset(&pr, 0, sizeof pr);
    cudaError_t e = cudaGetDeviceCount(&pr.count);
    pr.err = (int)e;
    if (e != cudaSuccess) {
      pr.count = 0;
      snprintf(pr.msg, sizeof pr.msg, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    }
    ssize_t k = write(fds[1], &pr, sizeof pr);
    _exit(k == (ssize_t)sizeof pr ? 0 : 3);
  }
  close(fds[1]);
  probe_result pr;
  size_t got = test_read_full(fds[0], &pr, sizeof pr);
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof pr || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    snprintf(why, why_len, "the CUDA probe process failed (status 0x%x)", st);
    return -1;
  }
  *ndev = pr.count;
  snprintf(why, why_len, "%s", pr.count > 0 ? "" : pr.msg[0] ? pr.msg : "no CUDA device");
  return 0;
}

int gpu_have_device(void) {
  char why[256] = "the CUDA probe process could not be started";
  int ndev = 0;
  if (probe_devices(&ndev, why, sizeof why) == 0 && ndev > 0) return 1;
  printf("SKIP: no usable GPU (%s)\n", why);
  return 0;
}

static char g_banner[1024];

void gpu_set_banner(const char* line) { snprintf(g_banner, sizeof g_banner, "%s", line); }

static int g_share;
void gpu_set_share(int on) { g_share = on; }

/* GPU_PASS when at least need devices are visible (*ndev set; the banner printed), else the
 * exit code after one line saying why. With sharing (--share) one GPU is enough. */
static int require_devices(int need, int* ndev) {
  if (g_share) need = 1;
  char why[256];
  if (probe_devices(ndev, why, sizeof why) != 0) {
    fprintf(stderr, "gpu: %s\n", why);
    return GPU_FAIL;
  }
  if (*ndev == 0) {
    printf("SKIP: no GPU: no usable CUDA device (%s)\n", why);
    return GPU_SKIP;
  }
  if (*ndev < need) {
    printf("SKIP: needs %d GPUs (one per rank; without --share ranks of one communicator do not "
           "share a GPU), %d visible\n", need, *ndev);
    return GPU_SKIP;
  }
  if (g_banner[0]) printf("%s", g_banner);
  fflush(stdout);
  return GPU_PASS;
}

/* ---- leak check --------------------------------------------------------------------------- */

typedef struct {
  int threads;
  int fds; /* sockets and /dev/shm files: what a communicator opens (CUDA's own are not counted) */
} gpu_usage;

static gpu_usage usage_now(void) {
  gpu_usage u = {test_count_threads(), 0};
  DIR* d = opendir("/proc/self/fd");
  if (!d) return u;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[300], target[256];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    if (!strncmp(target, "socket:", 7) || !strncmp(target, "/dev/shm/", 9)) u.fds++;
  }
  closedir(d);
  return u;
}

static void print_threads(void) {
  DIR* d = opendir("/proc/self/task");
  if (!d) return;
  struct dirent* e;
  fprintf(stderr, "  threads now:");
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[64] = "?";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE* f = fopen(path, "r");
    if (f) {
      if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
      fclose(f);
    }
    fprintf(stderr, " %s", name);
  }
  fprintf(stderr, "\n");
  closedir(d);
}

/* 1 (printed) when ncclCommDestroy (or ncclCommAbort, for a suite that aborts its
 * communicators: it must free as much) left threads, sockets or shm files behind. */
static int leaked(const gpu_usage* before, const char* who) {
  gpu_usage after = usage_now();
  if (after.threads <= before->threads && after.fds <= before->fds) return 0;
  fprintf(stderr, "FAIL %s: after ncclCommDestroy/ncclCommAbort %d threads and %d sockets/shm "
          "files, before ncclCommInitRank %d and %d\n", who, after.threads, after.fds,
          before->threads, before->fds);
  print_threads();
  return 1;
}

/* ---- communicators ------------------------------------------------------------------------ */

static int check_comm(const gpu_rank* r, int nranks) {
  int dev = -2, rank = -1, count = -1;
  ncclResult_t a = ncclCommCuDevice(r->comm, &dev), b = ncclCommUserRank(r->comm, &rank),
               c = ncclCommCount(r->comm, &count);
#ifdef GPU_FAKE_CUDA
  const int want_dev = -1; /* the self-test: a host-mode communicator over fake CUDA */
#else
  const int want_dev = r->dev;
#endif
  if (a != ncclSuccess || b != ncclSuccess || c != ncclSuccess || dev != want_dev ||
      rank != r->rank || count != nranks) {
    fprintf(stderr, "FAIL rank %d: the communicator reports device %d (want %d: a device-mode "
            "communicator), rank %d of %d (want %d of %d) [results %d %d %d]\n", r->rank, dev,
            want_dev, rank, count, r->rank, nranks, (int)a, (int)b, (int)c);
    return 1;
  }
  return 0;
}

static void init_failed(const char* call, ncclResult_t res, int rank) {
  fprintf(stderr, "FAIL rank %d: %s returned %d (%s): %s\n", rank, call, (int)res,
          ncclGetErrorString(res), ncclGetLastError(NULL));
}

/* Finalize and destroy every local comm (grouped when several); a comm the body aborted is
 * NULL and skipped. 0 or 1 (printed). */
static int teardown(gpu_world* w) {
  int failed = 0;
  gpu_watchdog_arm("ncclCommFinalize/ncclCommDestroy");
  ncclResult_t res = gpu_group_start(w);
  for (int i = 0; i < w->nlocal && res == ncclSuccess; i++) {
    if (!w->loc[i].comm) continue;
    ncclResult_t f = ncclCommFinalize(w->loc[i].comm);
    if (f != ncclSuccess) {
      fprintf(stderr, "FAIL rank %d: ncclCommFinalize returned %d (%s)\n", w->loc[i].rank,
              (int)f, ncclGetErrorString(f));
      failed = 1;
    }
  }
  ncclResult_t e = gpu_group_end(w);
  if (res != ncclSuccess || e != ncclSuccess) {
    fprintf(stderr, "FAIL: ncclGroupStart/End around ncclCommFinalize returned %d/%d\n", (int)res,
            (int)e);
    failed = 1;
  }
  for (int i = 0; i < w->nlocal; i++) {
    if (!w->loc[i].comm) continue;
    ncclResult_t d = ncclCommDestroy(w->loc[i].comm);
    if (d != ncclSuccess) {
      fprintf(stderr, "FAIL rank %d: ncclCommDestroy returned %d (%s)\n", w->loc[i].rank, (int)d,
              ncclGetErrorString(d));
      failed = 1;
    }
    w->loc[i].comm = NULL;
  }
  gpu_watchdog_disarm();
  return failed;
}

/* After body: a failed body aborts (a peer may be stuck in a collective); else teardown and the
 * leak check. A body may have aborted comms itself (set to NULL) and destroyed a stream whose
 * context an error broke (set to NULL). Returns the exit code. */
static int finish(gpu_world* w, int rc, const gpu_usage* before, const char* who) {
  if (rc == GPU_FAIL) gpu_die(w);
  if (teardown(w)) return GPU_FAIL;
  if (leaked(before, who)) return GPU_FAIL;
  for (int i = 0; i < w->nlocal; i++) {
    if (!w->loc[i].stream) continue;
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    CUDA_OK(cudaStreamDestroy(w->loc[i].stream));
  }
  return rc;
}

static void open_stream(gpu_rank* r) {
  CUDA_OK(cudaSetDevice(r->dev));
  CUDA_OK(cudaFree(NULL)); /* the primary context, now: weft reads the current device */
  CUDA_OK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
}

/* One forked rank: returns its exit code. */
static int rank_main(int rank, int nprocs, int ndev, int fds[2], gpu_body_fn body, void* arg,
                     uint64_t seed) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  gpu_watchdog_arm("rank %d: sharing the unique id", rank);
  if (rank == 0) {
    close(fds[0]);
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess) {
      init_failed("ncclGetUniqueId", res, rank);
      return GPU_FAIL;
    }
    for (int i = 1; i < nprocs; i++)
      if (write(fds[1], &id, sizeof id) != (ssize_t)sizeof id) return GPU_FAIL;
    close(fds[1]);
  } else {
    close(fds[1]);
    if (test_read_full(fds[0], &id, sizeof id) != sizeof id) {
      fprintf(stderr, "rank %d: rank 0 never sent the unique id\n", rank);
      return GPU_FAIL;
    }
    close(fds[0]);
  }
  gpu_world w;
  memset(&w, 0, sizeof w);
  w.nranks = nprocs, w.nlocal = 1, w.procs = 1, w.seed = seed;
  gpu_rank* r = &w.loc[0];
  r->rank = rank, r->dev = rank % ndev;
  open_stream(r);
  gpu_usage before = usage_now();
  gpu_watchdog_arm("rank %d: ncclCommInitRank on GPU %d", rank, r->dev);
  ncclResult_t res = ncclCommInitRank(&r->comm, nprocs, id, rank);
  gpu_watchdog_disarm();
  if (res != ncclSuccess) {
    init_failed("ncclCommInitRank", res, rank);
    return GPU_FAIL;
  }
  if (check_comm(r, nprocs)) gpu_die(&w);
  char who[32];
  snprintf(who, sizeof who, "rank %d", rank);
  return finish(&w, body(&w, arg), &before, who);
}

int gpu_run_procs(int nprocs, gpu_body_fn body, void* arg, uint64_t seed, int timeout_s) {
  int ndev = 0;
  int rc = require_devices(nprocs, &ndev);
  if (rc != GPU_PASS) return rc;
  if (nprocs > 64) return GPU_FAIL;
  if (gpu_same_init(nprocs) != 0) {
    fprintf(stderr, "gpu: cannot map the ledger of outputs for %d ranks\n", nprocs);
    return GPU_FAIL;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    perror("pipe");
    return GPU_FAIL;
  }
  pid_t parent = getpid(), pids[64];
  fflush(NULL);
  for (int r = 0; r < nprocs; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      exit(GPU_FAIL);
    }
    if (p == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(GPU_FAIL);
      int k = rank_main(r, nprocs, ndev, fds, body, arg, seed);
      fflush(NULL);
      _exit(k);
    }
    pids[r] = p;
  }
  close(fds[0]);
  close(fds[1]);
  /* Wait; once one rank failed, give the others a few seconds, then kill them. */
  double t0 = gpu_now_s(), fail_at = 0;
  int left = nprocs, any_fail = 0, any_skip = 0;
  while (left > 0) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (int r = 0; r < nprocs; r++) {
        if (pids[r] != p) continue;
        pids[r] = 0, left--;
        if (WIFEXITED(st) && WEXITSTATUS(st) == GPU_SKIP) {
          any_skip = 1;
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
          if (WIFSIGNALED(st))
            fprintf(stderr, "rank %d killed by signal %d (%s)\n", r, WTERMSIG(st),
                    strsignal(WTERMSIG(st)));
          else
            fprintf(stderr, "rank %d exited with status %d\n", r, WEXITSTATUS(st));
          if (!any_fail) fail_at = gpu_now_s();
          any_fail = 1;
        }
      }
      continue;
    }
    double t = gpu_now_s();
    int over = timeout_s > 0 && t - t0 > timeout_s;
    if (over || (any_fail && t - fail_at > 10)) {
      for (int r = 0; r < nprocs; r++)
        if (pids[r]) {
          fprintf(stderr, "rank %d still running %s: killing it\n", r,
                  over ? "at the time limit" : "10 s after another rank failed");
          kill(pids[r], SIGKILL);
          waitpid(pids[r], NULL, 0);
          pids[r] = 0, left--;
        }
      any_fail = 1;
      break;
    }
    usleep(5000);
  }
  if (!any_fail && gpu_same_check() != 0) any_fail = 1;
  return any_fail ? GPU_FAIL : any_skip ? GPU_SKIP : GPU_PASS;
}

int gpu_run_gpus(int ngpus, int init_group, gpu_body_fn body, void* arg, uint64_t seed) {
  int ndev = 0;
  int rc = require_devices(ngpus, &ndev);
  if (rc != GPU_PASS) return rc;
  if (ngpus > GPU_MAX_LOCAL) return GPU_FAIL;
  if (gpu_same_init(ngpus) != 0) return GPU_FAIL;
  if (g_share) init_group = 1; /* ncclCommInitAll takes each device once (NCCL's rule) */
  gpu_world w;
  memset(&w, 0, sizeof w);
  w.nranks = ngpus, w.nlocal = ngpus, w.procs = 0, w.seed = seed;
  int devs[GPU_MAX_LOCAL];
  ncclComm_t comms[GPU_MAX_LOCAL];
  memset(comms, 0, sizeof comms);
  for (int i = 0; i < ngpus; i++) {
    w.loc[i].rank = i, w.loc[i].dev = devs[i] = i % ndev;
    open_stream(&w.loc[i]);
  }
  gpu_usage before = usage_now();
  ncclResult_t res;
  if (!init_group) {
    gpu_watchdog_arm("ncclCommInitAll on %d GPUs", ngpus);
    res = ncclCommInitAll(comms, ngpus, devs);
    if (res != ncclSuccess) init_failed("ncclCommInitAll", res, -1);
  } else {
    gpu_watchdog_arm("ncclGroupStart + %d x ncclCommInitRank + ncclGroupEnd", ngpus);
    ncclUniqueId id;
    res = ncclGetUniqueId(&id);
    if (res != ncclSuccess) init_failed("ncclGetUniqueId", res, -1);
    if (res == ncclSuccess) res = ncclGroupStart();
    for (int i = 0; i < ngpus && res == ncclSuccess; i++) {
      CUDA_OK(cudaSetDevice(devs[i]));
      res = ncclCommInitRank(&comms[i], ngpus, id, i);
      if (res != ncclSuccess) init_failed("ncclCommInitRank (in a group)", res, i);
    }
    ncclResult_t e = ncclGroupEnd();
    if (e != ncclSuccess) init_failed("ncclGroupEnd after ncclCommInitRank", e, -1);
    if (res == ncclSuccess) res = e;
  }
  gpu_watchdog_disarm();
  if (res != ncclSuccess) return GPU_FAIL;
  for (int i = 0; i < ngpus; i++) w.loc[i].comm = comms[i];
  for (int i = 0; i < ngpus; i++)
    if (check_comm(&w.loc[i], ngpus)) gpu_die(&w);
  rc = finish(&w, body(&w, arg), &before, "process");
  if (rc == GPU_PASS && gpu_same_check() != 0) rc = GPU_FAIL;
  return rc;
}
