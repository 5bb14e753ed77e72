/* One-sided puts and signals on GPU communicators (label gpu; exits 77 without a GPU), checked
 * against a reference each target computes on the host:
 *  rounds: every rank puts random pieces (random datatype, size and offsets) of its source
 *          window (cudaMalloc) into its region of every rank's window, adds bare signals, and
 *          waits once for every rank's signals; the windows are copied back and compared; an
 *          AllReduce separates the rounds. With several ranks in this process the calls of all
 *          of them go in one group.
 *  graph:  each rank captures [put to the next rank, wait for one signal from the previous]
 *          on its stream and replays it REPLAYS times with new source data each time: every
 *          replay must deliver (the signal adds one, the wait consumes one, on the GPU).
 *  --timeout (2 processes): rank 1 signals once where rank 0 waits for two; rank 0's wait kernel
 *          gives up at WEFT_TIMEOUT_MS (2 s here), and ncclCommGetAsyncError then reports an
 *          error whose WARN names rank 1 as the peer whose signals did not come.
 * Usage: rma_gpu --procs N | --gpus N [--share] | --timeout */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_world.h"
#include "rma_ref.h"
#include "testutil.h"

#define ROUNDS 3
#define REPLAYS 4
#define SRC_BYTES (256 * 1024)
#define REGION (160 * 1024)

typedef struct {
  char* win;  /* device: nranks regions */
  char* src;  /* device */
  ncclWindow_t win_h, src_h;
  char* host; /* staging */
  char* expect;
  int64_t* sync; /* device: the AllReduce between rounds */
} rank_bufs;

#define NCCL_CHECK(r, call)                                                                 \
  do {                                                                                      \
    ncclResult_t e_ = (call);                                                               \
    if (e_ != ncclSuccess) {                                                                \
      fprintf(stderr, "FAIL rank %d: %s: %s: %s\n", (r)->rank, #call, ncclGetErrorString(e_), \
              ncclGetLastError((r)->comm));                                                 \
      return GPU_FAIL;                                                                      \
    }                                                                                       \
  } while (0)

static int barrier(gpu_world* w, rank_bufs* b) {
  if (gpu_group_start(w) != ncclSuccess) return GPU_FAIL;
  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* r = &w->loc[i];
    CUDA_OK(cudaSetDevice(r->dev));
    NCCL_CHECK(r, ncclAllReduce(b[i].sync, b[i].sync, 1, ncclInt64, ncclSum, r->comm, r->stream));
  }
  if (gpu_group_end(w) != ncclSuccess) return GPU_FAIL;
  return gpu_wait(w, "the AllReduce between rounds") ? GPU_FAIL : GPU_PASS;
}

