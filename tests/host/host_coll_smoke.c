/* Every collective and send/recv on the host executor, checked exactly: random int32 data
 * (small values, so sums never overflow) that every rank can regenerate for every other rank,
 * in-place and out-of-place, over sizes from 0 to several FIFO rounds.
 *
 * Usage: host_coll_smoke NRANKS PROTO TRANSPORT [ALGO]
 *   PROTO Simple|LL, TRANSPORT shm|net, ALGO Ring|Tree (AllReduce; default Ring).
 * Small NCCL_BUFFSIZE / NCCL_LL_BUFFSIZE make the FIFOs wrap many times. The configuration is
 * put in the environment before the ranks are forked (weft reads it once per process). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm_check.h"
#include "testutil.h"

static int32_t value(int rank, size_t i, uint32_t salt) {
  uint64_t x = ((uint64_t)rank << 40) ^ ((uint64_t)i << 8) ^ salt;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return (int32_t)(x % 2001) - 1000;
}

static void fill(int32_t* p, size_t n, int rank, uint32_t salt) {
  for (size_t i = 0; i < n; i++) p[i] = value(rank, i, salt);
}

static int32_t* alloc(size_t n) {
  int32_t* p = malloc((n ? n : 1) * sizeof *p);
  EXPECT(p != NULL);
  memset(p, 0x5a, (n ? n : 1) * sizeof *p);
  return p;
}

static void expect_eq(const int32_t* got, const int32_t* want, size_t n, const char* what,
                      size_t count, int inplace) {
  for (size_t i = 0; i < n; i++) {
    if (got[i] != want[i]) {
      fprintf(stderr, "%s count %zu %s: element %zu is %d, expected %d\n", what, count,
              inplace ? "in place" : "out of place", i, got[i], want[i]);
      exit(1);
    }
  }
}

static int32_t combine(int32_t a, int32_t b, ncclRedOp_t op) {
  switch (op) {
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a + b;
  }
}

static void allreduce(ncclComm_t comm, int rank, int n, size_t count, int inplace,
                      ncclRedOp_t op, uint32_t salt) {
  int32_t *s = alloc(count), *r = inplace ? s : alloc(count), *want = alloc(count);
  fill(s, count, rank, salt);
  for (size_t i = 0; i < count; i++) {
    int32_t v = value(0, i, salt);
    for (int k = 1; k < n; k++) v = combine(v, value(k, i, salt), op);
    want[i] = v;
  }
  EXPECT_OK(ncclAllReduce(s, r, count, ncclInt32, op, comm, NULL));
  expect_eq(r, want, count, "AllReduce", count, inplace);
  if (!inplace) free(r);
  free(s);
  free(want);
}

static void allgather(ncclComm_t comm, int rank, int n, size_t count, int inplace, uint32_t salt) {
  int32_t* r = alloc(count * (size_t)n);
  int32_t* s = inplace ? r + (size_t)rank * count : alloc(count);
  fill(s, count, rank, salt);
  int32_t* want = alloc(count * (size_t)n);
  for (int k = 0; k < n; k++) fill(want + (size_t)k * count, count, k, salt);
  EXPECT_OK(ncclAllGather(s, r, count, ncclInt32, comm, NULL));
  expect_eq(r, want, count * (size_t)n, "AllGather", count, inplace);
  if (!inplace) free(s);
  free(r);
  free(want);
}

static void reducescatter(ncclComm_t comm, int rank, int n, size_t count, int inplace,
                          uint32_t salt) {
  int32_t* s = alloc(count * (size_t)n);
  fill(s, count * (size_t)n, rank, salt);
  int32_t* r = inplace ? s + (size_t)rank * count : alloc(count);
  int32_t* want = alloc(count);
  for (size_t i = 0; i < count; i++) {
    int32_t v = 0;
    for (int k = 0; k < n; k++) v += value(k, (size_t)rank * count + i, salt);
    want[i] = v;
  }
  EXPECT_OK(ncclReduceScatter(s, r, count, ncclInt32, ncclSum, comm, NULL));
  expect_eq(r, want, count, "ReduceScatter", count, inplace);
  if (!inplace) free(r);
  free(s);
  free(want);
}

static void broadcast(ncclComm_t comm, int rank, int n, size_t count, int inplace, uint32_t salt) {
  int root = (int)(count % (size_t)n);
  int32_t *s = alloc(count), *r = inplace ? s : alloc(count), *want = alloc(count);
  fill(s, count, rank, salt);
  fill(want, count, root, salt);
  EXPECT_OK(ncclBroadcast(s, r, count, ncclInt32, root, comm, NULL));
  expect_eq(r, want, count, "Broadcast", count, inplace);
  if (!inplace) free(r);
  free(s);
  free(want);
}

static void reduce(ncclComm_t comm, int rank, int n, size_t count, int inplace, uint32_t salt) {
  int root = (int)((count + 1) % (size_t)n);
  int32_t *s = alloc(count), *r = inplace ? s : alloc(count), *want = alloc(count);
  fill(s, count, rank, salt);
  for (size_t i = 0; i < count; i++) {
    int32_t v = 0;
    for (int k = 0; k < n; k++) v += value(k, i, salt);
    want[i] = v;
  }
  EXPECT_OK(ncclReduce(s, r, count, ncclInt32, ncclSum, root, comm, NULL));
  if (rank == root) expect_eq(r, want, count, "Reduce", count, inplace);
  if (!inplace) free(r);
  free(s);
  free(want);
}

/* Each rank sends to rank+1 and receives from rank-1 in one group. */
static void sendrecv(ncclComm_t comm, int rank, int n, size_t count, uint32_t salt) {
  int32_t *s = alloc(count), *r = alloc(count), *want = alloc(count);
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  fill(s, count, rank, salt);
  fill(want, count, prev, salt);
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclSend(s, count, ncclInt32, next, comm, NULL));
  EXPECT_OK(ncclRecv(r, count, ncclInt32, prev, comm, NULL));
  EXPECT_OK(ncclGroupEnd());
  expect_eq(r, want, count, "SendRecv", count, 0);
  free(s);
  free(r);
  free(want);
}

