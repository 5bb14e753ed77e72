/* ncclGroupSimulateEnd (issue 50): a simulated group launches nothing and writes nothing,
 * reports the cost model's time (> 0 with 2+ ranks), and closes the group, so the next real
 * collective runs; an inner simulated End reports nothing; a bad simInfo (wrong magic, NULL)
 * still closes the group, dropping its operations, so a later blocking collective runs instead
 * of being swallowed by a group left open. Rank 0 alone simulates one more group before a real
 * AllReduce: under WEFT_CHECK_COLLECTIVES=1 (set by the registration) the ranks' collectives
 * must still number alike.
 *
 * Usage: group_simulate NRANKS */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft.h"

#define COUNT 5003

typedef struct {
  float *s, *r, *before, *all;
} bufs;

static void fill_sentinel(bufs* b, uint64_t* seed) {
  for (int i = 0; i < COUNT; i++) b->r[i] = (float)(test_rand(seed) % 997) + 0.5f;
  memcpy(b->before, b->r, COUNT * sizeof *b->r);
}

static void expect_untouched(const bufs* b, int rank, const char* what) {
  if (memcmp(b->before, b->r, COUNT * sizeof *b->r) != 0) {
    fprintf(stderr, "rank %d: %s wrote the receive buffer\n", rank, what);
    exit(1);
  }
}

static void expect_sums(const bufs* b, int rank, int nranks, const char* what) {
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int k = 0; k < nranks; k++) want += b->all[(size_t)k * COUNT + i];
    if (b->r[i] != want) {
      fprintf(stderr, "rank %d: %s: r[%d] = %g, expected %g\n", rank, what, i, b->r[i], want);
      exit(1);
    }
  }
}

