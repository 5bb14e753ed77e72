/* A peer dies (SIGKILL) or hangs (SIGSTOP) in the middle of a stream of AllReduces on 3 ranks,
 * with WEFT_TIMEOUT_MS=3000. Every survivor's failing call must return an error within the
 * timeout (plus slack), ncclCommGetAsyncError must report it, and ncclCommAbort must return
 * within 2 s and give back every thread and fd. Afterwards no shared-memory segment of any
 * rank is left in /dev/shm.
 * Mode "abort": the peer hangs, and each survivor calls ncclCommAbort from its main thread
 * while another thread is blocked inside an AllReduce: both return promptly.
 * Mode "destroy": as "abort", but each survivor first calls ncclCommDestroy while the other
 * thread is blocked: destroy refuses (ncclInvalidUsage) at once, nothing is freed under the
 * blocked call (issue 42: it was a use-after-free), and the abort that follows stops it.
 *
 * Usage: host_peer_death kill|stop|abort shm|net */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define NRANKS 3
#define VICTIM 2
#define TIMEOUT_MS 3000
#define COUNT (1 << 20)
#define DESTROY_SETTLE_MS 700

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* After abort, every thread and fd of the communicator is gone. Rank 0's baseline included
 * the bootstrap root thread (it made the id), which ends on its own: at most the baseline. */
static void check_resources(int rank, int fds0, int threads0) {
  int threads1 = test_settle_threads(rank == 0 ? threads0 - 1 : threads0);
  int fds1 = test_count_fds();
  printf("rank %d: threads %d -> %d, fds %d -> %d\n", rank, threads0, threads1, fds0, fds1);
  if (rank == 0) {
    EXPECT(threads1 <= threads0);
    EXPECT(fds1 <= fds0);
  } else {
    EXPECT_EQ_INT(threads1, threads0);
    EXPECT_EQ_INT(fds1, fds0);
  }
}

static int stop_mode, abort_mode, destroy_mode;

static void* victim_thread(void* arg) {
  (void)arg;
  usleep(300 * 1000);
  raise(stop_mode ? SIGSTOP : SIGKILL);
  return NULL;
}

typedef struct {
  ncclComm_t comm;
  float *s, *r;
  ncclResult_t res;
  double took;
} blocked_call;

static void* blocked_thread(void* arg) {
  blocked_call* b = arg;
  double t = now_ms();
  b->res = ncclAllReduce(b->s, b->r, COUNT, ncclFloat, ncclSum, b->comm, NULL);
  b->took = now_ms() - t;
  return NULL;
}

/* The victim hangs before this; abort from here while another thread waits inside a call. */
static int abort_in_flight(int rank, ncclComm_t comm, float* s, float* r, int fds0, int threads0) {
  blocked_call b = {comm, s, r, ncclSuccess, 0};
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, blocked_thread, &b) == 0);
  usleep(500 * 1000);
  if (destroy_mode) {
    double d0 = now_ms();
    ncclResult_t d = ncclCommDestroy(comm);
    double destroy_ms = now_ms() - d0;
    printf("rank %d: destroy with a call in flight returned %s after %.0f ms\n", rank,
           ncclGetErrorString(d), destroy_ms);
    EXPECT_RES(d, ncclInvalidUsage);
    EXPECT(destroy_ms < 1000);
    /* The other survivor's destroy too must meet its call in flight: no abort before it. */
    usleep(DESTROY_SETTLE_MS * 1000);
  }
  double t0 = now_ms();
  EXPECT_OK(ncclCommAbort(comm));
  double abort_ms = now_ms() - t0;
  pthread_join(t, NULL);
  printf("rank %d: abort with a call in flight took %.0f ms; the call returned %s after %.0f ms\n",
         rank, abort_ms, ncclGetErrorString(b.res), b.took);
  EXPECT(abort_ms < 2000);
  EXPECT(b.res != ncclSuccess);
  EXPECT(b.took < 500 + (destroy_mode ? DESTROY_SETTLE_MS : 0) + 2000);
  check_resources(rank, fds0, threads0);
  free(s);
  free(r);
  return 0;
}


