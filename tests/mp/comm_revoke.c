/* ncclCommRevoke, ncclCommShrink and ncclCommGrow: what revoke does to a communicator, and every
 * bad input of the three (issue 40). Host mode, forked ranks.
 *
 *   thread      : rank 0 blocks in an AllReduce that rank 1 never joins; another thread of rank
 *                 0 revokes: the AllReduce returns an error within a second (WEFT_TIMEOUT_MS is
 *                 60 s); then GetAsyncError says ncclSuccess, operations and finalize are
 *                 refused, a second revoke is refused, and split works (exact sums after).
 *   nonblocking : a non-blocking communicator revokes (ncclInProgress until quiescent), and
 *                 shrinks deliberately excluding a live rank (which destroys its comm), the
 *                 new communicator initializing in the background.
 *   badargs     : every bad argument of revoke, shrink, grow, GetUniqueId, suspend, resume,
 *                 memstats: the documented error, never a crash or a hang.
 *   group       : the recovery calls inside groups, one thread driving every rank (group_main).
 *
 * Usage: comm_revoke thread|nonblocking|badargs|group */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const char* mode;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* AllReduce of rank-dependent integers on comm (rank r of n): checks the exact sums. */
static void check_sum(ncclComm_t comm, uint64_t seed) {
  int r, n;
  EXPECT_OK(ncclCommUserRank(comm, &r));
  EXPECT_OK(ncclCommCount(comm, &n));
  enum { COUNT = 3000 };
  int32_t* b = malloc(COUNT * sizeof *b);
  EXPECT(b);
  for (int i = 0; i < COUNT; i++) b[i] = (int32_t)((seed + (uint64_t)i * 7 + (uint64_t)r * 131) % 1000);
  EXPECT_OK(ncclAllReduce(b, b, COUNT, ncclInt32, ncclSum, comm, NULL));
  for (int i = 0; i < COUNT; i++) {
    int32_t want = 0;
    for (int k = 0; k < n; k++) want += (int32_t)((seed + (uint64_t)i * 7 + (uint64_t)k * 131) % 1000);
    EXPECT_EQ_INT(b[i], want);
  }
  free(b);
}

static void wait_ready(ncclComm_t comm) {
  ncclResult_t st = ncclInProgress;
  for (int i = 0; i < 20000 && st == ncclInProgress; i++) {
    EXPECT_OK(ncclCommGetAsyncError(comm, &st));
    if (st == ncclInProgress) usleep(1000);
  }
  EXPECT_EQ_INT(st, ncclSuccess);
}

typedef struct {
  ncclComm_t comm;
  ncclResult_t res;
} revoke_job;

static void* revoke_later(void* arg) {
  revoke_job* j = arg;
  usleep(200 * 1000);
  j->res = ncclCommRevoke(j->comm, NCCL_REVOKE_DEFAULT);
  return NULL;
}

static int thread_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  uint64_t seed = test_seed(0x5eed);
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  int32_t x[256] = {0};
  if (rank == 0) {
    revoke_job j = {.comm = comm, .res = ncclInternalError};
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, revoke_later, &j) == 0);
    double t0 = now_ms();
    ncclResult_t res = ncclAllReduce(x, x, 256, ncclInt32, ncclSum, comm, NULL);
    double took = now_ms() - t0;
    pthread_join(t, NULL);
    printf("rank 0: AllReduce blocked on rank 1 ended %.0f ms later with %s; revoke: %s\n", took,
           ncclGetErrorString(res), ncclGetErrorString(j.res));
    EXPECT(res != ncclSuccess);
    EXPECT(took < 1500);
    EXPECT_OK(j.res);
  } else {
    usleep(600 * 1000); /* never joins that AllReduce */
    EXPECT_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
  }
  ncclResult_t as;
  EXPECT_OK(ncclCommGetAsyncError(comm, &as));
  EXPECT_EQ_INT(as, ncclSuccess);
  EXPECT_RES(ncclAllReduce(x, x, 1, ncclInt32, ncclSum, comm, NULL), ncclInvalidUsage);
  EXPECT_RES(ncclCommFinalize(comm), ncclInvalidUsage);
  EXPECT_RES(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclInvalidArgument);
  /* queued in a group, then refused at its end */
  EXPECT_OK(ncclGroupStart());
  ncclResult_t q = ncclAllReduce(x, x, 1, ncclInt32, ncclSum, comm, NULL);
  ncclResult_t e = ncclGroupEnd();
  EXPECT(q == ncclInvalidUsage || e == ncclInvalidUsage);
  ncclComm_t sub;
  EXPECT_OK(ncclCommSplit(comm, 0, nranks - rank, &sub, NULL)); /* reversed order */
  int sr;
  EXPECT_OK(ncclCommUserRank(sub, &sr));
  EXPECT_EQ_INT(sr, nranks - 1 - rank);
  check_sum(sub, seed);
  EXPECT_OK(ncclCommDestroy(comm));
  EXPECT_OK(ncclCommDestroy(sub));
  return 0;
}

