/* A training-like loop of AllReduces where one rank dies: the survivors revoke, shrink and go on
 * with exact sums, then grow back to the original size with a spare process.
 *
 * The victim and the iteration it dies at come from the seed (printed; WEFT_TEST_SEED replays
 * it). Every rank holds an identity (its first rank; the spare takes the victim's) and
 * contributes values that depend on identity, iteration and index, so each sum is checked
 * against the exact integer sum over the identities that took part.
 *
 *   kill  : the victim SIGKILLs itself before the iteration; a survivor's AllReduce fails (peer
 *           gone), it revokes (ncclInProgress, then ncclSuccess), shrinks with
 *           NCCL_SHRINK_DEFAULT and goes on.
 *   abort : the victim stops itself (SIGSTOP: alive, silent) so the survivors' AllReduce blocks;
 *           a second thread of each survivor calls ncclCommShrink(NCCL_SHRINK_ABORT), which must
 *           end the blocked AllReduce with an error and return the new communicator; then the
 *           victim is SIGKILLed.
 *
 * Then the new rank 0 makes a grow id (ncclCommGetUniqueId), hands it to the spare through a
 * pipe, and everyone grows to the original size; the grown communicator's sums include the
 * spare. The time from the victim's end to each survivor's first good sum on the shrunk
 * communicator is printed (the perf notes quote it).
 *
 * Built with WEFT_TEST_CUDA (the gpu label's gpu_shrink_after_kill), `--device` runs the kill
 * case on device-mode communicators whose ranks share GPU 0: buffers in device memory, each
 * AllReduce on a stream polled with ncclCommGetAsyncError, as applications wait for one.
 *
 * Usage: comm_shrink_after_kill NRANKS kill|abort [--device] */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#ifdef WEFT_TEST_CUDA
#include <cuda_runtime.h>

#include "gpu_world.h"
#endif

#define MAX_RANKS 16
#define ITERS 12
#define AFTER_GROW 3
/* A dead peer is noticed in about 100 ms; WEFT_TIMEOUT_MS (60 s here) must not be what ends
 * the wait. */
#define DETECT_MS 8000

typedef struct {
  double end_ms;               /* when the victim stopped taking part */
  double ready_ms[MAX_RANKS];  /* each survivor's first good sum on the shrunk comm */
} shared_times;

static int nranks, abort_mode, victim, die_at, count;
static uint64_t seed;
static shared_times* times;
static int id_pipe[2], grow_pipe[2];
static int use_device;
#ifdef WEFT_TEST_CUDA
static int32_t* dbuf;
static cudaStream_t stream;
#endif

/* Device mode: GPU 0 (shared by every rank), a device buffer and a stream of this process. */
static void device_setup(void) {
#ifdef WEFT_TEST_CUDA
  if (!use_device) return;
  EXPECT(cudaSetDevice(0) == cudaSuccess);
  EXPECT(cudaMalloc((void**)&dbuf, (size_t)count * sizeof(int32_t)) == cudaSuccess);
  EXPECT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
#endif
}

/* buf (host memory) summed over comm in place; in device mode through dbuf and the stream,
 * waiting for the stream while polling the communicator's asynchronous error. */
