/* A net plugin failure under running kernels surfaces promptly (see gpu_suites.h): one large
 * AllReduce per local rank through GdrSim with a failure injected (WEFT_GDRSIM_FAIL_SEND/_RECV),
 * then per rank, each bounded by WEFT_GPU_NETFAIL_S (default 20 s):
 *   1. ncclCommGetAsyncError reports an error (not ncclSuccess, not ncclInProgress), counted
 *      from the launch. The rank whose plugin failed learns it from its proxy; its peer learns
 *      it when its own net operations fail (the failed rank aborts and closes its sockets).
 *      The kernels' own timeout (WEFT_TIMEOUT_MS, 600 s by default) is far outside the bound:
 *      a rank that could only learn through it fails;
 *   2. ncclCommAbort returns (it runs on a thread of its own, so a hang is reported, not
 *      suffered; ranks of one process are aborted as soon as each has seen its error, which
 *      is what lets the others see theirs);
 *   3. the rank's stream completes (cudaStreamQuery answers anything but cudaErrorNotReady: a
 *      CUDA error is accepted, a hang is not).
 * Fails when the AllReduce completes without an error (nothing was injected, or the ranks did
 * not talk through GdrSim), and before anything runs when neither WEFT_GDRSIM_FAIL_SEND nor
 * _RECV is set or NCCL_NET is not GdrSim: the suite cannot pass without a failure injected. */
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "coll_exec.h" /* coll_not_available */
#include "gpu_suites.h"

#define NETFAIL_COUNT ((size_t)64 << 20) /* floats: 256 MiB, thousands of net steps */

typedef enum { NF_WAIT_ERROR, NF_ABORTING, NF_DRAINING, NF_DONE, NF_FAILED } nf_phase;

typedef struct {
  gpu_rank* r;
  nf_phase phase;
  float* buf;
  ncclResult_t err;       /* the asynchronous error seen */
  char last[200];         /* ncclGetLastError then */
  double err_s;           /* from the launch until err was seen */
  double abort_t0, abort_s;
  ncclResult_t abort_rc;
  int abort_done;         /* atomic: set by the abort thread */
  pthread_t thread;
  double drain_t0, drain_s;
  cudaError_t stream_rc;
} nf_rank;

int gpu_netfail_precheck(void) {
#ifdef GPU_FAKE_CUDA
  /* Host-mode communicators over fake CUDA: no kernels, and no GdrSim (it needs the driver). */
  printf("SKIP: suite netfail needs a GPU and GdrSim (this is the fake-CUDA self-test build)\n");
  return GPU_SKIP;
#endif
  const char* s = getenv("WEFT_GDRSIM_FAIL_SEND");
  const char* r = getenv("WEFT_GDRSIM_FAIL_RECV");
  const char* net = getenv("NCCL_NET");
  if ((s == NULL || s[0] == '\0') && (r == NULL || r[0] == '\0')) {
    fprintf(stderr, "FAIL: suite netfail needs a failure to surface: set WEFT_GDRSIM_FAIL_SEND=N "
            "or WEFT_GDRSIM_FAIL_RECV=N (GdrSim fails the N-th isend or receive test), with "
            "NCCL_NET=GdrSim and NCCL_NET_PLUGIN=<build>/lib/libnccl-net-gdrsim.so\n");
    return GPU_FAIL;
  }
  if (net == NULL || strcasecmp(net, "GdrSim") != 0) {
    fprintf(stderr, "FAIL: suite netfail injects its failure through GdrSim: set NCCL_NET=GdrSim "
            "and NCCL_NET_PLUGIN=<build>/lib/libnccl-net-gdrsim.so (NCCL_NET is %s)\n",
            net ? net : "unset");
    return GPU_FAIL;
  }
  return GPU_PASS;
}

