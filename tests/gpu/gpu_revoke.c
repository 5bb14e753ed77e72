/* ncclCommRevoke on device-mode communicators (issue 40), two processes sharing GPU 0: after one
 * AllReduce together (the connections made), rank 0's next AllReduce kernel waits for rank 1,
 * which never joins it; rank 0 revokes, and its stream must
 * drain within seconds (the kernel stops; WEFT_TIMEOUT_MS is 60 s). Then GetAsyncError says
 * ncclSuccess, an AllReduce is refused, both ranks split the revoked communicator, and the
 * split one's AllReduce gives exact sums. Skips (77) without a CUDA device.
 *
 * Usage: gpu_revoke */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gpu_world.h"
#include "testutil.h"

#define COUNT 100000
#define DRAIN_MS 5000

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}


/* An AllReduce of values drawn from seed over comm, in place in d, checked exactly. */
static void fill_and_sum(int32_t* d, int32_t* h, cudaStream_t s, ncclComm_t comm, uint64_t seed,
                         int rank, int nranks) {
  for (int i = 0; i < COUNT; i++) h[i] = (int32_t)((seed + (uint64_t)i * 13 + (uint64_t)rank * 7) % 1000);
  CUDA_OK(cudaMemcpy(d, h, COUNT * sizeof *h, cudaMemcpyHostToDevice));
  EXPECT_OK(ncclAllReduce(d, d, COUNT, ncclInt32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h, d, COUNT * sizeof *h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < COUNT; i++) {
    int32_t want = 0;
    for (int r = 0; r < nranks; r++) want += (int32_t)((seed + (uint64_t)i * 13 + (uint64_t)r * 7) % 1000);
    EXPECT_EQ_INT(h[i], want);
  }
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  uint64_t seed = test_seed(0x9e70c);
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int32_t *d, *h = malloc(COUNT * sizeof *h);
  EXPECT(h);
  CUDA_OK(cudaMalloc((void**)&d, COUNT * sizeof *d));
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  /* One AllReduce together first: connections are made by the first operation that needs
   * them, on both ranks, so without it rank 0's launch below would wait in the setup (on the
   * host) for rank 1 instead of launching a kernel that waits. */
  fill_and_sum(d, h, s, comm, seed ^ 0x77, rank, nranks);
  if (rank == 0) {
    EXPECT_OK(ncclAllReduce(d, d, COUNT, ncclInt32, ncclSum, comm, s)); /* rank 1 never joins */
    usleep(300 * 1000);
    EXPECT(cudaStreamQuery(s) == cudaErrorNotReady); /* the kernel waits for rank 1 */
    double t0 = now_ms();
    EXPECT_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    CUDA_OK(cudaStreamSynchronize(s));
    double took = now_ms() - t0;
    printf("rank 0: revoke and the stream's drain took %.0f ms\n", took);
    EXPECT(took < DRAIN_MS);
  } else {
    usleep(800 * 1000);
    EXPECT_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
  }
  ncclResult_t as;
  EXPECT_OK(ncclCommGetAsyncError(comm, &as));
  EXPECT_EQ_INT(as, ncclSuccess);
  EXPECT_RES(ncclAllReduce(d, d, COUNT, ncclInt32, ncclSum, comm, s), ncclInvalidUsage);
  ncclComm_t sub;
  EXPECT_OK(ncclCommSplit(comm, 0, rank, &sub, NULL));
  fill_and_sum(d, h, s, sub, seed, rank, nranks);
  EXPECT_OK(ncclCommDestroy(comm));
  EXPECT_OK(ncclCommDestroy(sub));
  CUDA_OK(cudaFree(d));
  free(h);
  return 0;
}

/* A CUDA device is usable. */
int main(void) {
  test_require_weft_lib();
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  /* probed in a child: the ranks are forked before any CUDA call here */
  if (!gpu_have_device()) { /* it prints why */
    return TEST_SKIP_RC;
  }
  printf("seed 0x%llx (WEFT_TEST_SEED replays it)\n", (unsigned long long)test_seed(0x9e70c));
  return test_fork_ranks(2, rank_main, NULL, 120);
}
