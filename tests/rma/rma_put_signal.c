/* One-sided puts and signals between host-mode ranks, checked against a reference each target
 * computes on its own: in every round each rank puts a random number of random-sized pieces
 * (random datatype, source offset and target offset) from its source window into its own
 * region of every rank's window (itself included), sometimes adds bare signals, and then
 * waits, once, for the signals of every rank. The regions are compared with what the puts in
 * order must have left there; an AllReduce (checked too) separates the rounds, and odd rounds
 * issue their puts inside a group with that AllReduce. Small FIFO steps (NCCL_BUFFSIZE) make
 * the larger puts span many steps and fill the FIFO, so the target's rma thread must drain
 * while the target's program is busy elsewhere.
 *
 * Usage: rma_put_signal <nranks> shm|net
 *        rma_put_signal --rank R <nranks>: one rank of a job started elsewhere (rma_netns.sh:
 *        ranks on two hosts), the unique id from NCCL_COMM_ID, the seed from WEFT_TEST_SEED
 *        (the same on every rank, so each computes the same plan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rma_ref.h"
#include "testutil.h"

#define ROUNDS 4
#define SRC_BYTES (300 * 1024)

typedef struct {
  uint64_t seed;
  size_t region; /* bytes of each source's region in a target's window (same on every rank) */
} params;

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  const params* pr = arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  size_t wbytes = pr->region * (size_t)nranks;
  char* win_buf = malloc(wbytes);
  char* src_buf = malloc(SRC_BYTES);
  char* expect = malloc(wbytes);
  char* src_ref = malloc(SRC_BYTES);
  EXPECT(win_buf && src_buf && expect && src_ref);
  rma_ref_fill(win_buf, wbytes, rma_ref_mix(pr->seed, 99, (uint64_t)rank + 1, 0));
  memcpy(expect, win_buf, wbytes);
  ncclWindow_t win, src_win;
  EXPECT_OK(ncclCommWindowRegister(comm, win_buf, wbytes, &win, NCCL_WIN_COLL_SYMMETRIC));
  EXPECT_OK(ncclCommWindowRegister(comm, src_buf, SRC_BYTES, &src_win, NCCL_WIN_COLL_SYMMETRIC));
  void* user = NULL;
  EXPECT_OK(ncclWinGetUserPtr(comm, win, &user));
  EXPECT(user == win_buf);

  enum { AR = 1024 };
  int64_t ar[AR];
  rma_ref_op ops[RMA_REF_MAX_OPS];
  ncclWaitSignalDesc_t* descs = calloc((size_t)nranks, sizeof *descs);
  for (int round = 0; round < ROUNDS; round++) {
    rma_ref_fill(src_buf, SRC_BYTES,
                 rma_ref_mix(pr->seed, 7, (uint64_t)rank + 1, (uint64_t)round + 1));
    for (int i = 0; i < AR; i++) ar[i] = (int64_t)(rank + 1) * (i + round);
    int grouped = round % 2 == 1;
    if (grouped) EXPECT_OK(ncclGroupStart());
    for (int k = 0; k < nranks; k++) {
      int t = (rank + 1 + k) % nranks;
      int n = rma_ref_plan(pr->seed, round, rank, t, pr->region, SRC_BYTES, ops);
      for (int i = 0; i < n; i++) {
        if (ops[i].signal_only) {
          EXPECT_OK(ncclSignal(t, 0, 0, 0, comm, NULL));
          continue;
        }
        EXPECT_OK(ncclPutSignal(src_buf + ops[i].src_off, ops[i].count, ops[i].type, t, win,
                                (size_t)rank * pr->region + ops[i].dst_off, 0, 0, 0, comm,
                                NULL));
      }
      if (k == 0) EXPECT_OK(ncclAllReduce(ar, ar, AR, ncclInt64, ncclSum, comm, NULL));
    }
    if (grouped) EXPECT_OK(ncclGroupEnd());
    /* the reference: every source's ops on this rank, in order */
    for (int s = 0; s < nranks; s++) {
      rma_ref_fill(src_ref, SRC_BYTES,
                   rma_ref_mix(pr->seed, 7, (uint64_t)s + 1, (uint64_t)round + 1));
      int n = rma_ref_plan(pr->seed, round, s, rank, pr->region, SRC_BYTES, ops);
      descs[s] = (ncclWaitSignalDesc_t){n, s, 0, 0};
      for (int i = 0; i < n; i++)
        if (!ops[i].signal_only)
          memcpy(expect + (size_t)s * pr->region + ops[i].dst_off, src_ref + ops[i].src_off,
                 ops[i].count * rma_ref_type_size(ops[i].type));
    }
    EXPECT_OK(ncclWaitSignal(nranks, descs, comm, NULL));
    for (int s = 0; s < nranks; s++) {
      size_t base = (size_t)s * pr->region;
      for (size_t b = 0; b < pr->region; b++)
        if (win_buf[base + b] != expect[base + b]) {
          fprintf(stderr, "rank %d round %d: byte %zu of rank %d's region is %d, expected %d\n",
                  rank, round, b, s, win_buf[base + b], expect[base + b]);
          return 1;
        }
    }
    for (int i = 0; i < AR; i++) {
      int64_t want = (int64_t)nranks * (nranks + 1) / 2 * (i + round);
      if (ar[i] != want) {
        fprintf(stderr, "rank %d round %d: AllReduce element %d is %lld, expected %lld\n", rank,
                round, i, (long long)ar[i], (long long)want);
        return 1;
      }
    }
    /* the next round's puts overwrite the regions: every rank has checked this one */
    EXPECT_OK(ncclAllReduce(ar, ar, 1, ncclInt64, ncclSum, comm, NULL));
  }
  EXPECT_OK(ncclCommWindowDeregister(comm, src_win));
  EXPECT_OK(ncclCommWindowDeregister(comm, win));
  EXPECT_OK(ncclCommDestroy(comm));
  printf("rank %d: %d rounds of puts and signals matched the reference\n", rank, ROUNDS);
  free(descs);
  free(win_buf);
  free(src_buf);
  free(expect);
  free(src_ref);
  return 0;
}

/* --rank R N: every rank derives the same plan from the seed the launcher set. */
static int one_rank(int rank, int n) {
  if (!getenv("NCCL_COMM_ID") || !getenv("WEFT_TEST_SEED") || n < 2 || rank < 0 || rank >= n) {
    fprintf(stderr, "--rank R N needs 0 <= R < N, N >= 2, NCCL_COMM_ID and WEFT_TEST_SEED\n");
    return 2;
  }
  params pr;
  pr.seed = test_seed(0);
  uint64_t st = pr.seed | 1;
  pr.region = 4096 + test_rand(&st) % (200 * 1024);
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id)); /* from NCCL_COMM_ID */
  return rank_main(rank, n, &id, &pr);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc == 4 && strcmp(argv[1], "--rank") == 0) return one_rank(atoi(argv[2]), atoi(argv[3]));
  int n = argc > 1 ? atoi(argv[1]) : 3;
  if (argc > 2 && strcmp(argv[2], "net") == 0) setenv("NCCL_SHM_DISABLE", "1", 1);
  params pr;
  pr.seed = test_seed((uint64_t)time(NULL));
  uint64_t st = pr.seed | 1;
  pr.region = 4096 + test_rand(&st) % (200 * 1024);
  printf("seed %llu (WEFT_TEST_SEED), %d ranks over %s, regions of %zu bytes\n",
         (unsigned long long)pr.seed, n, argc > 2 ? argv[2] : "shm", pr.region);
  return test_fork_ranks(n, rank_main, &pr, 100);
}
