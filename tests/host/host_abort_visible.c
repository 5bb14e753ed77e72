/* A rank that aborts (or destroys) its communicator and stays alive must not stall its shared-
 * memory peers for WEFT_TIMEOUT_MS (60 s here): its connections tell them, and their waiting
 * calls fail within a second naming the rank and what it did (issue 18, finding 2).
 *
 * Usage: host_abort_visible abort|destroy */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define NRANKS 3
#define LEAVER 1
#define COUNT (1 << 18)

static int destroy_mode;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  float *s = malloc(COUNT * sizeof *s), *r = malloc(COUNT * sizeof *r);
  for (int i = 0; i < COUNT; i++) s[i] = (float)(i % 5);
  EXPECT_OK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL));
  if (rank == LEAVER) {
    if (destroy_mode)
      EXPECT_OK(ncclCommDestroy(comm));
    else
      EXPECT_OK(ncclCommAbort(comm));
    sleep(4); /* alive: its process is no sign of anything */
    return 0;
  }
  double t0 = now_ms(), took = 0;
  ncclResult_t res = ncclSuccess;
  for (int it = 0; it < 1000 && res == ncclSuccess; it++) {
    t0 = now_ms();
    res = ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL);
    took = now_ms() - t0;
  }
  printf("rank %d: AllReduce after rank %d's %s: %s after %.0f ms\n", rank, LEAVER,
         destroy_mode ? "destroy" : "abort", ncclGetErrorString(res), took);
  EXPECT(res == ncclRemoteError);
  EXPECT(took < 1500);
  EXPECT_OK(ncclCommAbort(comm));
  free(s);
  free(r);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  destroy_mode = argc > 1 && strcmp(argv[1], "destroy") == 0;
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  return test_fork_ranks(NRANKS, rank_main, NULL, 40);
}