static int nonblocking_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  uint64_t seed = test_seed(0xb10c);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm;
  ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, *id, rank, &cfg);
  EXPECT(r == ncclSuccess || r == ncclInProgress);
  wait_ready(comm);
  check_sum(comm, seed);
  int excluded = nranks - 1; /* deliberately, alive */
  if (rank == excluded) {
    EXPECT_OK(ncclCommDestroy(comm));
    return 0;
  }
  r = ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT);
  EXPECT(r == ncclSuccess || r == ncclInProgress);
  /* split or shrink while the revoke is still in progress would be refused; wait */
  wait_ready(comm);
  ncclComm_t small;
  r = ncclCommShrink(comm, &excluded, 1, &small, NULL, NCCL_SHRINK_DEFAULT);
  EXPECT(r == ncclSuccess || r == ncclInProgress);
  wait_ready(small); /* inherited: non-blocking */
  int n, me;
  EXPECT_OK(ncclCommCount(small, &n));
  EXPECT_OK(ncclCommUserRank(small, &me));
  EXPECT_EQ_INT(n, nranks - 1);
  EXPECT_EQ_INT(me, rank);
  check_sum(small, seed + 1);
  EXPECT_OK(ncclCommDestroy(comm));
  EXPECT_OK(ncclCommDestroy(small));
  return 0;
}