static int check_window(const gpu_rank* r, rank_bufs* b, int nranks, const char* what) {
  size_t wbytes = (size_t)nranks * REGION;
  CUDA_OK(cudaSetDevice(r->dev));
  CUDA_OK(cudaMemcpy(b->host, b->win, wbytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < wbytes; i++)
    if (b->host[i] != b->expect[i]) {
      fprintf(stderr, "FAIL rank %d: %s: byte %zu (rank %zu's region) is %d, expected %d\n",
              r->rank, what, i, i / REGION, b->host[i], b->expect[i]);
      return GPU_FAIL;
    }
  return GPU_PASS;
}

static int rounds(gpu_world* w, rank_bufs* b) {
  int n = w->nranks;
  rma_ref_op ops[RMA_REF_MAX_OPS];
  char* ref = malloc(SRC_BYTES);
  ncclWaitSignalDesc_t* descs = calloc((size_t)n, sizeof *descs);
  if (!ref || !descs) return GPU_FAIL;
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < w->nlocal; i++) {
      gpu_rank* r = &w->loc[i];
      rma_ref_fill(b[i].host, SRC_BYTES,
                   rma_ref_mix(w->seed, 7, (uint64_t)r->rank + 1, (uint64_t)round + 1));
      CUDA_OK(cudaSetDevice(r->dev));
      CUDA_OK(cudaMemcpy(b[i].src, b[i].host, SRC_BYTES, cudaMemcpyHostToDevice));
    }
    if (gpu_group_start(w) != ncclSuccess) return GPU_FAIL;
    for (int i = 0; i < w->nlocal; i++) {
      gpu_rank* r = &w->loc[i];
      CUDA_OK(cudaSetDevice(r->dev));
      for (int k = 0; k < n; k++) {
        int t = (r->rank + 1 + k) % n;
        int nops = rma_ref_plan(w->seed, round, r->rank, t, REGION, SRC_BYTES, ops);
        for (int j = 0; j < nops; j++) {
          if (ops[j].signal_only)
            NCCL_CHECK(r, ncclSignal(t, 0, 0, 0, r->comm, r->stream));
          else
            NCCL_CHECK(r, ncclPutSignal(b[i].src + ops[j].src_off, ops[j].count, ops[j].type, t,
                                        b[i].win_h, (size_t)r->rank * REGION + ops[j].dst_off,
                                        0, 0, 0, r->comm, r->stream));
        }
      }
      for (int s = 0; s < n; s++) {
        int nops = rma_ref_plan(w->seed, round, s, r->rank, REGION, SRC_BYTES, ops);
        descs[s] = (ncclWaitSignalDesc_t){nops, s, 0, 0};
        rma_ref_fill(ref, SRC_BYTES, rma_ref_mix(w->seed, 7, (uint64_t)s + 1, (uint64_t)round + 1));
        for (int j = 0; j < nops; j++)
          if (!ops[j].signal_only)
            memcpy(b[i].expect + (size_t)s * REGION + ops[j].dst_off, ref + ops[j].src_off,
                   ops[j].count * rma_ref_type_size(ops[j].type));
      }
      NCCL_CHECK(r, ncclWaitSignal(n, descs, r->comm, r->stream));
    }
    if (gpu_group_end(w) != ncclSuccess) return GPU_FAIL;
    if (gpu_wait(w, "a round of puts and waits")) return GPU_FAIL;
    for (int i = 0; i < w->nlocal; i++) {
      char what[64];
      snprintf(what, sizeof what, "round %d", round);
      if (check_window(&w->loc[i], &b[i], n, what) != GPU_PASS) return GPU_FAIL;
    }
    if (barrier(w, b) != GPU_PASS) return GPU_FAIL;
  }
  free(ref);
  free(descs);
  return GPU_PASS;
}

/* Each rank's graph: put GRAPH_BYTES of its source to the next rank's region, wait for one
 * signal from the previous rank. */