static int rank_main(int rank, int nranks, ncclUniqueId* idp, void* arg) {
  (void)nranks;
  (void)arg;
  ncclUniqueId id = *idp;
  int fds0 = test_count_fds(), threads0 = test_count_threads();
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, NRANKS, id, rank));
  float* s = malloc(COUNT * sizeof *s);
  float* r = malloc(COUNT * sizeof *r);
  for (int i = 0; i < COUNT; i++) s[i] = (float)(i % 13);
  EXPECT_OK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL));
  if (rank == VICTIM) {
    if (abort_mode) {
      usleep(300 * 1000); /* let its proxy hand the last net sends to the plugin */
      raise(SIGSTOP);
    }
    pthread_t t;
    pthread_create(&t, NULL, victim_thread, NULL);
    for (;;) ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL);
  }
  if (abort_mode) return abort_in_flight(rank, comm, s, r, fds0, threads0);
  ncclResult_t res = ncclSuccess;
  double took = 0;
  for (int it = 0; it < 100000 && res == ncclSuccess; it++) {
    double t = now_ms();
    res = ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL);
    took = now_ms() - t;
  }
  printf("rank %d: AllReduce failed with %s after %.0f ms\n", rank, ncclGetErrorString(res),
         took);
  EXPECT(res == ncclRemoteError || res == ncclSystemError);
  EXPECT(took < TIMEOUT_MS + 2500);
  ncclResult_t async = ncclSuccess;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async == ncclRemoteError || async == ncclSystemError);
  /* Later calls fail at once, never succeed. */
  EXPECT(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL) != ncclSuccess);
  double t = now_ms();
  EXPECT_OK(ncclCommAbort(comm));
  double abort_ms = now_ms() - t;
  printf("rank %d: ncclCommAbort took %.0f ms\n", rank, abort_ms);
  EXPECT(abort_ms < 2000);
  check_resources(rank, fds0, threads0);
  free(s);
  free(r);
  return 0;
}

/* Segments /dev/shm/weft-<pid>-<8 hex>-<n> (the shm transport's exact name shape) created by
 * any of pids. Other files are not counted: libfabric's shm provider appends ":0:0" to names of
 * its own, and a pid of this run may be one an earlier, killed process had. */
static int leftover_segments(const pid_t* pids, int n) {
  DIR* d = opendir("/dev/shm");
  if (!d) return 0;
  int found = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    int pid, used = 0;
    unsigned hash, k;
    if (sscanf(e->d_name, "weft-%d-%8x-%u%n", &pid, &hash, &k, &used) != 3 ||
        e->d_name[used] != '\0')
      continue;
    for (int i = 0; i < n; i++)
      if (pids[i] == pid) {
        fprintf(stderr, "left in /dev/shm: %s\n", e->d_name);
        found++;
      }
  }
  closedir(d);
  return found;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc < 3) {
    fprintf(stderr, "usage: %s kill|stop|abort|destroy shm|net\n", argv[0]);
    return 2;
  }
  stop_mode = strcmp(argv[1], "stop") == 0;
  destroy_mode = strcmp(argv[1], "destroy") == 0;
  abort_mode = destroy_mode || strcmp(argv[1], "abort") == 0;
  setenv("NCCL_SHM_DISABLE", strcmp(argv[2], "net") == 0 ? "1" : "0", 1);
  char tmo[16];
  snprintf(tmo, sizeof tmo, "%d", TIMEOUT_MS);
  setenv("WEFT_TIMEOUT_MS", tmo, 1);
  setenv("NCCL_BUFFSIZE", "262144", 1);
  /* Rank 0 makes the id (and runs the bootstrap root): this process stays single-threaded, so
   * forking it is safe. */
  pid_t pids[NRANKS];
  EXPECT(test_fork_ranks_pids(NRANKS, rank_main, NULL, 60, pids) == 0);
  int failed = 0;
  for (int r = 0; r < NRANKS; r++) {
    if (r == VICTIM) continue;
    int st;
    waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, st);
      failed = 1;
    }
  }
  kill(pids[VICTIM], SIGKILL);
  int st;
  waitpid(pids[VICTIM], &st, 0);
  EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  if (leftover_segments(pids, NRANKS)) failed = 1;
  return failed;
}
