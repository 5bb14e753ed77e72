/* Device-API kernels, compiled against the nccl_device.h of one NCCL release (NVIDIA's 2.30.7
 * or 2.32.6 wheel headers: the binary contract) and run on weft's libnccl.so.2, every rank on
 * GPU 0 (issue 39). Per rank: two ncclMemAlloc windows, a device communicator with one LSA
 * barrier per block, and
 *   - an LSA all-reduce kernel (barrier, sum every peer's send window through
 *     ncclGetLsaPointer, store the sums into every peer's receive window, barrier) on new
 *     random data each iteration;
 *   - a fused kernel: local compute on the send window, an LSA barrier, then the all-reduce
 *     of the computed values;
 *   - the all-reduce captured in a CUDA graph once and replayed with new data each time (the
 *     barrier epochs live in GPU memory and carry over from replay to replay);
 *   - the addresses kernels compute (ncclGetLsaPointer, ncclGetPeerPointer) against
 *     ncclGetLsaDevicePointer / ncclGetPeerDevicePointer on the host, and ncclFindWindow
 *     (the window table) against the handles ncclCommWindowRegister gave.
 * Data are small random integers stored as floats, so sums are exact and every rank checks
 * them against a host reference it computes alone. Ranks (gpu_one_gpu.h): `--inproc N` (N ranks
 * on GPU 0 driven by one thread) or `--procs N` (N processes on GPU 0). Exits 77 without a
 * usable GPU. A last argument `--time` also times the LSA all-reduce kernel of 8 B and 1 MiB
 * after the checks (a benchmark line, nothing asserted on it): CUDA events around back-to-back
 * launches on every rank's stream. Nsight Compute cannot time it with two ranks: it serialises
 * kernels, and each rank's kernel waits at the barrier for the other's. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "nccl.h"
#include "nccl_device.h"
#include "gpu_one_gpu.h"
#include "gpu_world.h"
extern "C" {
#include "testutil.h"
}

#define MAXR 8
#define CTAS 4
#define THREADS 256
#define COUNT ((size_t)(1 << 18) + 77)
#define ITERS 4
#define REPLAYS 5

/* Every element i < count of the result is owned by one thread of one rank: it reads the
 * element from each peer's send window and writes the sum into each peer's receive window. */
__device__ void lsa_allreduce_body(ncclWindow_t send, ncclWindow_t recv, size_t count,
                                   const ncclDevComm& dc) {
  int n = dc.lsaSize, me = dc.lsaRank;
  size_t first = threadIdx.x + (size_t)blockDim.x * (blockIdx.x + (size_t)gridDim.x * me);
  size_t step = (size_t)blockDim.x * gridDim.x * n;
  for (size_t i = first; i < count; i += step) {
    float sum = 0.0f;
    for (int p = 0; p < n; p++) sum += ((const float*)ncclGetLsaPointer(send, 0, p))[i];
    for (int p = 0; p < n; p++) ((float*)ncclGetLsaPointer(recv, 0, p))[i] = sum;
  }
}

__global__ void k_allreduce(ncclWindow_t send, ncclWindow_t recv, size_t count, ncclDevComm dc) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier,
                                         (uint32_t)blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire); /* every peer's send data is there */
  lsa_allreduce_body(send, recv, count, dc);
  bar.sync(ncclCoopCta(), cuda::memory_order_release); /* every peer has read and written */
}

/* x = 3 x - rank on this rank's own part of its send window, then the all-reduce of x. */
__global__ void k_fused(ncclWindow_t send, ncclWindow_t recv, size_t count, ncclDevComm dc) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier,
                                         (uint32_t)blockIdx.x};
  float* mine = (float*)ncclGetLocalPointer(send, 0);
  for (size_t i = threadIdx.x + (size_t)blockDim.x * blockIdx.x; i < count;
       i += (size_t)blockDim.x * gridDim.x)
    mine[i] = 3.0f * mine[i] - (float)dc.rank;
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); /* every rank's compute is done */
  lsa_allreduce_body(send, recv, count, dc);
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

