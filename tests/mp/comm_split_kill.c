/* A loop of Split -> AllReduce -> Destroy on 4 ranks, one of which is SIGKILLed at a seeded
 * moment (issue 42): every survivor's failing call must return within WEFT_TIMEOUT_MS (3 s)
 * plus slack, never after WEFT_INIT_TIMEOUT_MS (left at its 180 s default). Before, a death
 * during a split child's bootstrap left the survivors waiting for the init timeout.
 * The seed picks, per trial, the victim, the cycle it dies in and how:
 *   split: right after its ncclCommSplit returned (non-blocking: the child's bootstrap has
 *          only begun, on another thread),
 *   any:   after a random delay of 0-30 ms (a cycle takes a few), wherever the loop is; a
 *          victim that finishes the loop first waits there to be killed.
 * AllReduce results are checked against the sum of every rank's seeded data. Each trial forks
 * the ranks afresh (before any thread exists). WEFT_TEST_FULL=1 runs 12 trials, else 4. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define NRANKS 4
#define CYCLES 6
#define TIMEOUT_MS 3000
#define SLACK_MS 2500
#define COUNT 1024

typedef struct {
  int victim, cycle, at_split, delay_ms;
  uint64_t seed;
} trial;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void* killer(void* arg) {
  usleep((useconds_t)(*(int*)arg) * 1000);
  raise(SIGKILL);
  return NULL;
}

/* A call that fails must have returned within the bound; then everything is aborted. */
static int failed(int rank, const char* what, ncclResult_t res, double took, ncclComm_t child,
                  ncclComm_t parent) {
  printf("rank %d: %s failed (%s) after %.0f ms\n", rank, what, ncclGetErrorString(res), took);
  fflush(stdout);
  EXPECT(took < TIMEOUT_MS + SLACK_MS);
  if (child) EXPECT_OK(ncclCommAbort(child));
  EXPECT_OK(ncclCommAbort(parent));
  return 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  const trial* t = arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  float *s = malloc(COUNT * sizeof *s), *r = malloc(COUNT * sizeof *r);
  for (int c = 0; c < CYCLES; c++) {
    int color = c % 2 ? rank % 2 : 0;
    ncclComm_t child = NULL;
    if (rank == t->victim && c == t->cycle) {
      if (t->at_split) {
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.blocking = 0;
        ncclResult_t res = ncclCommSplit(comm, color, rank, &child, &cfg);
        EXPECT(res == ncclSuccess || res == ncclInProgress);
        raise(SIGKILL);
      }
      pthread_t th;
      EXPECT(pthread_create(&th, NULL, killer, (void*)&t->delay_ms) == 0);
    }
    double t0 = now_ms();
    ncclResult_t res = ncclCommSplit(comm, color, rank, &child, NULL);
    if (res != ncclSuccess) return failed(rank, "ncclCommSplit", res, now_ms() - t0, NULL, comm);
    int n;
    EXPECT_OK(ncclCommCount(child, &n));
    uint64_t st = t->seed + (uint64_t)c * 131u + (uint64_t)rank;
    for (int i = 0; i < COUNT; i++) s[i] = (float)(test_rand(&st) % 100);
    t0 = now_ms();
    res = ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, child, NULL);
    if (res != ncclSuccess) return failed(rank, "ncclAllReduce", res, now_ms() - t0, child, comm);
    for (int i = 0; i < COUNT; i++) { /* the members: this color's parent ranks */
      float want = 0;
      for (int q = 0; q < nranks; q++) {
        if ((c % 2 ? q % 2 : 0) != color) continue;
        uint64_t sq = t->seed + (uint64_t)c * 131u + (uint64_t)q;
        for (int k = 0; k < i; k++) test_rand(&sq);
        want += (float)(test_rand(&sq) % 100);
      }
      if (r[i] != want) {
        fprintf(stderr, "rank %d cycle %d element %d: %g, expected %g\n", rank, c, i,
                (double)r[i], (double)want);
        return 1;
      }
      if (i == 15) break; /* a sample: the reference is quadratic */
    }
    EXPECT_OK(ncclCommDestroy(child));
  }
  if (rank == t->victim)
    for (;;) pause(); /* its killer comes */
  /* The victim's death came after this rank's last call, or it was not in its children. */
  EXPECT_OK(ncclCommAbort(comm));
  free(s);
  free(r);
  return 0;
}

/* Runs one trial; 0 when the victim died of SIGKILL and every survivor exited 0 in time. */
static int run_trial(const trial* t) {
  pid_t pids[NRANKS];
  EXPECT(test_fork_ranks_pids(NRANKS, rank_main, (void*)t, 60, pids) == 0);
  int bad = 0;
  for (int r = 0; r < NRANKS; r++) {
    int st = 0;
    EXPECT(waitpid(pids[r], &st, 0) == pids[r]);
    if (r == t->victim) {
      if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
        fprintf(stderr, "victim rank %d did not die of SIGKILL (status 0x%x)\n", r, st);
        bad = 1;
      }
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x%s)\n", r, st,
              WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? ": still waiting after 60 s" : "");
      bad = 1;
    }
  }
  return bad;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc > 1 && strcmp(argv[1], "net") == 0) setenv("NCCL_SHM_DISABLE", "1", 1);
  char tmo[16];
  snprintf(tmo, sizeof tmo, "%d", TIMEOUT_MS);
  setenv("WEFT_TIMEOUT_MS", tmo, 1);
  unsetenv("WEFT_INIT_TIMEOUT_MS");
  const char* full = getenv("WEFT_TEST_FULL");
  int trials = full && *full == '1' ? 12 : 4;
  uint64_t seed = test_seed((uint64_t)time(NULL)), rng = seed;
  printf("seed %llu (WEFT_TEST_SEED reruns it), %d trials\n", (unsigned long long)seed, trials);
  int bad = 0;
  for (int k = 0; k < trials; k++) {
    trial t = {.victim = (int)(test_rand(&rng) % NRANKS),
               .cycle = (int)(test_rand(&rng) % CYCLES),
               .at_split = k % 2 == 0,
               .delay_ms = (int)(test_rand(&rng) % 30),
               .seed = test_rand(&rng)};
    printf("trial %d: rank %d dies in cycle %d, %s\n", k, t.victim, t.cycle,
           t.at_split ? "right after its split" : "after a random delay");
    fflush(stdout);
    double t0 = now_ms();
    int b = run_trial(&t);
    printf("trial %d: %s in %.0f ms\n", k, b ? "FAILED" : "ok", now_ms() - t0);
    bad |= b;
  }
  return bad;
}