#define GRAPH_BYTES (96 * 1024 + 8)
static int graph(gpu_world* w, rank_bufs* b) {
  int n = w->nranks;
  cudaGraphExec_t exec[GPU_MAX_LOCAL];
  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* r = &w->loc[i];
    int next = (r->rank + 1) % n, prev = (r->rank + n - 1) % n;
    CUDA_OK(cudaSetDevice(r->dev));
    cudaGraph_t g;
    CUDA_OK(cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeRelaxed));
    ncclResult_t p = ncclPutSignal(b[i].src, GRAPH_BYTES, ncclInt8, next, b[i].win_h,
                                   (size_t)r->rank * REGION, 0, 0, 0, r->comm, r->stream);
    ncclWaitSignalDesc_t d = {1, prev, 0, 0};
    ncclResult_t q = p == ncclSuccess ? ncclWaitSignal(1, &d, r->comm, r->stream) : p;
    CUDA_OK(cudaStreamEndCapture(r->stream, &g));
    NCCL_CHECK(r, p);
    NCCL_CHECK(r, q);
    CUDA_OK(cudaGraphInstantiate(&exec[i], g, 0));
    CUDA_OK(cudaGraphDestroy(g));
  }
  for (int rep = 0; rep < REPLAYS; rep++) {
    for (int i = 0; i < w->nlocal; i++) {
      gpu_rank* r = &w->loc[i];
      int prev = (r->rank + n - 1) % n;
      rma_ref_fill(b[i].host, GRAPH_BYTES,
                   rma_ref_mix(w->seed, 11, (uint64_t)r->rank + 1, (uint64_t)rep + 1));
      CUDA_OK(cudaSetDevice(r->dev));
      CUDA_OK(cudaMemcpy(b[i].src, b[i].host, GRAPH_BYTES, cudaMemcpyHostToDevice));
      rma_ref_fill(b[i].expect + (size_t)prev * REGION, GRAPH_BYTES,
           rma_ref_mix(w->seed, 11, (uint64_t)prev + 1, (uint64_t)rep + 1));
    }
    for (int i = 0; i < w->nlocal; i++) {
      CUDA_OK(cudaSetDevice(w->loc[i].dev));
      CUDA_OK(cudaGraphLaunch(exec[i], w->loc[i].stream));
    }
    if (gpu_wait(w, "a replay of the captured put and wait")) return GPU_FAIL;
    for (int i = 0; i < w->nlocal; i++) {
      char what[64];
      snprintf(what, sizeof what, "graph replay %d", rep);
      if (check_window(&w->loc[i], &b[i], n, what) != GPU_PASS) return GPU_FAIL;
    }
    if (barrier(w, b) != GPU_PASS) return GPU_FAIL;
  }
  for (int i = 0; i < w->nlocal; i++) CUDA_OK(cudaGraphExecDestroy(exec[i]));
  return GPU_PASS;
}

static int body(gpu_world* w, void* arg) {
  (void)arg;
  rank_bufs b[GPU_MAX_LOCAL];
  size_t wbytes = (size_t)w->nranks * REGION;
  memset(b, 0, sizeof b);
  if (gpu_group_start(w) != ncclSuccess) return GPU_FAIL;
  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* r = &w->loc[i];
    CUDA_OK(cudaSetDevice(r->dev));
    CUDA_OK(cudaMalloc((void**)&b[i].win, wbytes));
    CUDA_OK(cudaMalloc((void**)&b[i].src, SRC_BYTES));
    CUDA_OK(cudaMalloc((void**)&b[i].sync, sizeof(int64_t)));
    b[i].host = malloc(wbytes > SRC_BYTES ? wbytes : SRC_BYTES);
    b[i].expect = malloc(wbytes);
    if (!b[i].host || !b[i].expect) return GPU_FAIL;
    rma_ref_fill(b[i].expect, wbytes, rma_ref_mix(w->seed, 99, (uint64_t)r->rank + 1, 0));
    CUDA_OK(cudaMemcpy(b[i].win, b[i].expect, wbytes, cudaMemcpyHostToDevice));
    NCCL_CHECK(r, ncclCommWindowRegister(r->comm, b[i].win, wbytes, &b[i].win_h,
                                         NCCL_WIN_COLL_SYMMETRIC));
    NCCL_CHECK(r, ncclCommWindowRegister(r->comm, b[i].src, SRC_BYTES, &b[i].src_h,
                                         NCCL_WIN_COLL_SYMMETRIC));
  }
  if (gpu_group_end(w) != ncclSuccess) return GPU_FAIL;
  int rc = rounds(w, b);
  if (rc == GPU_PASS) rc = graph(w, b);
  if (rc != GPU_PASS) gpu_die(w);
  if (gpu_group_start(w) != ncclSuccess) return GPU_FAIL;
  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* r = &w->loc[i];
    NCCL_CHECK(r, ncclCommWindowDeregister(r->comm, b[i].src_h));
    NCCL_CHECK(r, ncclCommWindowDeregister(r->comm, b[i].win_h));
  }
  if (gpu_group_end(w) != ncclSuccess) return GPU_FAIL;
  for (int i = 0; i < w->nlocal; i++) {
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    CUDA_OK(cudaFree(b[i].win));
    CUDA_OK(cudaFree(b[i].src));
    CUDA_OK(cudaFree(b[i].sync));
    free(b[i].host);
    free(b[i].expect);
  }
  if (w->loc[0].rank == 0)
    printf("%d ranks: %d rounds and %d graph replays of puts and waits matched the reference\n",
           w->nranks, ROUNDS, REPLAYS);
  return GPU_PASS;
}

