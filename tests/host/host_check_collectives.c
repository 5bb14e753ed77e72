/* WEFT_CHECK_COLLECTIVES=1 on 3 ranks: a collective whose count, datatype, op or root differs
 * on one rank, or a group with a different number of collectives, fails on every rank with
 * ncclInvalidUsage and a message naming the ranks and the field, without hanging; the
 * communicator keeps working afterwards. So does one whose arguments agree but whose plan does
 * not: communicators split off after one rank set NCCL_ALGO (or NCCL_PROTO) differently. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

enum { C = 1000 };

static void expect_msg(const char* want1, const char* want2) {
  const char* msg = ncclGetLastError(NULL);
  if (!strstr(msg, want1) || !strstr(msg, want2)) {
    fprintf(stderr, "last error \"%s\" does not mention \"%s\" and \"%s\"\n", msg, want1, want2);
    exit(1);
  }
}

static void good_allreduce(ncclComm_t comm, int n) {
  int32_t s[C], r[C];
  for (int i = 0; i < C; i++) s[i] = i;
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, ncclSum, comm, NULL));
  for (int i = 0; i < C; i++) EXPECT_EQ_INT(r[i], n * i);
}

static int rank_main(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, n, *id, rank));
  static int32_t s[C + 1], r[C + 1];
  good_allreduce(comm, n);

  /* count differs on rank 2 */
  EXPECT_RES(ncclAllReduce(s, r, rank == 2 ? C + 1 : C, ncclInt32, ncclSum, comm, NULL),
             ncclInvalidUsage);
  expect_msg("count", "rank 2");
  good_allreduce(comm, n);

  /* datatype differs on rank 1 */
  EXPECT_RES(ncclAllReduce(s, r, C, rank == 1 ? ncclUint32 : ncclInt32, ncclSum, comm, NULL),
             ncclInvalidUsage);
  expect_msg("datatype", "rank 1");

  /* root differs on rank 2 */
  EXPECT_RES(ncclBroadcast(s, r, C, ncclInt32, rank == 2 ? 1 : 0, comm, NULL), ncclInvalidUsage);
  expect_msg("root", "rank 2");

  /* op differs in the second collective of a group */
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllGather(s, r, 10, ncclInt32, comm, NULL));
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, rank == 1 ? ncclMax : ncclSum, comm, NULL));
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
  expect_msg("reduction op", "rank 1");

  /* rank 0 launches one collective more */
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, ncclSum, comm, NULL));
  if (rank == 0) EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, ncclSum, comm, NULL));
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
  expect_msg("numbers of collectives", "rank 1");

  /* different collectives */
  if (rank == 0)
    EXPECT_RES(ncclReduce(s, r, C, ncclInt32, ncclSum, 0, comm, NULL), ncclInvalidUsage);
  else
    EXPECT_RES(ncclAllReduce(s, r, C, ncclInt32, ncclSum, comm, NULL), ncclInvalidUsage);
  expect_msg("collective", "rank 1");

  ncclResult_t async;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT_EQ_INT(async, ncclSuccess);
  good_allreduce(comm, n);

  /* the same call, a different algorithm, then protocol, on rank 2: each setting is read when
   * a communicator starts, so each case splits one off after setting it */
  static const char* const knobs[][4] = {{"NCCL_ALGO", "Ring", "Tree", "algorithm chosen"},
                                         {"NCCL_PROTO", "Simple", "LL", "protocol chosen"}};
  for (int k = 0; k < 2; k++) {
    setenv(knobs[k][0], rank == 2 ? knobs[k][2] : knobs[k][1], 1);
    ncclComm_t sub;
    EXPECT_OK(ncclCommSplit(comm, 0, rank, &sub, NULL));
    EXPECT_RES(ncclAllReduce(s, r, C, ncclInt32, ncclSum, sub, NULL), ncclInvalidUsage);
    expect_msg(knobs[k][3], "rank 2");
    expect_msg(knobs[k][1], knobs[k][2]); /* both plans are named */
    unsetenv(knobs[k][0]);
    EXPECT_OK(ncclCommDestroy(sub));
  }
  good_allreduce(comm, n);
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(void) {
  test_require_weft_lib();
  setenv("WEFT_CHECK_COLLECTIVES", "1", 1);
  return test_fork_ranks(3, rank_main, NULL, 60);
}
