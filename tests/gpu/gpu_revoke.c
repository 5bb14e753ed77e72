/* ncclCommRevoke on device-mode communicators (issue 40), two processes sharing GPU 0: rank 0's
 * AllReduce kernel waits for rank 1, which never joins it; rank 0 revokes, and its stream must
 * drain within seconds (the kernel stops; WEFT_TIMEOUT_MS is 60 s). Then GetAsyncError says
 * ncclSuccess, an AllReduce is refused, both ranks split the revoked communicator, and the
 * split one's AllReduce gives exact sums. Skips (77) without a CUDA device.
 *
 * Usage: gpu_revoke */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define COUNT 100000
#define DRAIN_MS 5000

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define CUDA_OK(call) EXPECT((call) == cudaSuccess)

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
  for (int i = 0; i < COUNT; i++) h[i] = (int32_t)((seed + (uint64_t)i * 13 + (uint64_t)rank * 7) % 1000);
  CUDA_OK(cudaMemcpy(d, h, COUNT * sizeof *h, cudaMemcpyHostToDevice));
  EXPECT_OK(ncclAllReduce(d, d, COUNT, ncclInt32, ncclSum, sub, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h, d, COUNT * sizeof *h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < COUNT; i++) {
    int32_t want = 0;
    for (int r = 0; r < nranks; r++) want += (int32_t)((seed + (uint64_t)i * 13 + (uint64_t)r * 7) % 1000);
    EXPECT_EQ_INT(h[i], want);
  }
  EXPECT_OK(ncclCommDestroy(comm));
  EXPECT_OK(ncclCommDestroy(sub));
  CUDA_OK(cudaFree(d));
  free(h);
  return 0;
}

int main(void) {
  test_require_weft_lib();
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  fflush(NULL);
  pid_t p = fork(); /* probe in a child: the ranks are forked before any CUDA call here */
  if (p == 0) {
    int n = 0;
    _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : TEST_SKIP_RC);
  }
  int st = 0;
  waitpid(p, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    printf("skip: no usable CUDA device\n");
    return TEST_SKIP_RC;
  }
  printf("seed 0x%llx (WEFT_TEST_SEED replays it)\n", (unsigned long long)test_seed(0x9e70c));
  return test_fork_ranks(2, rank_main, NULL, 120);
}
