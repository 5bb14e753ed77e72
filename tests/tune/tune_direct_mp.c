/* A forced direct algorithm where it cannot run is a clear error, never a hang or a silent
 * fallback, and the communicator stays usable (host ranks, forked):
 *   tune_direct_mp oneshot_9ranks   NCCL_ALGO=OneShot on 9 ranks (the direct algorithms stop at
 *                                   8): ncclAllReduce is ncclInvalidUsage, the last error says
 *                                   why, the communicator is not marked failed.
 *   tune_direct_mp twoshot_allgather  NCCL_ALGO=TwoShot on 3 ranks: AllGather (TwoShot is an
 *                                   AllReduce) is ncclInvalidUsage; an AllReduce then runs and
 *                                   is exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"
#include "testutil.h"

static int oneshot_9ranks(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  float x[8], y[8];
  for (int i = 0; i < 8; i++) x[i] = (float)(rank + i);
  EXPECT_RES(ncclAllReduce(x, y, 8, ncclFloat, ncclSum, comm, NULL), ncclInvalidUsage);
  const char* why = ncclGetLastError(comm);
  if (!strstr(why, "OneShot") || !strstr(why, "at most 8 ranks")) {
    fprintf(stderr, "rank %d: last error does not say why: %s\n", rank, why);
    return 1;
  }
  ncclResult_t async = ncclInternalError;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT_EQ_INT(async, ncclSuccess); /* refused at the call: nothing ran, nothing broke */
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

static int twoshot_allgather(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  int32_t x[5], g[15];
  for (int i = 0; i < 5; i++) x[i] = rank * 10 + i;
  EXPECT_RES(ncclAllGather(x, g, 5, ncclInt32, comm, NULL), ncclInvalidUsage);
  int32_t y[5];
  EXPECT_OK(ncclAllReduce(x, y, 5, ncclInt32, ncclSum, comm, NULL));
  for (int i = 0; i < 5; i++) EXPECT_EQ_INT(y[i], 10 * (nranks * (nranks - 1) / 2) + nranks * i);
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc == 2 && !strcmp(argv[1], "oneshot_9ranks"))
    return test_fork_ranks(9, oneshot_9ranks, NULL, 120);
  if (argc == 2 && !strcmp(argv[1], "twoshot_allgather"))
    return test_fork_ranks(3, twoshot_allgather, NULL, 120);
  fprintf(stderr, "usage: tune_direct_mp oneshot_9ranks|twoshot_allgather\n");
  return 2;
}
