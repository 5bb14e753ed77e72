/* A rank that never starts: the others fail within the init timeout (2 s here) with an error
 * that names the missing rank, instead of hanging. */
#include <string.h>
#include <time.h>

#include "testutil.h"

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  (void)nranks;
  if (rank == 2) return 0; /* rank 2 of 3 never calls init */
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRank(&comm, 3, *id, rank);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
  const char* err = ncclGetLastError(NULL);
  fprintf(stderr, "rank %d: init returned %d after %.1f s: %s\n", rank, (int)r, s, err);
  EXPECT(r != ncclSuccess && r != ncclInProgress);
  EXPECT(s < 10.0);
  EXPECT(strstr(err, "2") != NULL);
  EXPECT(strstr(err, "rank") != NULL);
  return 0;
}

int main(void) {
  test_require_weft_lib();
  return test_fork_ranks(3, rank_main, NULL, 30);
}
