/* Ranks running different weft versions: init fails on every rank with an error naming the
 * ranks and the versions (WEFT_TEST_FAKE_VERSION makes rank 1 report another version). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  if (rank == 1) setenv("WEFT_TEST_FAKE_VERSION", "9.9.9", 1);
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRank(&comm, nranks, *id, rank);
  EXPECT_RES(r, ncclInvalidUsage);
  const char* err = ncclGetLastError(NULL);
  EXPECT(strstr(err, "version mismatch") != NULL);
  EXPECT(strstr(err, "9.9.9") != NULL);
  EXPECT(strstr(err, "rank 1") != NULL);
  return 0;
}

int main(void) {
  test_require_weft_lib();
  return test_fork_ranks(3, rank_main, NULL, 30);
}
