/* Non-blocking init: InitRankConfig with blocking = 0 returns ncclInProgress (or success),
 * the comm answers ncclInProgress through GetAsyncError until ready, then works. Also a
 * blocking comm split into a non-blocking child. */
#include <unistd.h>

#include "testutil.h"

static void wait_ready(ncclComm_t comm) {
  ncclResult_t st = ncclInProgress;
  for (int i = 0; i < 60000 && st == ncclInProgress; i++) {
    EXPECT_OK(ncclCommGetAsyncError(comm, &st));
    if (st == ncclInProgress) usleep(1000);
  }
  EXPECT_EQ_INT(st, ncclSuccess);
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = NULL;
  /* Stagger the ranks so that some inits really are in progress when polled. */
  usleep((useconds_t)(rank * 20000));
  ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, *id, rank, &cfg);
  EXPECT(r == ncclInProgress || r == ncclSuccess);
  EXPECT(comm != NULL);
  wait_ready(comm);
  int n;
  EXPECT_OK(ncclCommCount(comm, &n));
  EXPECT_EQ_INT(n, nranks);

  ncclComm_t child = NULL;
  r = ncclCommSplit(comm, rank % 2, rank, &child, &cfg);
  EXPECT(r == ncclInProgress || r == ncclSuccess);
  wait_ready(child);
  EXPECT_OK(ncclCommCount(child, &n));
  EXPECT_EQ_INT(n, nranks / 2);
  EXPECT_OK(ncclCommDestroy(child));
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(void) {
  test_require_weft_lib();
  return test_fork_ranks(4, rank_main, NULL, 60);
}