/* --timeout: see the top of the file. */
static int body_timeout(gpu_world* w, void* arg) {
  (void)arg;
  gpu_rank* r = &w->loc[0];
  char* win = NULL;
  ncclWindow_t win_h;
  CUDA_OK(cudaSetDevice(r->dev));
  CUDA_OK(cudaMalloc((void**)&win, 4096));
  NCCL_CHECK(r, ncclCommWindowRegister(r->comm, win, 4096, &win_h, NCCL_WIN_COLL_SYMMETRIC));
  if (r->rank == 1) {
    NCCL_CHECK(r, ncclSignal(0, 0, 0, 0, r->comm, r->stream));
    CUDA_OK(cudaStreamSynchronize(r->stream));
    sleep(5); /* alive past rank 0's timeout: the wait must end by the timeout, not a death */
  } else {
    ncclWaitSignalDesc_t d = {2, 1, 0, 0};
    double t0 = gpu_now_s();
    NCCL_CHECK(r, ncclWaitSignal(1, &d, r->comm, r->stream));
    CUDA_OK(cudaStreamSynchronize(r->stream)); /* the kernel gives up; the stream drains */
    double took = gpu_now_s() - t0;
    ncclResult_t async = ncclSuccess;
    NCCL_CHECK(r, ncclCommGetAsyncError(r->comm, &async));
    const char* e = ncclGetLastError(r->comm);
    printf("rank 0: wait for 2 signals from rank 1 ended after %.1f s: %s: %s\n", took,
           ncclGetErrorString(async), e ? e : "");
    if (async == ncclSuccess || !e || !strstr(e, "rank 1's signals") || took < 1.9) {
      fprintf(stderr, "FAIL rank 0: expected an async error naming rank 1's signals after >= 2 s\n");
      return GPU_FAIL;
    }
  }
  NCCL_CHECK(r, ncclCommAbort(r->comm)); /* rank 0's communicator has failed: abort, not destroy */
  r->comm = NULL;
  CUDA_OK(cudaFree(win));
  return GPU_PASS;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc == 2 && !strcmp(argv[1], "--timeout")) {
    setenv("WEFT_TIMEOUT_MS", "2000", 1);
    gpu_set_share(1);
    return gpu_run_procs(2, body_timeout, NULL, test_seed(0x0e51dedull), 60);
  }
  gpu_set_cmdline(argc, argv);
  setvbuf(stdout, NULL, _IOLBF, 0);
  int procs = 0, gpus = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--share")) gpu_set_share(1);
    else if (!strcmp(argv[i], "--procs") && i + 1 < argc) procs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--gpus") && i + 1 < argc) gpus = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s --procs N | --gpus N [--share] | --timeout\n", argv[0]);
      return 2;
    }
  }
  if ((procs > 0) == (gpus > 0) || gpus > GPU_MAX_LOCAL) {
    fprintf(stderr, "usage: %s --procs N | --gpus N (<= %d) [--share]\n", argv[0], GPU_MAX_LOCAL);
    return 2;
  }
  uint64_t seed = test_seed(0x0e51dedull);
  printf("seed %llu (WEFT_TEST_SEED)\n", (unsigned long long)seed);
  return procs ? gpu_run_procs(procs, body, NULL, seed, 200)
               : gpu_run_gpus(gpus, 1, body, NULL, seed);
}
