/* A rank dies after init but before its first collective (or right after a split): the
 * survivors' first call sets up connections with it and must fail within seconds, not after
 * WEFT_TIMEOUT_MS (60 s here): a refused connection to a listener that existed means the rank
 * is gone, and a bootstrap receive notices its peer's death (issue 18, finding 1). The ranks
 * are forked before any thread exists.
 *
 * With 4 ranks (issue 42) one survivor (rank 3) only accepts the connection of the dead rank:
 * no refused connect tells it, and it used to wait in the plugin's accept for WEFT_TIMEOUT_MS.
 *
 * Usage: comm_peer_gone_at_setup init|split shm|net [nranks] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define VICTIM 2
#define DETECT_MS 8000

static int split_mode;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm, use;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  use = comm;
  if (split_mode) EXPECT_OK(ncclCommSplit(comm, 0, rank, &use, NULL));
  if (rank == VICTIM) {
    usleep(100 * 1000); /* the others are in their first call by now, or about to be */
    _exit(0); /* as a crash: no destroy, no atexit; the kernel closes its sockets */
  }
  enum { COUNT = 1 << 16 };
  float* b = calloc(COUNT, sizeof *b);
  double t0 = now_ms();
  ncclResult_t res = ncclAllReduce(b, b, COUNT, ncclFloat, ncclSum, use, NULL);
  double took = now_ms() - t0;
  printf("rank %d: first AllReduce after rank %d died: %s after %.0f ms\n", rank, VICTIM,
         ncclGetErrorString(res), took);
  EXPECT(res != ncclSuccess);
  EXPECT(took < DETECT_MS);
  t0 = now_ms();
  if (split_mode) EXPECT_OK(ncclCommAbort(use));
  EXPECT_OK(ncclCommAbort(comm));
  EXPECT(now_ms() - t0 < 2000);
  free(b);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  split_mode = argc > 1 && strcmp(argv[1], "split") == 0;
  if (argc > 2 && strcmp(argv[2], "net") == 0) setenv("NCCL_SHM_DISABLE", "1", 1);
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  int nranks = argc > 3 ? atoi(argv[3]) : 3;
  EXPECT(nranks > VICTIM);
  return test_fork_ranks(nranks, rank_main, NULL, 50);
}