static int badargs_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm, out = NULL;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  /* revoke */
  EXPECT_RES(ncclCommRevoke(NULL, NCCL_REVOKE_DEFAULT), ncclInvalidArgument);
  EXPECT_RES(ncclCommRevoke(comm, 1), ncclInvalidArgument);
  /* shrink */
  int self = rank, other = (rank + 1) % nranks, two[2] = {other, other}, big = nranks;
  int neg = -1;
  EXPECT_RES(ncclCommShrink(NULL, &other, 1, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, &self, 1, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, two, 2, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, &big, 1, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, &neg, 1, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, &other, -1, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, &other, nranks, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, NULL, 1, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, &other, 1, NULL, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommShrink(comm, &other, 1, &out, NULL, 2), ncclInvalidArgument);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_RES(ncclCommShrink(comm, &other, 1, &out, &bad, 0), ncclInvalidArgument);
  /* grow */
  ncclUniqueId gid, fake;
  memset(&fake, 0x5a, sizeof fake);
  EXPECT_RES(ncclCommGetUniqueId(comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommGetUniqueId(NULL, &gid), ncclInvalidArgument);
  EXPECT_RES(ncclCommGrow(comm, nranks + 1, NULL, 0, &out, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommGrow(comm, nranks, NULL, -1, &out, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommGrow(comm, nranks + 1, NULL, -1, NULL, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommGrow(comm, nranks + 1, &fake, -1, &out, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommGrow(NULL, nranks + 1, &fake, 0, &out, NULL), ncclInvalidArgument);
  EXPECT_OK(ncclCommGetUniqueId(comm, &gid));
  EXPECT_RES(ncclCommGetUniqueId(comm, &gid), ncclInvalidUsage); /* one unused id at a time */
  /* suspend, resume, memstats */
  uint64_t v = 7;
  EXPECT_RES(ncclCommSuspend(comm, 0x2), ncclInvalidArgument);
  EXPECT_RES(ncclCommSuspend(NULL, NCCL_SUSPEND_MEM), ncclInvalidArgument);
  EXPECT_RES(ncclCommResume(comm), ncclInvalidUsage); /* not suspended */
  EXPECT_RES(ncclCommResume(NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommMemStats(comm, (ncclCommMemStat_t)4, &v), ncclInvalidArgument);
  EXPECT_RES(ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommMemStats(NULL, ncclStatGpuMemTotal, &v), ncclInvalidArgument);
  EXPECT_OK(ncclCommSuspend(comm, 0)); /* nothing asked: nothing done, as in NCCL */
  EXPECT_OK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
  EXPECT_EQ_INT(v, 0);
  EXPECT_OK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
  EXPECT_RES(ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
  EXPECT_OK(ncclCommResume(comm));
  /* inside a group: bad arguments are still refused at the call, and leave the group as it
   * was (its end succeeds) */
  EXPECT_OK(ncclGroupStart());
  EXPECT_RES(ncclCommShrink(comm, &self, 1, &out, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommGrow(comm, nranks, NULL, -1, &out, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommSuspend(comm, 0x2), ncclInvalidArgument);
  EXPECT_OK(ncclGroupEnd());
  EXPECT(out == NULL);
  /* revoke with an operation queued in an open group: the group's end refuses it; then
   * finalize and a second revoke are refused */
  int32_t x = rank;
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL));
  EXPECT_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_EQ_INT(x, rank); /* never ran */
  EXPECT_RES(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclInvalidArgument);
  EXPECT_RES(ncclCommFinalize(comm), ncclInvalidUsage);
  EXPECT_RES(ncclCommGetUniqueId(comm, &gid), ncclInvalidUsage);
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

/* "group": one thread drives the 3 ranks of a communicator (ncclCommInitAll) and uses the
 * recovery calls inside groups, as NCCL allows: suspend and resume of every rank in one group
 * each; a shrink of ranks 0 and 1 (excluding 2) in one group, *newcomm NULL until the End; an
 * existing-rank grow of both back to 3 in one group while a thread of the new rank grows. */
typedef struct {
  ncclUniqueId id;
  ncclComm_t comm;
  ncclResult_t res;
} new_rank_job;

static void* new_rank_thread(void* arg) {
  new_rank_job* j = arg;
  j->res = ncclCommGrow(NULL, 3, &j->id, 2, &j->comm, NULL);
  if (j->res == ncclSuccess) check_sum(j->comm, 0x6707);
  return NULL;
}

static void sums_in_group(ncclComm_t* comms, int n, uint64_t seed) {
  enum { COUNT = 2000 };
  int32_t* b[3];
  for (int c = 0; c < n; c++) {
    EXPECT((b[c] = malloc(COUNT * sizeof(int32_t))) != NULL);
    for (int i = 0; i < COUNT; i++) b[c][i] = (int32_t)((seed + (uint64_t)i * 7 + (uint64_t)c * 131) % 1000);
  }
  EXPECT_OK(ncclGroupStart());
  for (int c = 0; c < n; c++)
    EXPECT_OK(ncclAllReduce(b[c], b[c], COUNT, ncclInt32, ncclSum, comms[c], NULL));
  EXPECT_OK(ncclGroupEnd());
  for (int i = 0; i < COUNT; i++) {
    int32_t want = 0;
    for (int k = 0; k < n; k++) want += (int32_t)((seed + (uint64_t)i * 7 + (uint64_t)k * 131) % 1000);
    for (int c = 0; c < n; c++) EXPECT_EQ_INT(b[c][i], want);
  }
  for (int c = 0; c < n; c++) free(b[c]);
}

static int group_main(void) {
  uint64_t st = test_seed(0x5eed);
  ncclComm_t comms[3], small[2] = {NULL, NULL}, grown[2] = {NULL, NULL};
  EXPECT_OK(ncclCommInitAll(comms, 3, NULL));
  sums_in_group(comms, 3, test_rand(&st));
  uint64_t v = 0;
  EXPECT_OK(ncclGroupStart());
  for (int c = 0; c < 3; c++) EXPECT_OK(ncclCommSuspend(comms[c], NCCL_SUSPEND_MEM));
  EXPECT_OK(ncclCommMemStats(comms[0], ncclStatGpuMemSuspended, &v));
  EXPECT_EQ_INT(v, 0); /* not before the End */
  EXPECT_OK(ncclGroupEnd());
  for (int c = 0; c < 3; c++) {
    EXPECT_OK(ncclCommMemStats(comms[c], ncclStatGpuMemSuspended, &v));
    EXPECT_EQ_INT(v, 1);
  }
  EXPECT_OK(ncclGroupStart());
  for (int c = 0; c < 3; c++) EXPECT_OK(ncclCommResume(comms[c]));
  EXPECT_OK(ncclGroupEnd());
  sums_in_group(comms, 3, test_rand(&st));
  int gone = 2;
  EXPECT_OK(ncclGroupStart());
  for (int c = 0; c < 2; c++)
    EXPECT_OK(ncclCommShrink(comms[c], &gone, 1, &small[c], NULL, NCCL_SHRINK_DEFAULT));
  EXPECT(small[0] == NULL && small[1] == NULL);
  EXPECT_OK(ncclGroupEnd());
  EXPECT(small[0] != NULL && small[1] != NULL);
  for (int c = 0; c < 2; c++) {
    int n = 0, r = -1;
    EXPECT_OK(ncclCommCount(small[c], &n));
    EXPECT_OK(ncclCommUserRank(small[c], &r));
    EXPECT_EQ_INT(n, 2);
    EXPECT_EQ_INT(r, c);
  }
  sums_in_group(small, 2, test_rand(&st));
  new_rank_job j = {.comm = NULL};
  EXPECT_OK(ncclCommGetUniqueId(small[0], &j.id));
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, new_rank_thread, &j) == 0);
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclCommGrow(small[0], 3, &j.id, -1, &grown[0], NULL));
  EXPECT_OK(ncclCommGrow(small[1], 3, NULL, -1, &grown[1], NULL));
  EXPECT_OK(ncclGroupEnd());
  /* the grown communicator's first AllReduce, with the new rank's thread */
  EXPECT_OK(ncclGroupStart());
  enum { COUNT = 3000 };
  int32_t* b[2];
  for (int c = 0; c < 2; c++) {
    EXPECT((b[c] = malloc(COUNT * sizeof(int32_t))) != NULL);
    for (int i = 0; i < COUNT; i++) b[c][i] = (int32_t)((0x6707 + (uint64_t)i * 7 + (uint64_t)c * 131) % 1000);
    EXPECT_OK(ncclAllReduce(b[c], b[c], COUNT, ncclInt32, ncclSum, grown[c], NULL));
  }
  EXPECT_OK(ncclGroupEnd());
  pthread_join(t, NULL);
  EXPECT_OK(j.res);
  for (int i = 0; i < COUNT; i++) {
    int32_t want = 0;
    for (int k = 0; k < 3; k++) want += (int32_t)((0x6707 + (uint64_t)i * 7 + (uint64_t)k * 131) % 1000);
    for (int c = 0; c < 2; c++) EXPECT_EQ_INT(b[c][i], want);
  }
  for (int c = 0; c < 2; c++) free(b[c]);
  for (int c = 0; c < 3; c++) EXPECT_OK(ncclCommDestroy(comms[c]));
  for (int c = 0; c < 2; c++) EXPECT_OK(ncclCommDestroy(small[c]));
  for (int c = 0; c < 2; c++) EXPECT_OK(ncclCommDestroy(grown[c]));
  EXPECT_OK(ncclCommDestroy(j.comm));
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  mode = argc > 1 ? argv[1] : "thread";
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  printf("seed 0x%llx (WEFT_TEST_SEED replays it)\n", (unsigned long long)test_seed(0x5eed));
  if (strcmp(mode, "thread") == 0) return test_fork_ranks(2, thread_rank, NULL, 60);
  if (strcmp(mode, "nonblocking") == 0) return test_fork_ranks(3, nonblocking_rank, NULL, 60);
  if (strcmp(mode, "badargs") == 0) return test_fork_ranks(2, badargs_rank, NULL, 60);
  if (strcmp(mode, "group") == 0) return group_main();
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