static ncclResult_t allreduce(ncclComm_t comm, int32_t* buf) {
#ifdef WEFT_TEST_CUDA
  if (use_device) {
    size_t bytes = (size_t)count * sizeof(int32_t);
    EXPECT(cudaMemcpy(dbuf, buf, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    ncclResult_t res = ncclAllReduce(dbuf, dbuf, (size_t)count, ncclInt32, ncclSum, comm, stream);
    if (res != ncclSuccess) return res;
    for (;;) {
      cudaError_t q = cudaStreamQuery(stream);
      if (q != cudaSuccess && q != cudaErrorNotReady) return ncclUnhandledCudaError;
      /* Asked after the stream ended too: a kernel that gave up on a dead peer ends its
       * stream like one that finished, and only the communicator says which it was. */
      ncclResult_t as;
      EXPECT_OK(ncclCommGetAsyncError(comm, &as));
      if (as != ncclSuccess && as != ncclInProgress) return as;
      if (q == cudaSuccess) break;
      usleep(1000);
    }
    EXPECT(cudaMemcpy(buf, dbuf, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    return ncclSuccess;
  }
#endif
  return ncclAllReduce(buf, buf, (size_t)count, ncclInt32, ncclSum, comm, NULL);
}


static int fds_at_start;
static int threads_at_start;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int32_t value(int ident, int iter, int i) {
  uint64_t x = seed ^ ((uint64_t)ident * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)iter << 32) ^ (uint64_t)i;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  return (int32_t)(x % 2001) - 1000;
}

/* One AllReduce of iteration iter over the identities idents[0..n); checks every element. */
static ncclResult_t step(ncclComm_t comm, int ident, int iter, const int* idents, int n,
                        int32_t* buf) {
  for (int i = 0; i < count; i++) buf[i] = value(ident, iter, i);
  ncclResult_t res = allreduce(comm, buf);
  if (res != ncclSuccess) return res;
  for (int i = 0; i < count; i++) {
    int32_t want = 0;
    for (int k = 0; k < n; k++) want += value(idents[k], iter, i);
    if (buf[i] != want) {
      fprintf(stderr, "identity %d iteration %d: element %d is %d, expected %d\n", ident, iter,
              i, buf[i], want);
      exit(1);
    }
  }
  return ncclSuccess;
}

typedef struct {
  ncclComm_t comm, newcomm;
  ncclResult_t res;
} shrink_job;

static void* shrink_thread(void* arg) {
  shrink_job* j = arg;
  usleep(300 * 1000); /* the main thread is blocked in the AllReduce by now */
  j->res = ncclCommShrink(j->comm, &victim, 1, &j->newcomm, NULL, NCCL_SHRINK_ABORT);
  return NULL;
}

/* Grow the shrunk communicator back to nranks; the spare joins as the last rank. */
static ncclComm_t grow_back(ncclComm_t small, int small_rank) {
  ncclUniqueId gid;
  if (small_rank == 0) {
    EXPECT_OK(ncclCommGetUniqueId(small, &gid));
    /* a second id while this one is unused is refused */
    ncclUniqueId again;
    EXPECT_RES(ncclCommGetUniqueId(small, &again), ncclInvalidUsage);
    EXPECT(write(grow_pipe[1], &gid, sizeof gid) == (ssize_t)sizeof gid);
  }
  ncclComm_t grown;
  EXPECT_OK(ncclCommGrow(small, nranks, small_rank == 0 ? &gid : NULL, -1, &grown, NULL));
  if (small_rank == 0) /* used: refused now */
    EXPECT_RES(ncclCommGrow(small, nranks, &gid, -1, &grown, NULL), ncclInvalidArgument);
  return grown;
}

static int survivor_main(int rank, ncclComm_t comm, int* idents_all) {
  int32_t* buf = malloc((size_t)count * sizeof *buf);
  EXPECT(buf);
  int live[MAX_RANKS], nlive = 0;
  for (int r = 0; r < nranks; r++)
    if (r != victim) live[nlive++] = r;
  ncclComm_t small = NULL;
  int iter = 0;
  for (; iter < die_at; iter++) EXPECT_OK(step(comm, rank, iter, idents_all, nranks, buf));
  if (!abort_mode) {
    ncclResult_t res = step(comm, rank, iter, idents_all, nranks, buf);
    EXPECT(res != ncclSuccess);
    printf("rank %d: AllReduce %d after rank %d's death: %s after %.0f ms\n", rank, iter, victim,
           ncclGetErrorString(res), now_ms() - times->end_ms);
    EXPECT(now_ms() - times->end_ms < DETECT_MS);
    EXPECT_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    ncclResult_t as;
    EXPECT_OK(ncclCommGetAsyncError(comm, &as));
    EXPECT_EQ_INT(as, ncclSuccess);
    EXPECT_RES(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclInvalidArgument);
    EXPECT_RES(allreduce(comm, buf), ncclInvalidUsage);
    EXPECT_RES(ncclCommFinalize(comm), ncclInvalidUsage);
#ifdef WEFT_TEST_CUDA
    if (use_device) EXPECT(cudaStreamSynchronize(stream) == cudaSuccess); /* kernels stopped */
#endif
    EXPECT_OK(ncclCommShrink(comm, &victim, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
  } else {
    shrink_job j = {.comm = comm};
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, shrink_thread, &j) == 0);
    ncclResult_t res = step(comm, rank, iter, idents_all, nranks, buf); /* blocks */
    pthread_join(t, NULL);
    printf("rank %d: blocked AllReduce %d ended with %s after %.0f ms; shrink: %s\n", rank, iter,
           ncclGetErrorString(res), now_ms() - times->end_ms, ncclGetErrorString(j.res));
    EXPECT(res != ncclSuccess);
    EXPECT_OK(j.res);
    small = j.newcomm;
  }
  int small_rank, small_n;
  EXPECT_OK(ncclCommUserRank(small, &small_rank));
  EXPECT_OK(ncclCommCount(small, &small_n));
  EXPECT_EQ_INT(small_n, nranks - 1);
  EXPECT_EQ_INT(small_rank, rank < victim ? rank : rank - 1); /* renumbered in order */
  /* The iteration the victim missed is redone by the survivors. */
  EXPECT_OK(step(small, rank, iter, live, nlive, buf));
  times->ready_ms[rank] = now_ms();
  if (abort_mode && small_rank == 0) kill(idents_all[MAX_RANKS + victim], SIGKILL);
  double t0 = now_ms();
  EXPECT_OK(ncclCommDestroy(comm)); /* the parent: promptly, dead rank and all */
  EXPECT(now_ms() - t0 < 2000);
  for (iter++; iter < ITERS; iter++) EXPECT_OK(step(small, rank, iter, live, nlive, buf));

  ncclComm_t grown = grow_back(small, small_rank);
  int grown_rank;
  EXPECT_OK(ncclCommUserRank(grown, &grown_rank));
  EXPECT_EQ_INT(grown_rank, small_rank);
  int all_idents[MAX_RANKS];
  for (int k = 0; k < nlive; k++) all_idents[k] = live[k];
  all_idents[nlive] = victim; /* the spare's identity */
  for (int k = 0; k < AFTER_GROW; k++, iter++)
    EXPECT_OK(step(grown, rank, iter, all_idents, nranks, buf));
  EXPECT_OK(ncclCommDestroy(small));
  EXPECT_OK(ncclCommDestroy(grown));
  free(buf);
  /* Nothing of the three communicators is left: the parent with its dead peer included. */
  /* ThreadSanitizer starts its background thread in a forked rank after the first count. */
  int want = threads_at_start + WEFT_TEST_SANITIZER_THREADS;
  int shm = test_count_my_shm(), threads = test_settle_threads(want);
  int fds = test_count_fds();
  if (shm != 0 || threads > want || (!use_device && fds != fds_at_start)) {
    fprintf(stderr, "rank %d: left behind: %d /dev/shm files, %d threads, fds %d -> %d\n", rank,
            shm, threads, fds_at_start, fds);
    return 1;
  }
  return 0;
}

static int spare_main(void) {
  ncclUniqueId gid;
  close(grow_pipe[1]);
  if (test_read_full(grow_pipe[0], &gid, sizeof gid) != sizeof gid) return 2;
  device_setup();
  ncclComm_t grown;
  /* a new rank passes no comm; a rank out of range is refused first */
  EXPECT_RES(ncclCommGrow(NULL, nranks, &gid, nranks, &grown, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommGrow(NULL, nranks, NULL, nranks - 1, &grown, NULL), ncclInvalidArgument);
  EXPECT_OK(ncclCommGrow(NULL, nranks, &gid, nranks - 1, &grown, NULL));
  int live[MAX_RANKS], n = 0;
  for (int r = 0; r < nranks; r++)
    if (r != victim) live[n++] = r;
  live[n++] = victim;
  int32_t* buf = malloc((size_t)count * sizeof *buf);
  EXPECT(buf);
  for (int k = 0; k < AFTER_GROW; k++) EXPECT_OK(step(grown, victim, ITERS + k, live, n, buf));
  EXPECT_OK(ncclCommDestroy(grown));
  free(buf);
  return 0;
}

static int rank_main(int rank) {
  device_setup();
  /* Counted once the CUDA runtime (device mode) has started its own threads, which stay. */
  fds_at_start = test_count_fds();
  threads_at_start = test_count_threads();
  ncclUniqueId id;
  if (rank == 0) {
    EXPECT_OK(ncclGetUniqueId(&id));
    for (int i = 1; i < nranks; i++) EXPECT(write(id_pipe[1], &id, sizeof id) == (ssize_t)sizeof id);
  } else if (test_read_full(id_pipe[0], &id, sizeof id) != sizeof id) {
    return 2;
  }
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, id, rank));
  /* idents[0..n): identities of the full comm; idents[MAX_RANKS + r]: rank r's pid (abort) */
  int idents[2 * MAX_RANKS];
  for (int r = 0; r < nranks; r++) idents[r] = r;
  if (abort_mode) {
    int32_t pids[MAX_RANKS];
    pids[rank] = (int32_t)getpid();
    EXPECT_OK(ncclAllGather(pids + rank, pids, 1, ncclInt32, comm, NULL));
    for (int r = 0; r < nranks; r++) idents[MAX_RANKS + r] = pids[r];
  }
  if (rank != victim) return survivor_main(rank, comm, idents);
  int32_t* buf = malloc((size_t)count * sizeof *buf);
  for (int iter = 0; iter < die_at; iter++) EXPECT_OK(step(comm, rank, iter, idents, nranks, buf));
  fflush(NULL);
  times->end_ms = now_ms();
  raise(abort_mode ? SIGSTOP : SIGKILL);
  for (;;) pause(); /* a survivor kills it */
}

#ifdef WEFT_TEST_CUDA
/* A CUDA device is usable. */
#endif

int main(int argc, char** argv) {
  test_require_weft_lib();
  nranks = argc > 1 ? atoi(argv[1]) : 4;
  abort_mode = argc > 2 && strcmp(argv[2], "abort") == 0;
  use_device = argc > 3 && strcmp(argv[3], "--device") == 0;
  EXPECT(nranks >= 2 && nranks <= MAX_RANKS);
  EXPECT(!(use_device && abort_mode)); /* abort mode stops the victim's host: host mode only */
#ifdef WEFT_TEST_CUDA
  if (use_device) { /* probed in a child: the ranks are forked before any CUDA call here */
    if (!gpu_have_device()) { /* it prints why */
      return TEST_SKIP_RC;
    }
  }
#else
  if (use_device) {
    printf("skip: built without CUDA (gpu_shrink_after_kill is the device build)\n");
    return TEST_SKIP_RC;
  }
#endif
  seed = test_seed((uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid());
  uint64_t st = seed;
  victim = (int)(test_rand(&st) % (uint64_t)nranks);
  die_at = 1 + (int)(test_rand(&st) % (ITERS - 2));
  count = 1 + (int)(test_rand(&st) % 50000);
  printf("seed 0x%llx (WEFT_TEST_SEED replays it): %d ranks, %s, victim %d at iteration %d, "
         "%d elements\n", (unsigned long long)seed, nranks, abort_mode ? "abort" : "kill", victim,
         die_at, count);
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  times = mmap(NULL, sizeof *times, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT(times != MAP_FAILED);
  EXPECT(pipe(id_pipe) == 0 && pipe(grow_pipe) == 0);
  fflush(NULL);
  pid_t pids[MAX_RANKS + 1];
  for (int r = 0; r <= nranks; r++) {
    pid_t p = fork();
    EXPECT(p >= 0);
    if (p == 0) {
      int rc = r == nranks ? spare_main() : rank_main(r);
      fflush(NULL);
      _exit(rc);
    }
    pids[r] = p;
  }
  close(id_pipe[0]);
  close(id_pipe[1]);
  close(grow_pipe[0]);
  close(grow_pipe[1]);
  /* The victim must end by SIGKILL (its own, or a survivor's); everyone else must exit 0. */
  int status;
  EXPECT(waitpid(pids[victim], &status, 0) == pids[victim]);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    fprintf(stderr, "victim rank %d did not end by SIGKILL (status 0x%x)\n", victim, status);
    for (int r = 0; r <= nranks; r++)
      if (r != victim) kill(pids[r], SIGKILL);
    return 1;
  }
  pids[victim] = pids[nranks];
  int rc = test_wait_children(pids, nranks, 60);
  if (rc != 0) return rc;
  double worst = 0;
  for (int r = 0; r < nranks; r++)
    if (r != victim && times->ready_ms[r] - times->end_ms > worst)
      worst = times->ready_ms[r] - times->end_ms;
  printf("%d ranks (%s): rank %d's end to the last survivor's first good sum on the shrunk "
         "communicator: %.0f ms\n", nranks, abort_mode ? "abort" : "kill", victim, worst);
  return 0;
}
