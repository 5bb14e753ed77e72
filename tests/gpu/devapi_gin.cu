/* A device-API kernel using ncclGin (the proxy GIN type) between ranks sharing GPU 0, compiled
 * against NVIDIA's 2.30.7 nccl_device.h (the binary contract core/gin speaks, issue 48) and run
 * on weft's libnccl.so.2 with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1, so the bytes travel
 * through the host proxy and a net plugin. Per rank, ITERS rounds on new random data:
 *   - one CTA per peer puts its block of the send window into the peer's receive window with
 *     ncclGin_SignalInc on signal 0 and ncclGin_CounterInc on counter 0 (a putValue of the
 *     round number rides on signal 1 into the peer's flag word);
 *   - every CTA 0 waits for nRanks - 1 more increments of signal 0 and of signal 1, then checks
 *     nothing; the host checks the receive window against a reference it computes alone and
 *     the flag words, and the kernel's counter-wait returned (local completions counted);
 *   - gin.flush before the kernel ends.
 * `--procs N`: N processes (2 by default). Exits 77 without a GPU, and with "SKIP:" and the
 * reason when the communicator reports no GIN (ncclCommQueryProperties.ginType none: a build
 * without CUDA, or host mode); ncclDevCommCreate sets the proxy up (core/gin/gin_comm.c, staged
 * through the built-in socket net here; docs/device-api.md, "GIN"). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl.h"
#include "nccl_device.h"
#include "gpu_world.h"
extern "C" {
#include "testutil.h"
}

#define BLOCK_ELEMS ((size_t)(1 << 16) + 5)
#define ITERS 4
#define THREADS 128

static uint64_t g_seed;

static float value_of(int src, int dst, int it, size_t i) {
  uint64_t s = g_seed ^ ((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^ ((uint64_t)it << 32) ^ i;
  s = test_rand(&s);
  return (float)(s % 2048);
}

/* CTA b puts block b (for peer b) and CTA 0 then waits for every peer's. */
__global__ void k_gin_exchange(ncclWindow_t send, ncclWindow_t recv, ncclWindow_t flags,
                               size_t block_bytes, uint32_t round, uint64_t sig0,
                               uint64_t sig1, ncclDevComm dc) {
  ncclGin gin{dc, 0};
  int peer = blockIdx.x;
  if (peer != dc.rank) {
    gin.put(ncclTeamWorld(dc), peer, recv, (size_t)dc.rank * block_bytes, send,
            (size_t)peer * block_bytes, block_bytes, ncclGin_SignalInc{0}, ncclGin_CounterInc{0},
            ncclCoopCta());
    gin.putValue(ncclTeamWorld(dc), peer, flags, (size_t)dc.rank * sizeof(uint32_t), round,
                 ncclGin_SignalInc{1}, ncclCoopCta());
    /* local completion of this CTA's put: the counter counts every CTA's */
    gin.flush(ncclCoopCta());
  }
  if (blockIdx.x == 0) {
    gin.waitSignal(ncclCoopCta(), 0, sig0 + (uint64_t)(dc.nRanks - 1));
    gin.waitSignal(ncclCoopCta(), 1, sig1 + (uint64_t)(dc.nRanks - 1));
    gin.waitCounter(ncclCoopCta(), 0, (uint64_t)(round + 1) * (uint64_t)(dc.nRanks - 1));
  }
}

