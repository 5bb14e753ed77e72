/* Reductions beyond the plain ones, on 4 ranks (so 1/n is exact in binary): ncclAvg on
 * integers (sum then divide) and floats (pre-multiply by 1/n), ncclRedOpCreatePreMulSum with a
 * host-immediate scalar and with a "device" scalar (host memory read at each launch),
 * weftRedOpCreateCustom, and the handle rules: another communicator's handle, a destroyed one
 * and a type mismatch are ncclInvalidArgument and change nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft.h"

enum { C = 50001 };

static int32_t ival(int rank, int i) { return (int32_t)((rank * 7919 + i * 31) % 2001) - 1000; }

static void xor_fn(void* inout, const void* in, size_t count, ncclDataType_t type, void* user) {
  EXPECT(type == ncclUint32);
  uint32_t* a = inout;
  const uint32_t* b = in;
  for (size_t i = 0; i < count; i++) a[i] ^= b[i];
  __atomic_add_fetch((int*)user, 1, __ATOMIC_RELAXED);
}

static void check_i32(const int32_t* got, int rank, int n, int mult, int avg) {
  for (int i = 0; i < C; i++) {
    int64_t s = 0;
    for (int r = 0; r < n; r++) s += ival(r, i);
    int32_t want = avg ? (int32_t)(s / n) : (int32_t)(s * mult);
    if (got[i] != want) {
      fprintf(stderr, "rank %d: element %d is %d, expected %d (mult %d avg %d)\n", rank, i,
              got[i], want, mult, avg);
      exit(1);
    }
  }
}

static int rank_main(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm, other;
  EXPECT_OK(ncclCommInitRank(&comm, n, *id, rank));
  EXPECT_OK(ncclCommSplit(comm, 0, rank, &other, NULL));
  int32_t* s = malloc(C * sizeof *s);
  int32_t* r = malloc(C * sizeof *r);
  for (int i = 0; i < C; i++) s[i] = ival(rank, i);

  /* Avg on int32: SumPostDiv. */
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, ncclAvg, comm, NULL));
  check_i32(r, rank, n, 1, 1);

  /* Avg on float: exact here (values are small integers, n a power of two). */
  float* fs = malloc(C * sizeof *fs);
  float* fr = malloc(C * sizeof *fr);
  for (int i = 0; i < C; i++) fs[i] = (float)ival(rank, i);
  EXPECT_OK(ncclAllReduce(fs, fr, C, ncclFloat, ncclAvg, comm, NULL));
  for (int i = 0; i < C; i++) {
    float want = 0;
    for (int k = 0; k < n; k++) want += (float)ival(k, i) / (float)n;
    EXPECT(fr[i] == want);
  }

  /* PreMulSum, host immediate: the scalar is copied now. */
  int32_t three = 3;
  ncclRedOp_t pm;
  EXPECT_OK(ncclRedOpCreatePreMulSum(&pm, &three, ncclInt32, ncclScalarHostImmediate, comm));
  three = 100; /* too late to matter */
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, pm, comm, NULL));
  check_i32(r, rank, n, 3, 0);
  /* The same op for Reduce and ReduceScatter (in place). */
  EXPECT_OK(ncclReduce(s, r, C, ncclInt32, pm, 1, comm, NULL));
  if (rank == 1) check_i32(r, rank, n, 3, 0);

  /* PreMulSum, "device" residence: host memory read at each launch. */
  int32_t scalar = 2;
  ncclRedOp_t pd;
  EXPECT_OK(ncclRedOpCreatePreMulSum(&pd, &scalar, ncclInt32, ncclScalarDevice, comm));
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, pd, comm, NULL));
  check_i32(r, rank, n, 2, 0);
  scalar = 5;
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, pd, comm, NULL));
  check_i32(r, rank, n, 5, 0);

  /* Handle rules: each is rejected and has no effect. */
  EXPECT_RES(ncclAllReduce(s, r, C, ncclInt32, pm, other, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclAllReduce(fs, fr, C, ncclFloat, pm, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
  EXPECT_RES(ncclRedOpDestroy(pm, other), ncclInvalidArgument);
  EXPECT_OK(ncclRedOpDestroy(pm, comm));
  EXPECT_RES(ncclRedOpDestroy(pm, comm), ncclInvalidArgument);
  EXPECT_RES(ncclAllReduce(s, r, C, ncclInt32, pm, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclAllReduce(s, r, C, ncclInt32, (ncclRedOp_t)-1, comm, NULL), ncclInvalidArgument);
  /* A new op may reuse the slot; the old handle still does not work. */
  ncclRedOp_t pm2;
  EXPECT_OK(ncclRedOpCreatePreMulSum(&pm2, &three, ncclInt32, ncclScalarHostImmediate, comm));
  EXPECT(pm2 != pm);
  EXPECT_RES(ncclAllReduce(s, r, C, ncclInt32, pm, comm, NULL), ncclInvalidArgument);
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, pm2, comm, NULL));
  check_i32(r, rank, n, 100, 0);

  /* Custom: XOR on uint32, through ReduceScatter in place and AllReduce on a tree-sized run. */
  int calls = 0;
  ncclRedOp_t cx;
  EXPECT_OK(weftRedOpCreateCustom(&cx, xor_fn, &calls, comm));
  uint32_t* us = malloc((size_t)C * (size_t)n * sizeof *us);
  for (size_t i = 0; i < (size_t)C * (size_t)n; i++)
    us[i] = (uint32_t)(rank * 2654435761u + i * 40503u);
  EXPECT_OK(ncclReduceScatter(us, us + (size_t)rank * C, C, ncclUint32, cx, comm, NULL));
  for (int i = 0; i < C; i++) {
    uint32_t want = 0;
    size_t at = (size_t)rank * C + (size_t)i;
    for (int k = 0; k < n; k++) want ^= (uint32_t)(k * 2654435761u + at * 40503u);
    EXPECT(us[at] == want);
  }
  EXPECT(calls > 0);
  EXPECT_OK(ncclRedOpDestroy(cx, comm));
  EXPECT_OK(ncclRedOpDestroy(pd, comm));
  EXPECT_OK(ncclRedOpDestroy(pm2, comm));

  /* The communicator still works after all the rejected calls. */
  EXPECT_OK(ncclAllReduce(s, r, C, ncclInt32, ncclSum, comm, NULL));
  check_i32(r, rank, n, 1, 0);
  EXPECT_OK(ncclCommDestroy(other));
  EXPECT_OK(ncclCommDestroy(comm));
  free(s);
  free(r);
  free(fs);
  free(fr);
  free(us);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  /* "tree": AllReduce on the tree (everything else needs the ring). */
  if (argc > 1 && strcmp(argv[1], "tree") == 0) setenv("NCCL_ALGO", "Ring;allreduce:Tree", 1);
  return test_fork_ranks(4, rank_main, NULL, 120);
}