__global__ void k_pointers(ncclWindow_t w, size_t offset, ncclDevComm dc, void** out) {
  for (int p = 0; p < dc.lsaSize; p++) out[p] = ncclGetLsaPointer(w, offset, p);
  for (int p = 0; p < dc.nRanks; p++) out[MAXR + p] = ncclGetPeerPointer(w, offset, p);
}

/* The windows holding a and b, looked up in the device communicator's window table. */
__global__ void k_find(ncclDevComm dc, const void* a, const void* b, ncclWindow_t* out) {
  ncclWindow_t wa = ncclFindWindow(ncclCoopWarp(), dc, a);
  ncclWindow_t wb = ncclFindWindow(ncclCoopWarp(), dc, b);
  if (threadIdx.x == 0) {
    out[0] = wa;
    out[1] = wb;
  }
}

static uint64_t g_seed;

static float val(int it, int r, size_t i) {
  uint64_t x = g_seed ^ ((uint64_t)it << 52) ^ ((uint64_t)r << 44) ^ (i * 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (float)((int)(x % 2001) - 1000);
}

typedef struct {
  int n, nlocal, first;
  ncclComm_t comm[MAXR];
  cudaStream_t stream[MAXR];
  float *send[MAXR], *recv[MAXR];
  ncclWindow_t sendw[MAXR], recvw[MAXR];
  ncclDevComm dc[MAXR];
} world;

static float* g_host;
static int g_time;

static void put_data(world* w, int it) {
  for (int l = 0; l < w->nlocal; l++) {
    for (size_t i = 0; i < COUNT; i++) g_host[i] = val(it, w->first + l, i);
    CUDA_OK(cudaMemcpy(w->send[l], g_host, COUNT * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(w->recv[l], 0xff, COUNT * sizeof(float)));
  }
  CUDA_OK(cudaDeviceSynchronize());
}

/* Each rank's receive window against sum_p f(val(it, p, i)). */
static void check(world* w, int it, int fused, const char* what) {
  for (int l = 0; l < w->nlocal; l++) {
    CUDA_OK(cudaMemcpy(g_host, w->recv[l], COUNT * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < COUNT; i++) {
      float want = 0.0f;
      for (int p = 0; p < w->n; p++) want += fused ? 3.0f * val(it, p, i) - (float)p : val(it, p, i);
      if (g_host[i] != want) {
        fprintf(stderr, "FAIL rank %d: %s, iteration %d: element %zu is %g, expected %g (seed "
                "0x%llx)\n", w->first + l, what, it, i, g_host[i], want,
                (unsigned long long)g_seed);
        exit(1);
      }
    }
  }
}

/* Kernels of every local rank, each on its own stream (they wait for each other). */
static void launch_all(world* w, int fused) {
  for (int l = 0; l < w->nlocal; l++) {
    if (fused)
      k_fused<<<CTAS, THREADS, 0, w->stream[l]>>>(w->sendw[l], w->recvw[l], COUNT, w->dc[l]);
    else
      k_allreduce<<<CTAS, THREADS, 0, w->stream[l]>>>(w->sendw[l], w->recvw[l], COUNT, w->dc[l]);
    CUDA_OK(cudaGetLastError());
  }
  for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaStreamSynchronize(w->stream[l]));
}

static void check_pointers(world* w) {
  void** d;
  CUDA_OK(cudaMalloc((void**)&d, 2 * MAXR * sizeof(void*)));
  for (int l = 0; l < w->nlocal; l++) {
    size_t off = 4 * (size_t)(77 + l);
    k_pointers<<<1, 1, 0, w->stream[l]>>>(w->recvw[l], off, w->dc[l], d);
    CUDA_OK(cudaStreamSynchronize(w->stream[l]));
    void* got[2 * MAXR];
    CUDA_OK(cudaMemcpy(got, d, sizeof got, cudaMemcpyDeviceToHost));
    for (int p = 0; p < w->n; p++) {
      void *lsa = NULL, *peer = NULL;
      EXPECT_OK(ncclGetLsaDevicePointer(w->recvw[l], off, p, &lsa));
      EXPECT_OK(ncclGetPeerDevicePointer(w->recvw[l], off, p, &peer));
      if (got[p] != lsa || got[MAXR + p] != peer) {
        fprintf(stderr, "FAIL rank %d: peer %d: the kernel computes %p (LSA) and %p (peer), the "
                "host answers %p and %p\n", w->first + l, p, got[p], got[MAXR + p], lsa, peer);
        exit(1);
      }
    }
    /* The window table: a byte inside each window finds that window. */
    ncclWindow_t* f = (ncclWindow_t*)d;
    k_find<<<1, 32, 0, w->stream[l]>>>(w->dc[l], (char*)w->send[l] + 100,
                                       (char*)w->recv[l] + COUNT * sizeof(float) - 1, f);
    CUDA_OK(cudaStreamSynchronize(w->stream[l]));
    ncclWindow_t found[2];
    CUDA_OK(cudaMemcpy(found, f, sizeof found, cudaMemcpyDeviceToHost));
    if (found[0] != w->sendw[l] || found[1] != w->recvw[l]) {
      fprintf(stderr, "FAIL rank %d: ncclFindWindow found %p and %p, the windows are %p and %p\n",
              w->first + l, (void*)found[0], (void*)found[1], (void*)w->sendw[l],
              (void*)w->recvw[l]);
      exit(1);
    }
  }
  CUDA_OK(cudaFree(d));
}

/* Mean time per LSA all-reduce of `count` floats: every rank's kernels launched back to back on
 * its own stream, all streams starting at one event; the span ends at the last stream's end. */
static void time_allreduce(world* w, size_t count, int iters) {
  cudaEvent_t start, end[MAXR];
  CUDA_OK(cudaEventCreate(&start));
  for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaEventCreate(&end[l]));
  for (int pass = 0; pass < 2; pass++) { /* the first pass warms up */
    int n = pass ? iters : iters / 10 + 1;
    CUDA_OK(cudaEventRecord(start, w->stream[0]));
    for (int l = 1; l < w->nlocal; l++) CUDA_OK(cudaStreamWaitEvent(w->stream[l], start, 0));
    for (int k = 0; k < n; k++)
      for (int l = 0; l < w->nlocal; l++)
        k_allreduce<<<CTAS, THREADS, 0, w->stream[l]>>>(w->sendw[l], w->recvw[l], count,
                                                         w->dc[l]);
    CUDA_OK(cudaGetLastError());
    for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaEventRecord(end[l], w->stream[l]));
    for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaEventSynchronize(end[l]));
  }
  float span = 0;
  for (int l = 0; l < w->nlocal; l++) {
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, start, end[l]));
    if (ms > span) span = ms;
  }
  printf("time: LSA all-reduce %zu B, %d ranks on one GPU, headers %d: %.2f us per call "
         "(%d calls back to back, CUDA events)\n", count * sizeof(float), w->n, NCCL_VERSION_CODE,
         1000.0 * span / iters, iters);
  CUDA_OK(cudaEventDestroy(start));
  for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaEventDestroy(end[l]));
}

