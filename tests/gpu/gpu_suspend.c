/* ncclCommSuspend / ncclCommResume / ncclCommMemStats on device-mode communicators (issue 40),
 * every rank a process on GPU 0.
 *
 * "cycle": AllReduces of a Simple-sized and an LL-sized buffer make the p2p FIFOs, and are
 * captured into a CUDA graph, replayed once. Then a few times: suspend (every rank);
 * cudaMemGetInfo's used memory of the GPU must drop by the sum over ranks of MemStats' Suspend
 * (within one 2 MiB granule per rank); Suspended is 1 and an AllReduce is refused with
 * ncclInvalidUsage; resume; the used memory is back (same bound); the graph captured before the
 * first suspend is replayed on new inputs, and a launched AllReduce runs: exact sums each time.
 * Persist + Suspend == Total throughout. With 2 ranks Suspend must be > 0.
 * "refuse" (run with NCCL_CUMEM_ENABLE=0, 2 ranks): the FIFOs are cudaMalloc memory, so suspend
 * is refused on every rank with ncclInvalidUsage, MemStats' Suspend is 0, and the communicator
 * still works. "threads": the ranks are threads of one process (FIFOs shared by address).
 * Skips (77) without a CUDA device.
 *
 * Usage: gpu_suspend NRANKS cycle|refuse [threads] */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpu_world.h"
#include "testutil.h"

#define BIG 1048576 /* int32 elements: Simple */
#define SMALL 1000  /* LL */
#define CYCLES 3
#define GRANULE (2ull << 20)
#define MAX_RANKS 8


/* Shared between the forked ranks (mapped before the fork): a barrier that needs no
 * communicator, and each rank's MemStats Suspend. */
typedef struct {
  volatile int arrived;
  volatile uint64_t suspend[MAX_RANKS];
} shared_t;

static shared_t* shared;
static int refuse_mode;

static void barrier(int nranks, int* round) {
  (*round)++;
  __atomic_add_fetch(&shared->arrived, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&shared->arrived, __ATOMIC_SEQ_CST) < *round * nranks) usleep(200);
}

static int32_t value(uint64_t seed, int rank, size_t i) {
  return (int32_t)((seed * 7 + (uint64_t)rank * 1000003 + i * 13) % 100000);
}

static void fill(int32_t* d, int32_t* h, size_t n, uint64_t seed, int rank) {
  for (size_t i = 0; i < n; i++) h[i] = value(seed, rank, i);
  CUDA_OK(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
}

static void check(const int32_t* d, int32_t* h, size_t n, uint64_t seed, int nranks,
                  const char* what) {
  CUDA_OK(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i++) {
    int32_t want = 0;
    for (int r = 0; r < nranks; r++) want += value(seed, r, i);
    if (h[i] != want) {
      printf("%s: element %zu is %d, want %d\n", what, i, h[i], want);
      EXPECT_EQ_INT(h[i], want);
    }
  }
}

static uint64_t used_bytes(void) {
  size_t fr = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&fr, &total));
  return (uint64_t)(total - fr);
}

static void stats(ncclComm_t comm, uint64_t* suspend, uint64_t* persist, uint64_t* flag) {
  uint64_t total = 0;
  EXPECT_OK(ncclCommMemStats(comm, ncclStatGpuMemSuspend, suspend));
  EXPECT_OK(ncclCommMemStats(comm, ncclStatGpuMemPersist, persist));
  EXPECT_OK(ncclCommMemStats(comm, ncclStatGpuMemTotal, &total));
  EXPECT_OK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, flag));
  EXPECT_EQ_INT(total, *suspend + *persist);
}

static int64_t diff(uint64_t a, uint64_t b) { return (int64_t)a - (int64_t)b; }

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef struct {
  int32_t *big_in, *big_out, *small_in, *small_out, *h;
  cudaStream_t s;
  int rank, nranks;
} bufs_t;