static void alltoall(ncclComm_t comm, int rank, int n, size_t count, uint32_t salt) {
  size_t total = count * (size_t)n;
  int32_t *s = alloc(total), *r = alloc(total), *want = alloc(total);
  fill(s, total, rank, salt);
  for (int k = 0; k < n; k++)
    for (size_t i = 0; i < count; i++)
      want[(size_t)k * count + i] = value(k, (size_t)rank * count + i, salt);
  EXPECT_OK(ncclAlltoAll(s, r, count, ncclInt32, comm, NULL));
  expect_eq(r, want, total, "AlltoAll", count, 0);
  free(s);
  free(r);
  free(want);
}

static int rank_main(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, n, *id, rank));
  const size_t sizes[] = {0, 1, 5, 63, 1000, 4099, 70001, 300007};
  uint32_t salt = 1;
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    size_t c = sizes[si];
    for (int inplace = 0; inplace < 2; inplace++) {
      allreduce(comm, rank, n, c, inplace, ncclSum, salt++);
      allreduce(comm, rank, n, c, inplace, ncclMax, salt++);
      allgather(comm, rank, n, c, inplace, salt++);
      reducescatter(comm, rank, n, c, inplace, salt++);
      broadcast(comm, rank, n, c, inplace, salt++);
      reduce(comm, rank, n, c, inplace, salt++);
    }
    sendrecv(comm, rank, n, c, salt++);
    alltoall(comm, rank, n, c, salt++);
  }
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc < 4) {
    fprintf(stderr, "usage: %s NRANKS Simple|LL shm|net [Ring|Tree]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  setenv("NCCL_PROTO", argv[2], 1);
  setenv("NCCL_SHM_DISABLE", strcmp(argv[3], "net") == 0 ? "1" : "0", 1);
  /* Tree exists for AllReduce only: everything else keeps Ring. */
  int tree = argc > 4 && strcmp(argv[4], "Tree") == 0;
  setenv("NCCL_ALGO", tree ? "Ring;allreduce:Tree" : "Ring", 1);
  if (!getenv("NCCL_BUFFSIZE")) setenv("NCCL_BUFFSIZE", "65536", 1);
  if (!getenv("NCCL_LL_BUFFSIZE")) setenv("NCCL_LL_BUFFSIZE", "16384", 1);
  printf("%d ranks, %s, %s, %s\n", n, argv[2], argv[3], argc > 4 ? argv[4] : "Ring");
  int rc = test_fork_ranks(n, rank_main, NULL, 120);
  if (shm_orphan_segments()) rc = 1;
  return rc;
}
