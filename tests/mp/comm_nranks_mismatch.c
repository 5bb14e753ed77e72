/* One rank passes another nranks than the others (issue 42). Every rank's init must fail with
 * ncclInvalidUsage soon (WEFT_INIT_TIMEOUT_MS is 30 s here), whichever checks in first: before,
 * when the odd rank came first the root took its nranks, rejected the others, and the odd rank
 * waited out the init timeout to be told "ranks 0,2 never checked in". The root runs in rank
 * 0's process, which exits once its own init has failed: a rank whose verdict it had not sent
 * yet, or that checks in later, finds the root gone (ncclRemoteError, said at once) instead.
 * Usage: comm_nranks_mismatch odd-first|odd-last */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define NRANKS 3
#define ODD 1
#define BOUND_MS 10000

static int odd_first;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  /* The order of check-ins: the odd rank first (the others start 300 ms later) or last. */
  if ((rank == ODD) != odd_first) usleep(300 * 1000);
  int n = rank == ODD ? nranks + 1 : nranks;
  ncclComm_t comm;
  double t0 = now_ms();
  ncclResult_t res = ncclCommInitRank(&comm, n, *id, rank);
  double took = now_ms() - t0;
  printf("rank %d (nranks %d): init %s after %.0f ms\n", rank, n, ncclGetErrorString(res), took);
  EXPECT(res == ncclInvalidUsage || (res == ncclRemoteError && rank != 0));
  EXPECT(took < BOUND_MS);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  odd_first = argc > 1 && strcmp(argv[1], "odd-first") == 0;
  setenv("WEFT_INIT_TIMEOUT_MS", "30000", 1);
  return test_fork_ranks(NRANKS, rank_main, NULL, 60);
}