/* New inputs from the next seed of st, the graph replayed, both sums checked. */
static void replay(const bufs_t* b, cudaGraphExec_t exec, uint64_t* st, const char* what) {
  uint64_t seed = test_rand(st);
  fill(b->big_in, b->h, BIG, seed, b->rank);
  fill(b->small_in, b->h, SMALL, seed + 1, b->rank);
  CUDA_OK(cudaGraphLaunch(exec, b->s));
  CUDA_OK(cudaStreamSynchronize(b->s));
  printf("rank %d: %s\n", b->rank, what);
  check(b->big_out, b->h, BIG, seed, b->nranks, "graph, Simple");
  check(b->small_out, b->h, SMALL, seed + 1, b->nranks, "graph, LL");
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  uint64_t st = test_seed(0x5a5be4d); /* every rank draws the same seeds */
  int round = 0;
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int32_t *big_in, *big_out, *small_in, *small_out, *h = malloc(BIG * sizeof *h);
  EXPECT(h);
  CUDA_OK(cudaMalloc((void**)&big_in, BIG * sizeof(int32_t)));
  CUDA_OK(cudaMalloc((void**)&big_out, BIG * sizeof(int32_t)));
  CUDA_OK(cudaMalloc((void**)&small_in, SMALL * sizeof(int32_t)));
  CUDA_OK(cudaMalloc((void**)&small_out, SMALL * sizeof(int32_t)));
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));

  /* Launched once (the connections are made), then captured. */
  uint64_t seed = test_rand(&st);
  fill(big_in, h, BIG, seed, rank);
  fill(small_in, h, SMALL, seed + 1, rank);
  EXPECT_OK(ncclAllReduce(big_in, big_out, BIG, ncclInt32, ncclSum, comm, s));
  EXPECT_OK(ncclAllReduce(small_in, small_out, SMALL, ncclInt32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  check(big_out, h, BIG, seed, nranks, "launched, Simple");
  check(small_out, h, SMALL, seed + 1, nranks, "launched, LL");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EXPECT_OK(ncclAllReduce(big_in, big_out, BIG, ncclInt32, ncclSum, comm, s));
  EXPECT_OK(ncclAllReduce(small_in, small_out, SMALL, ncclInt32, ncclSum, comm, s));
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  CUDA_OK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  bufs_t b = {big_in, big_out, small_in, small_out, h, s, rank, nranks};
  replay(&b, exec, &st, "graph replayed before suspend");

  uint64_t suspend = 0, persist = 0, flag = 1;
  stats(comm, &suspend, &persist, &flag);
  printf("rank %d: MemStats Suspend %llu, Persist %llu bytes, Suspended %llu\n", rank,
         (unsigned long long)suspend, (unsigned long long)persist, (unsigned long long)flag);
  EXPECT_EQ_INT(flag, 0);

  if (refuse_mode) {
    EXPECT_EQ_INT(suspend, 0);
    EXPECT(persist > 0);
    EXPECT_RES(ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
    stats(comm, &suspend, &persist, &flag);
    EXPECT_EQ_INT(flag, 0);
    replay(&b, exec, &st, "graph replayed after a refused suspend");
  } else {
    if (nranks > 1) EXPECT(suspend > 0);
    shared->suspend[rank] = suspend;
    barrier(nranks, &round); /* every rank's FIFOs made, nothing else allocating */
    uint64_t want = 0;
    for (int r = 0; r < nranks; r++) want += shared->suspend[r];
    int64_t slack = (int64_t)(GRANULE * (uint64_t)nranks);
    for (int k = 0; k < CYCLES; k++) {
      uint64_t before = used_bytes();
      barrier(nranks, &round);
      double t0 = now_ms();
      EXPECT_OK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM)); /* returns once every rank released */
      double t_suspend = now_ms() - t0;
      uint64_t during = used_bytes();
      barrier(nranks, &round); /* nobody resumes before every rank measured */
      uint64_t s2 = 0, p2 = 0;
      stats(comm, &s2, &p2, &flag);
      EXPECT_EQ_INT(flag, 1);
      EXPECT_EQ_INT(s2, suspend);
      EXPECT_RES(ncclAllReduce(small_in, small_out, 1, ncclInt32, ncclSum, comm, s),
                 ncclInvalidUsage);
      int64_t drop = diff(before, during);
      printf("rank %d cycle %d: GPU used %llu -> %llu bytes (drop %lld, ranks' Suspend %llu)\n",
             rank, k, (unsigned long long)before, (unsigned long long)during, (long long)drop,
             (unsigned long long)want);
      EXPECT(drop >= (int64_t)want - slack && drop <= (int64_t)want + slack);
      t0 = now_ms();
      EXPECT_OK(ncclCommResume(comm));
      double t_resume = now_ms() - t0;
      barrier(nranks, &round);
      uint64_t after = used_bytes();
      printf("rank %d cycle %d: GPU used after resume %llu bytes; suspend took %.2f ms, resume "
             "%.2f ms (for the perf notes)\n", rank, k, (unsigned long long)after, t_suspend,
             t_resume);
      EXPECT(diff(after, before) >= -slack && diff(after, before) <= slack);
      stats(comm, &s2, &p2, &flag);
      EXPECT_EQ_INT(flag, 0);
      EXPECT_EQ_INT(s2, suspend);
      /* The graph captured before the first suspend, on new inputs. */
      replay(&b, exec, &st, "graph captured before the suspend replayed after the resume");
      seed = test_rand(&st);
      fill(big_in, h, BIG, seed, rank);
      EXPECT_OK(ncclAllReduce(big_in, big_out, BIG, ncclInt32, ncclSum, comm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      check(big_out, h, BIG, seed, nranks, "launched after resume, Simple");
      barrier(nranks, &round); /* the next cycle measures with every rank idle */
    }
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  EXPECT_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFree(big_in));
  CUDA_OK(cudaFree(big_out));
  CUDA_OK(cudaFree(small_in));
  CUDA_OK(cudaFree(small_out));
  CUDA_OK(cudaStreamDestroy(s));
  free(h);
  return 0;
}

/* A CUDA device is usable. */
/* "threads": the ranks are threads of this process (FIFOs shared by address, not descriptor). */
typedef struct {
  int rank, nranks, rc;
  ncclUniqueId* id;
} thread_rank;

static void* rank_thread(void* arg) {
  thread_rank* t = arg;
  t->rc = rank_main(t->rank, t->nranks, t->id, NULL);
  return NULL;
}

static int run_threads(int nranks) {
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id));
  pthread_t th[MAX_RANKS];
  thread_rank tr[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    tr[r] = (thread_rank){r, nranks, 1, &id};
    EXPECT(pthread_create(&th[r], NULL, rank_thread, &tr[r]) == 0);
  }
  int rc = 0;
  for (int r = 0; r < nranks; r++) {
    pthread_join(th[r], NULL);
    rc |= tr[r].rc;
  }
  return rc ? 1 : 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int nranks = argc > 1 ? atoi(argv[1]) : 0;
  if (nranks < 1 || nranks > MAX_RANKS || argc < 3 ||
      (strcmp(argv[2], "cycle") != 0 && strcmp(argv[2], "refuse") != 0)) {
    fprintf(stderr, "usage: gpu_suspend NRANKS(1..%d) cycle|refuse [threads]\n", MAX_RANKS);
    return 2;
  }
  refuse_mode = strcmp(argv[2], "refuse") == 0;
  /* probed in a child: the ranks are forked before any CUDA call here */
  if (!gpu_have_device()) { /* it prints why */
    return TEST_SKIP_RC;
  }
  shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT(shared != MAP_FAILED);
  memset((void*)shared, 0, sizeof *shared);
  int threads = argc > 3 && strcmp(argv[3], "threads") == 0;
  printf("seed 0x%llx (WEFT_TEST_SEED replays it), %d rank(s) on GPU 0 as %s, %s\n",
         (unsigned long long)test_seed(0x5a5be4d), nranks, threads ? "threads" : "processes",
         argv[2]);
  if (threads) return run_threads(nranks);
  return test_fork_ranks(nranks, rank_main, NULL, 240);
}
