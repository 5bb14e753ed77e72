/* N host-mode ranks as forked processes: init, query, a control-plane allgather of random data
 * checked against what every rank generated, destroy. Argument 2 "--comm-id" uses NCCL_COMM_ID
 * instead of an id passed through a pipe. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft.h"

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclUniqueId local;
  if (id == NULL) { /* NCCL_COMM_ID: the id's content is ignored, the address comes from env */
    memset(&local, 0, sizeof local);
    EXPECT_OK(ncclGetUniqueId(&local));
    id = &local;
  }
  ncclComm_t comm = NULL;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  int n = -1, r = -1, dev = 0, isdev = 1;
  EXPECT_OK(ncclCommCount(comm, &n));
  EXPECT_OK(ncclCommUserRank(comm, &r));
  EXPECT_OK(ncclCommCuDevice(comm, &dev));
  EXPECT_OK(weftCommGetMode(comm, &isdev));
  EXPECT_EQ_INT(n, nranks);
  EXPECT_EQ_INT(r, rank);
  EXPECT_EQ_INT(dev, -1);
  EXPECT_EQ_INT(isdev, 0);

  enum { WORDS = 97 };
  uint64_t* all = calloc((size_t)nranks * WORDS, sizeof *all);
  uint64_t mine[WORDS];
  uint64_t seed = test_seed(1234);
  uint64_t s = seed + (uint64_t)rank * 7919;
  for (int i = 0; i < WORDS; i++) mine[i] = test_rand(&s);
  EXPECT_OK(weftCommOobAllGather(comm, mine, all, sizeof mine));
  for (int p = 0; p < nranks; p++) {
    uint64_t t = seed + (uint64_t)p * 7919;
    for (int i = 0; i < WORDS; i++) EXPECT(all[(size_t)p * WORDS + i] == test_rand(&t));
  }
  free(all);
  EXPECT_OK(ncclCommFinalize(comm));
  EXPECT_OK(ncclCommCount(comm, &n)); /* queries still answer after finalize */
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int n = argc > 1 ? atoi(argv[1]) : 2;
  if (argc > 2 && !strcmp(argv[2], "--comm-id")) {
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", test_free_port());
    setenv("NCCL_COMM_ID", addr, 1);
    return test_fork_plain(n, rank_main, NULL, 60);
  }
  return test_fork_ranks(n, rank_main, NULL, 60);
}
