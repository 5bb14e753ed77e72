/* ncclConfig_t across header versions (issue 50): a program built against NCCL 2.28's header
 * passes an 80-byte config, whose 16 bytes past its size hold values that would be refused if
 * read as 2.30's graphUsageMode/numRmaCtx/maxP2pPeers/graphStreamOrdering; its init succeeds
 * and an AllReduce on it gives the right sums. A 96-byte
 * (2.30) config has those fields read: a value out of NCCL's range in any of them is refused,
 * accepted values init a working communicator.
 *
 * Usage: comm_config_sizes NRANKS */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft.h"

/* NCCL 2.28's ncclConfig_t, as a program built against that header lays it out. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char* netName;
  int splitShare, trafficClass;
  const char* commName;
  int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
} config_2_28;

#define COUNT 1031

static void allreduce_check(ncclComm_t comm, int rank, int nranks) {
  uint64_t seed = test_seed(2228);
  float *s = malloc(COUNT * sizeof *s), *r = malloc(COUNT * sizeof *r);
  for (int i = 0; i < COUNT; i++) {
    uint64_t x = seed + (uint64_t)rank * 1000003u + (uint64_t)i;
    s[i] = (float)(test_rand(&x) % 1000);
  }
  EXPECT_OK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL));
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int k = 0; k < nranks; k++) {
      uint64_t x = seed + (uint64_t)k * 1000003u + (uint64_t)i;
      want += (float)(test_rand(&x) % 1000);
    }
    if (r[i] != want) {
      fprintf(stderr, "rank %d: r[%d] = %g, expected %g\n", rank, i, r[i], want);
      exit(1);
    }
  }
  free(s);
  free(r);
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  EXPECT_EQ_INT(sizeof(config_2_28), 80);
  EXPECT_EQ_INT(sizeof(ncclConfig_t), 96);
  /* 2.28's config, then what lies after it in the caller's memory. */
  struct {
    config_2_28 c;
    int after[4];
  } old;
  memset(&old, 0, sizeof old);
  old.c.size = sizeof old.c;
  old.c.magic = 0xcafebeef;
  old.c.version = NCCL_VERSION(2, 28, 9);
  old.c.blocking = 1;
  old.c.cgaClusterSize = old.c.minCTAs = old.c.maxCTAs = NCCL_CONFIG_UNDEF_INT;
  old.c.splitShare = old.c.trafficClass = NCCL_CONFIG_UNDEF_INT;
  old.c.commName = "made-with-2.28";
  old.c.collnetEnable = old.c.CTAPolicy = old.c.shrinkShare = NCCL_CONFIG_UNDEF_INT;
  old.c.nvlsCTAs = old.c.nChannelsPerNetPeer = old.c.nvlinkCentricSched = NCCL_CONFIG_UNDEF_INT;
  old.after[0] = 7;  /* graphUsageMode: 0..2 */
  old.after[1] = -3; /* numRmaCtx: >= 0 */
  old.after[2] = -1; /* maxP2pPeers: > 0 */
  old.after[3] = 5;  /* graphStreamOrdering: 0..1 */

  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRankConfig(&comm, nranks, *id, rank, (ncclConfig_t*)(void*)&old.c));
  allreduce_check(comm, rank, nranks);
  /* An id for the second communicator, from rank 0 through the first. */
  ncclUniqueId mine, *ids = malloc((size_t)nranks * sizeof *ids);
  memset(&mine, 0, sizeof mine);
  if (rank == 0) EXPECT_OK(ncclGetUniqueId(&mine));
  EXPECT_OK(weftCommOobAllGather(comm, &mine, ids, sizeof mine));
  ncclUniqueId id2 = ids[0];
  free(ids);
  ncclComm_t first = comm;

  /* 2.30's config: the new fields are read. Refused before any rendezvous, on every rank. */
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.graphUsageMode = 7;
  EXPECT_RES(ncclCommInitRankConfig(&comm, nranks, *id, rank, &c), ncclInvalidArgument);
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.graphStreamOrdering = 2;
  EXPECT_RES(ncclCommInitRankConfig(&comm, nranks, *id, rank, &c), ncclInvalidArgument);
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.numRmaCtx = -1;
  EXPECT_RES(ncclCommInitRankConfig(&comm, nranks, *id, rank, &c), ncclInvalidArgument);
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.maxP2pPeers = 0;
  EXPECT_RES(ncclCommInitRankConfig(&comm, nranks, *id, rank, &c), ncclInvalidArgument);

  /* Accepted values of every new field. */
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.graphUsageMode = 1;
  c.numRmaCtx = 2;
  c.maxP2pPeers = 1;
  c.graphStreamOrdering = 0;
  EXPECT_OK(ncclCommInitRankConfig(&comm, nranks, id2, rank, &c));
  allreduce_check(comm, rank, nranks);
  EXPECT_OK(ncclCommDestroy(comm));
  EXPECT_OK(ncclCommDestroy(first));
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int n = argc > 1 ? atoi(argv[1]) : 2;
  fprintf(stderr, "seed %llu\n", (unsigned long long)test_seed(2228));
  return test_fork_ranks(n, rank_main, NULL, 90);
}