static void* abort_main(void* arg) {
  nf_rank* x = arg;
  (void)cudaSetDevice(x->r->dev);
  x->abort_rc = ncclCommAbort(x->r->comm);
  __atomic_store_n(&x->abort_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void abort_start(nf_rank* x) {
  x->abort_t0 = gpu_now_s();
  if (pthread_create(&x->thread, NULL, abort_main, x) != 0) {
    fprintf(stderr, "rank %d: cannot start a thread for ncclCommAbort: calling it here\n",
            x->r->rank);
    abort_main(x);
    x->thread = pthread_self();
  }
  x->phase = NF_ABORTING;
}

static void fail(nf_rank* x, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(nf_rank* x, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAIL rank %d (GPU %d): %s\n", x->r->rank, x->r->dev, msg);
  x->phase = NF_FAILED;
}

/* Phase 1: the stream first, then the error, so that kernels that stopped because of the
 * failure are never mistaken for an AllReduce that completed (the error is set before they
 * are told to stop). */
static void poll_error(nf_rank* x, double t0, double limit) {
  gpu_rank* r = x->r;
  cudaError_t q = cudaStreamQuery(r->stream);
  ncclResult_t e = ncclSuccess;
  ncclResult_t g = ncclCommGetAsyncError(r->comm, &e);
  double t = gpu_now_s() - t0;
  if (g != ncclSuccess) {
    fail(x, "ncclCommGetAsyncError returned %s (%.3f s after the launch)",
         ncclGetErrorString(g), t);
    return;
  }
  if (e != ncclSuccess && e != ncclInProgress) {
    const char* last = ncclGetLastError(r->comm);
    x->err = e;
    x->err_s = t;
    snprintf(x->last, sizeof x->last, "%s", last ? last : "");
    abort_start(x);
    return;
  }
  if (q == cudaSuccess)
    fail(x, "the AllReduce completed and no error was reported (%s after %.3f s): no failure "
         "surfaced (was one injected? the ranks must talk through GdrSim: NCCL_P2P_DISABLE=1 "
         "NCCL_SHM_DISABLE=1 NCCL_NET=GdrSim)", ncclGetErrorString(e), t);
  else if (q != cudaErrorNotReady)
    fail(x, "the stream reports %s before any asynchronous error (%.3f s after the launch)",
         cudaGetErrorString(q), t);
  else if (t > limit)
    fail(x, "no asynchronous error (%s) within %.0f s of the launch and the stream still busy: "
         "the net failure did not surface (the hang this test guards against)",
         ncclGetErrorString(e), limit);
}

/* Phase 2: ncclCommAbort on its thread. */
static void poll_abort(nf_rank* x, double limit) {
  double t = gpu_now_s() - x->abort_t0;
  if (!__atomic_load_n(&x->abort_done, __ATOMIC_ACQUIRE)) {
    if (t > limit) fail(x, "ncclCommAbort has not returned after %.0f s", limit);
    return;
  }
  if (!pthread_equal(x->thread, pthread_self())) pthread_join(x->thread, NULL);
  x->abort_s = t;
  x->r->comm = NULL; /* freed by the abort */
  if (x->abort_rc != ncclSuccess) {
    fail(x, "ncclCommAbort returned %s (after %.3f s)", ncclGetErrorString(x->abort_rc), t);
    return;
  }
  x->drain_t0 = gpu_now_s();
  x->phase = NF_DRAINING;
}

/* Phase 3: the stream completes, with or without a CUDA error. */
static void poll_drain(nf_rank* x, double limit) {
  double t = gpu_now_s() - x->drain_t0;
  cudaError_t q = cudaStreamQuery(x->r->stream);
  if (q != cudaErrorNotReady) {
    x->stream_rc = q;
    x->drain_s = t;
    x->phase = NF_DONE;
  } else if (t > limit) {
    fail(x, "the stream is still busy %.0f s after ncclCommAbort returned (kernels that never "
         "stop)", limit);
  }
}

/* Buffers of ranks whose stream completed cleanly (anything else may still be in use, or its
 * context broken: left to the process's exit); a stream that ended in a CUDA error is
 * destroyed here, its error ignored, so the harness does not fail on it. */
static void release(gpu_world* w, nf_rank* st) {
  for (int i = 0; i < w->nlocal; i++) {
    nf_rank* x = &st[i];
    if (x->buf == NULL || x->phase != NF_DONE) continue;
    CUDA_OK(cudaSetDevice(x->r->dev));
    if (x->stream_rc == cudaSuccess) {
      CUDA_OK(cudaFree(x->buf));
    } else {
      (void)cudaStreamDestroy(x->r->stream);
      (void)cudaGetLastError();
      x->r->stream = NULL;
    }
    x->buf = NULL;
  }
}

int gpu_netfail_body(gpu_world* w, void* arg) {
  (void)arg;
  const int lead = w->loc[0].rank == 0;
  if (w->nranks < 2) {
    fprintf(stderr, "FAIL: suite netfail needs 2 or more ranks (a net connection to fail)\n");
    return GPU_FAIL;
  }
  double limit = gpu_env_int("WEFT_GPU_NETFAIL_S", 20);
  if (limit <= 0) limit = 20;
  nf_rank st[GPU_MAX_LOCAL];
  memset(st, 0, sizeof st);

  gpu_watchdog_arm("netfail: buffers and the AllReduce launch");
  for (int i = 0; i < w->nlocal; i++) {
    st[i].r = &w->loc[i];
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    CUDA_OK(cudaMalloc((void**)&st[i].buf, NETFAIL_COUNT * sizeof(float)));
    CUDA_OK(cudaMemsetAsync(st[i].buf, 0, NETFAIL_COUNT * sizeof(float), w->loc[i].stream));
  }
  if (lead)
    printf("netfail: one in-place AllReduce of %zu floats per rank, a failure injected by "
           "GdrSim (WEFT_GDRSIM_FAIL_SEND=%s WEFT_GDRSIM_FAIL_RECV=%s); bound %.0f s per phase "
           "(WEFT_GPU_NETFAIL_S)\n", NETFAIL_COUNT,
           getenv("WEFT_GDRSIM_FAIL_SEND") ? getenv("WEFT_GDRSIM_FAIL_SEND") : "",
           getenv("WEFT_GDRSIM_FAIL_RECV") ? getenv("WEFT_GDRSIM_FAIL_RECV") : "", limit);
  ncclResult_t res = gpu_group_start(w), call = ncclSuccess;
  int bad = -1;
  for (int i = 0; i < w->nlocal && res == ncclSuccess && call == ncclSuccess; i++) {
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    call = ncclAllReduce(st[i].buf, st[i].buf, NETFAIL_COUNT, ncclFloat32, ncclSum,
                         w->loc[i].comm, w->loc[i].stream);
    if (call != ncclSuccess) bad = i;
  }
  ncclResult_t end = gpu_group_end(w);
  if (res == ncclSuccess) res = call != ncclSuccess ? call : end;
  const double t0 = gpu_now_s();
  if (res != ncclSuccess) {
    ncclComm_t c = w->loc[bad >= 0 ? bad : 0].comm;
    if (coll_not_available(res, c)) {
      if (lead) printf("SKIP: weft's device data path is not available yet (ncclAllReduce on a "
                       "device communicator: %s)\n", ncclGetLastError(c));
      gpu_watchdog_disarm();
      return GPU_SKIP; /* the buffers go with the process */
    }
    fprintf(stderr, "FAIL rank %d: launching the AllReduce: %s returned %d (%s): %s\n",
            w->loc[bad >= 0 ? bad : 0].rank, call != ncclSuccess ? "ncclAllReduce" :
            "ncclGroupEnd", (int)res, ncclGetErrorString(res), ncclGetLastError(c));
    gpu_die(w);
  }

  gpu_watchdog_arm("netfail: the failure surfacing, ncclCommAbort and the streams");
  for (;;) {
    int left = 0;
    for (int i = 0; i < w->nlocal; i++) {
      nf_rank* x = &st[i];
      if (x->phase == NF_WAIT_ERROR) poll_error(x, t0, limit);
      if (x->phase == NF_ABORTING) poll_abort(x, limit);
      if (x->phase == NF_DRAINING) poll_drain(x, limit);
      left += x->phase != NF_DONE && x->phase != NF_FAILED;
    }
    if (left == 0) break;
    usleep(200);
  }

  /* One line per rank: what it saw and how long each phase took (FAIL lines said why). */
  int failed = 0, stuck = 0;
  for (int i = 0; i < w->nlocal; i++) {
    nf_rank* x = &st[i];
    char seen[160] = "no asynchronous error", aborted[64] = "", drained[120] = "";
    if (x->err != ncclSuccess)
      snprintf(seen, sizeof seen, "asynchronous error %d (%s) %.3f s after the launch",
               (int)x->err, ncclGetErrorString(x->err), x->err_s);
    if (x->drain_t0 > 0) snprintf(aborted, sizeof aborted, "; ncclCommAbort took %.3f s",
                                  x->abort_s);
    if (x->phase == NF_DONE)
      snprintf(drained, sizeof drained, "; the stream completed %.3f s after it (%s)",
               x->drain_s,
               x->stream_rc == cudaSuccess ? "no CUDA error" : cudaGetErrorString(x->stream_rc));
    printf("netfail rank %d (GPU %d): %s: %s%s%s%s%s\n", x->r->rank, x->r->dev,
           x->phase == NF_DONE ? "PASS" : "FAIL", seen, aborted, drained,
           x->last[0] ? "; last error: " : "", x->last);
    failed += x->phase != NF_DONE;
    /* A thread still inside ncclCommAbort, or kernels still running after it. */
    stuck += x->phase == NF_FAILED && x->abort_t0 > 0 &&
             (!__atomic_load_n(&x->abort_done, __ATOMIC_ACQUIRE) || x->drain_t0 > 0);
  }
  if (stuck) {
    /* Nothing may touch weft or CUDA now (exit handlers would wait for those kernels). */
    fprintf(stderr, "netfail: %d rank(s) stuck in or after ncclCommAbort: exiting at once\n",
            stuck);
    gpu_print_rerun(stderr, w->seed, NULL);
    fflush(NULL);
    _exit(GPU_FAIL);
  }
  release(w, st);
  gpu_watchdog_disarm();
  return failed ? GPU_FAIL : GPU_PASS;
}