static void queue_group(const bufs* b, ncclComm_t comm, int rank, int nranks) {
  EXPECT_OK(ncclAllReduce(b->s, b->r, COUNT, ncclFloat, ncclSum, comm, NULL));
  EXPECT_OK(ncclAllGather(b->s, b->all, COUNT, ncclFloat, comm, NULL));
  EXPECT_OK(ncclSend(b->s, COUNT, ncclFloat, (rank + 1) % nranks, comm, NULL));
  EXPECT_OK(ncclRecv(b->r, COUNT, ncclFloat, (rank + nranks - 1) % nranks, comm, NULL));
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  uint64_t seed = test_seed(50) + (uint64_t)rank;
  if (rank == 0) fprintf(stderr, "seed %llu\n", (unsigned long long)test_seed(50));
  bufs b;
  b.s = malloc(COUNT * sizeof *b.s);
  b.r = malloc(COUNT * sizeof *b.r);
  b.before = malloc(COUNT * sizeof *b.before);
  b.all = malloc((size_t)nranks * COUNT * sizeof *b.all);
  float* all_before = malloc((size_t)nranks * COUNT * sizeof *all_before);
  for (int i = 0; i < COUNT; i++) b.s[i] = (float)(test_rand(&seed) % 1000);
  EXPECT_OK(weftCommOobAllGather(comm, b.s, b.all, COUNT * sizeof *b.s));
  memcpy(all_before, b.all, (size_t)nranks * COUNT * sizeof *b.all);

  /* 1. A simulated group: a time, nothing written, and the next collective runs. */
  fill_sentinel(&b, &seed);
  ncclSimInfo_t si = NCCL_SIM_INFO_INITIALIZER;
  EXPECT(si.estimatedTime < 0);
  EXPECT_OK(ncclGroupStart());
  queue_group(&b, comm, rank, nranks);
  EXPECT_OK(ncclGroupSimulateEnd(&si));
  if (!(si.estimatedTime > 0)) {
    fprintf(stderr, "rank %d: estimatedTime = %g, expected > 0\n", rank, si.estimatedTime);
    return 1;
  }
  expect_untouched(&b, rank, "a simulated group");
  EXPECT(memcmp(all_before, b.all, (size_t)nranks * COUNT * sizeof *b.all) == 0);
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage); /* the simulation closed the group */
  EXPECT_OK(ncclAllReduce(b.s, b.r, COUNT, ncclFloat, ncclSum, comm, NULL));
  expect_sums(&b, rank, nranks, "AllReduce after a simulated group");

  /* 2. A bigger group takes longer in the model. */
  ncclSimInfo_t small = NCCL_SIM_INFO_INITIALIZER, big = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllReduce(b.s, b.r, 16, ncclFloat, ncclSum, comm, NULL));
  EXPECT_OK(ncclGroupSimulateEnd(&small));
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllReduce(b.s, b.r, COUNT, ncclFloat, ncclSum, comm, NULL));
  EXPECT_OK(ncclAllReduce(b.s, b.r, COUNT, ncclFloat, ncclSum, comm, NULL));
  EXPECT_OK(ncclGroupSimulateEnd(&big));
  if (!(small.estimatedTime > 0 && big.estimatedTime > small.estimatedTime)) {
    fprintf(stderr, "rank %d: 16 floats: %g us, 2 x %d floats: %g us\n", rank,
            small.estimatedTime, COUNT, big.estimatedTime);
    return 1;
  }
  if (rank == 0)
    fprintf(stderr, "estimates: group %g us, 16 floats %g us, 2 x %d floats %g us\n",
            si.estimatedTime, small.estimatedTime, COUNT, big.estimatedTime);

  /* 3. Nested: the inner End reports nothing, the outer one simulates. */
  fill_sentinel(&b, &seed);
  ncclSimInfo_t inner = NCCL_SIM_INFO_INITIALIZER, outer = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclGroupStart());
  queue_group(&b, comm, rank, nranks);
  EXPECT_OK(ncclGroupSimulateEnd(&inner));
  EXPECT(inner.estimatedTime < 0);
  EXPECT_OK(ncclGroupSimulateEnd(&outer));
  EXPECT(outer.estimatedTime > 0);
  expect_untouched(&b, rank, "a nested simulated group");

  /* 4. Failure paths close the group: a wrong magic, then NULL. */
  for (int k = 0; k < 2; k++) {
    fill_sentinel(&b, &seed);
    ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
    bad.magic = 0x12345678;
    EXPECT_OK(ncclGroupStart());
    queue_group(&b, comm, rank, nranks);
    EXPECT_RES(ncclGroupSimulateEnd(k == 0 ? &bad : NULL), ncclInvalidArgument);
    expect_untouched(&b, rank, "a failed simulation");
    EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
    EXPECT_OK(ncclAllReduce(b.s, b.r, COUNT, ncclFloat, ncclSum, comm, NULL));
    expect_sums(&b, rank, nranks, "AllReduce after a failed simulation");
  }
  EXPECT_RES(ncclGroupSimulateEnd(&si), ncclInvalidUsage); /* no group open */

  /* 5. One rank simulates alone: the real collectives still match across ranks. */
  if (rank == 0) {
    ncclSimInfo_t alone = NCCL_SIM_INFO_INITIALIZER;
    EXPECT_OK(ncclGroupStart());
    EXPECT_OK(ncclBroadcast(b.s, b.r, COUNT, ncclFloat, 0, comm, NULL));
    EXPECT_OK(ncclGroupSimulateEnd(&alone));
  }
  fill_sentinel(&b, &seed);
  EXPECT_OK(ncclAllReduce(b.s, b.r, COUNT, ncclFloat, ncclSum, comm, NULL));
  expect_sums(&b, rank, nranks, "AllReduce after one rank's simulation");
  ncclResult_t async = ncclSuccess;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT_EQ_INT(async, ncclSuccess);

  EXPECT_OK(ncclCommDestroy(comm));
  free(b.s);
  free(b.r);
  free(b.before);
  free(b.all);
  free(all_before);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int n = argc > 1 ? atoi(argv[1]) : 2;
  return test_fork_ranks(n, rank_main, NULL, 90);
}