static int run(world* w) {
  g_host = (float*)malloc(COUNT * sizeof(float));
  EXPECT(g_host != NULL);
  for (int l = 0; l < w->nlocal; l++) {
    CUDA_OK(cudaStreamCreateWithFlags(&w->stream[l], cudaStreamNonBlocking));
    ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
    EXPECT_OK(ncclCommQueryProperties(w->comm[l], &props));
    EXPECT(props.deviceApiSupport);
    EXPECT_EQ_INT(props.nLsaTeams, 1);
    EXPECT_EQ_INT(props.multimemSupport, 0);
    EXPECT_OK(ncclMemAlloc((void**)&w->send[l], COUNT * sizeof(float)));
    EXPECT_OK(ncclMemAlloc((void**)&w->recv[l], COUNT * sizeof(float)));
  }
  EXPECT_OK(ncclGroupStart());
  for (int l = 0; l < w->nlocal; l++) {
    EXPECT_OK(ncclCommWindowRegister(w->comm[l], w->send[l], COUNT * sizeof(float), &w->sendw[l],
                                     NCCL_WIN_COLL_SYMMETRIC));
    EXPECT_OK(ncclCommWindowRegister(w->comm[l], w->recv[l], COUNT * sizeof(float), &w->recvw[l],
                                     NCCL_WIN_COLL_SYMMETRIC));
  }
  EXPECT_OK(ncclGroupEnd());
  EXPECT_OK(ncclGroupStart());
  for (int l = 0; l < w->nlocal; l++) {
    ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    reqs.lsaBarrierCount = CTAS;
    EXPECT_OK(ncclDevCommCreate(w->comm[l], &reqs, &w->dc[l]));
  }
  EXPECT_OK(ncclGroupEnd());
  for (int l = 0; l < w->nlocal; l++) {
    EXPECT_EQ_INT(w->dc[l].rank, w->first + l);
    EXPECT_EQ_INT(w->dc[l].lsaSize, w->n);
  }
  check_pointers(w);
  int it = 0;
  for (int k = 0; k < ITERS; k++, it++) {
    put_data(w, it);
    launch_all(w, 0);
    check(w, it, 0, "LSA all-reduce");
  }
  for (int k = 0; k < ITERS; k++, it++) {
    put_data(w, it);
    launch_all(w, 1);
    check(w, it, 1, "fused compute + LSA barrier + all-reduce");
  }
  /* One graph per local rank, each replayed on its own stream. */
  cudaGraphExec_t exec[MAXR];
  for (int l = 0; l < w->nlocal; l++) {
    cudaGraph_t g;
    CUDA_OK(cudaStreamBeginCapture(w->stream[l], cudaStreamCaptureModeThreadLocal));
    k_allreduce<<<CTAS, THREADS, 0, w->stream[l]>>>(w->sendw[l], w->recvw[l], COUNT, w->dc[l]);
    CUDA_OK(cudaStreamEndCapture(w->stream[l], &g));
    CUDA_OK(cudaGraphInstantiate(&exec[l], g, 0));
    CUDA_OK(cudaGraphDestroy(g));
  }
  for (int k = 0; k < REPLAYS; k++, it++) {
    put_data(w, it);
    for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaGraphLaunch(exec[l], w->stream[l]));
    for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaStreamSynchronize(w->stream[l]));
    check(w, it, 0, "graph replay of the LSA all-reduce");
  }
  for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaGraphExecDestroy(exec[l]));
  if (g_time) {
    time_allreduce(w, 2, 2000);
    time_allreduce(w, ((size_t)1 << 20) / sizeof(float), 500);
  }
  EXPECT_OK(ncclGroupStart());
  for (int l = 0; l < w->nlocal; l++) {
    EXPECT_OK(ncclDevCommDestroy(w->comm[l], &w->dc[l]));
    EXPECT_OK(ncclCommWindowDeregister(w->comm[l], w->sendw[l]));
    EXPECT_OK(ncclCommWindowDeregister(w->comm[l], w->recvw[l]));
  }
  EXPECT_OK(ncclGroupEnd());
  for (int l = 0; l < w->nlocal; l++) {
    EXPECT_OK(ncclMemFree(w->send[l]));
    EXPECT_OK(ncclMemFree(w->recv[l]));
    EXPECT_OK(ncclCommDestroy(w->comm[l]));
    CUDA_OK(cudaStreamDestroy(w->stream[l]));
  }
  free(g_host);
  printf("rank %d: %d all-reduce, %d fused, %d graph replays ok\n", w->first, ITERS, ITERS,
         REPLAYS);
  return 0;
}

static int body(ncclComm_t* comms, int nlocal, int first, int nranks, void* arg) {
  (void)arg;
  static world w;
  memset(&w, 0, sizeof w);
  w.n = nranks;
  w.nlocal = nlocal;
  w.first = first;
  memcpy(w.comm, comms, (size_t)nlocal * sizeof *comms);
  return run(&w);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  g_seed = test_seed(0x6b65726e656c73ull);
  g_time = argc == 4 && strcmp(argv[3], "--time") == 0;
  int procs;
  int n = gpu_one_gpu_args(g_time ? 3 : argc, argv, MAXR, &procs);
  if (n == 0) return 2;
  printf("seed 0x%llx, NCCL headers %d, %d ranks %s\n", (unsigned long long)g_seed,
         NCCL_VERSION_CODE, n, procs ? "in as many processes" : "in this process");
  return gpu_one_gpu_run(n, procs, body, NULL, 280);
}