static int run(gpu_world* w, void* arg) {
  (void)arg;
  int rank = w->loc[0].rank, nranks = w->nranks;
  ncclComm_t comm = w->loc[0].comm;
  cudaStream_t stream = w->loc[0].stream;
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  EXPECT_OK(ncclCommQueryProperties(comm, &props));
  if (props.ginType == NCCL_GIN_TYPE_NONE) {
    printf("SKIP: rank %d: the communicator reports no GIN (ginType none)\n", rank);
    return GPU_SKIP;
  }
  EXPECT_EQ_INT(props.ginType, NCCL_GIN_TYPE_PROXY);
  size_t block_bytes = BLOCK_ELEMS * sizeof(float);
  size_t win_bytes = block_bytes * (size_t)nranks;
  float *send, *recv;
  uint32_t* flags;
  EXPECT_OK(ncclMemAlloc((void**)&send, win_bytes));
  EXPECT_OK(ncclMemAlloc((void**)&recv, win_bytes));
  EXPECT_OK(ncclMemAlloc((void**)&flags, 4096));
  ncclWindow_t sendw, recvw, flagw;
  EXPECT_OK(ncclCommWindowRegister(comm, send, win_bytes, &sendw, NCCL_WIN_COLL_SYMMETRIC));
  EXPECT_OK(ncclCommWindowRegister(comm, recv, win_bytes, &recvw, NCCL_WIN_COLL_SYMMETRIC));
  EXPECT_OK(ncclCommWindowRegister(comm, flags, 4096, &flagw, NCCL_WIN_COLL_SYMMETRIC));
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.ginConnectionType = NCCL_GIN_CONNECTION_FULL;
  reqs.ginContextCount = 1;
  reqs.ginSignalCount = 2;
  reqs.ginCounterCount = 1;
  ncclDevComm dc;
  EXPECT_OK(ncclDevCommCreate(comm, &reqs, &dc));
  float* one;
  CUDA_OK(cudaMalloc((void**)&one, sizeof(float)));
  float* host = (float*)malloc(win_bytes);
  uint32_t hflags[64];
  EXPECT(host != NULL && nranks <= 64);
  for (int it = 0; it < ITERS; it++) {
    for (int p = 0; p < nranks; p++)
      for (size_t i = 0; i < BLOCK_ELEMS; i++) host[(size_t)p * BLOCK_ELEMS + i] = value_of(rank, p, it, i);
    CUDA_OK(cudaMemcpy(send, host, win_bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(recv, 0, win_bytes));
    /* every rank's data is in place before any put */
    EXPECT_OK(ncclAllReduce(one, one, 1, ncclFloat, ncclSum, comm, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    uint64_t done = (uint64_t)it * (uint64_t)(nranks - 1);
    k_gin_exchange<<<nranks, THREADS, 0, stream>>>(sendw, recvw, flagw, block_bytes,
                                                   (uint32_t)it, done, done, dc);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaMemcpy(host, recv, win_bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hflags, flags, sizeof(uint32_t) * (size_t)nranks, cudaMemcpyDeviceToHost));
    for (int p = 0; p < nranks; p++) {
      if (p == rank) continue;
      EXPECT_EQ_INT(hflags[p], it);
      for (size_t i = 0; i < BLOCK_ELEMS; i++) {
        float want = value_of(p, rank, it, i);
        if (host[(size_t)p * BLOCK_ELEMS + i] != want) {
          fprintf(stderr, "rank %d round %d: element %zu from rank %d is %g, expected %g\n", rank,
                  it, i, p, host[(size_t)p * BLOCK_ELEMS + i], want);
          return 1;
        }
      }
    }
  }
  EXPECT_OK(ncclDevCommDestroy(comm, &dc));
  EXPECT_OK(ncclCommWindowDeregister(comm, sendw));
  EXPECT_OK(ncclCommWindowDeregister(comm, recvw));
  EXPECT_OK(ncclCommWindowDeregister(comm, flagw));
  EXPECT_OK(ncclMemFree(send));
  EXPECT_OK(ncclMemFree(recv));
  EXPECT_OK(ncclMemFree(flags));
  CUDA_OK(cudaFree(one));
  free(host);
  printf("rank %d: %d GIN put + signal + putValue + counter rounds ok\n", rank, ITERS);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  g_seed = test_seed(0x67696e6b65726eull);
  int n = argc == 3 && strcmp(argv[1], "--procs") == 0 ? atoi(argv[2]) : 2;
  if (n < 2 || n > 8) {
    fprintf(stderr, "usage: %s [--procs N]  (2 <= N <= 8)\n", argv[0]);
    return 2;
  }
  printf("seed 0x%llx, NCCL headers %d, %d ranks in as many processes on GPU 0\n",
         (unsigned long long)g_seed, NCCL_VERSION_CODE, n);
  gpu_set_share(1); /* every rank on GPU 0 */
  return gpu_run_procs(n, run, NULL, g_seed, 280);
}
