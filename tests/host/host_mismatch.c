/* Mismatched arguments between ranks without WEFT_CHECK_COLLECTIVES (issue 18, findings 5, 6):
 * each must be an error on every rank, soon (well inside WEFT_TIMEOUT_MS = 30 s), with a WARN
 * that names the peer and both sides' arguments; never success with truncated or wrong data.
 *   p2p_small  send 4096 floats, receive 1024 (same protocol: the signature of the first step)
 *   p2p_short  send 1024 floats, receive 4096
 *   p2p_large  send 1M floats, receive 1000 (different protocols: the other connection, once
 *              both protocols' connections exist)
 *   coll_count AllReduce, rank 1 passes count + 1
 *   coll_dtype AllReduce, rank 1 passes int32 instead of float
 *   coll_op    AllReduce, rank 1 passes ncclMax instead of ncclSum
 *   coll_root  Broadcast of 1M floats, rank 1 passes root 1, the others root 0 (issue 42): a
 *              rank that receives from the wrong root names both roots
 *   p2p_setup  send 1M floats (4 MiB), receive 1024, the p2p connections not made yet: the two
 *              sizes pick different protocols, whose connection setups do not meet (issue 42:
 *              it waited for the timeout and blamed the bootstrap)
 * A rank whose call failed aborts (as an application does), which fails its peers' next call
 * at once (finding 2). Each rank's stderr goes to a file; the parent greps the WARNs.
 *
 * Usage: host_mismatch CASE shm|net */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define SLACK_MS 8000 /* every error must come this soon (the timeout is 30 s) */
static const char* mcase;
static char logdir[256];

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Wait for and report the first error of comm; abort it either way. */
static int finish(int rank, ncclComm_t comm, ncclResult_t res, double t0) {
  double took = now_ms() - t0;
  printf("rank %d: %s after %.0f ms\n", rank, ncclGetErrorString(res), took);
  if (res == ncclSuccess) {
    fprintf(stderr, "rank %d: the mismatched call returned success\n", rank);
    return 1;
  }
  EXPECT(took < SLACK_MS);
  ncclResult_t async = ncclSuccess;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async != ncclSuccess);
  EXPECT_OK(ncclCommAbort(comm));
  return 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  char path[300];
  snprintf(path, sizeof path, "%s/rank%d.log", logdir, rank);
  EXPECT(freopen(path, "w", stderr) != NULL);
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  size_t big = 1 << 20;
  float* a = calloc(big, sizeof *a);
  float* b = calloc(big, sizeof *b);
  for (size_t i = 0; i < big; i++) a[i] = (float)(i % 7);
  /* A first matched call, so the connections exist and the failure is not at setup. */
  EXPECT_OK(ncclAllReduce(a, b, 64, ncclFloat, ncclSum, comm, NULL));
  double t0 = now_ms();
  ncclResult_t res;
  if (strncmp(mcase, "p2p_", 4) == 0) {
    size_t send = 4096, recv = 1024;
    if (!strcmp(mcase, "p2p_short")) send = 1024, recv = 4096;
    if (!strcmp(mcase, "p2p_setup")) send = big, recv = 1024;
    if (!strcmp(mcase, "p2p_large")) {
      /* Both protocols' connections exist already (as in any application after warm-up);
       * connection setup for a protocol only one side uses waits for the timeout instead. */
      send = big, recv = 1000;
      EXPECT_OK(ncclGroupStart());
      for (int p = 0; p < 2; p++) {
        size_t n = p ? big : 1000;
        if (rank == 0) EXPECT_OK(ncclSend(a, n, ncclFloat, 1, comm, NULL));
        if (rank == 1) EXPECT_OK(ncclRecv(b, n, ncclFloat, 0, comm, NULL));
      }
      EXPECT_OK(ncclGroupEnd());
      memset(b, 0, big * sizeof *b);
      t0 = now_ms();
    }
    if (rank == 0) {
      res = ncclSend(a, send, ncclFloat, 1, comm, NULL);
      /* An eager send may complete; the receiver's failure then fails the next call. */
      if (res == ncclSuccess) res = ncclAllReduce(a, b, 64, ncclFloat, ncclSum, comm, NULL);
    } else {
      res = ncclRecv(b, recv, ncclFloat, 0, comm, NULL);
      for (size_t i = recv; i < big; i++) EXPECT(b[i] == 0.0f); /* nothing past the buffer */
    }
  } else if (!strcmp(mcase, "coll_root")) {
    res = ncclBroadcast(a, b, big, ncclFloat, rank == 1 ? 1 : 0, comm, NULL);
    /* A rank that believes it is the root only sends, which may complete; the others' failure
     * (they abort) then fails its next call. */
    if (res == ncclSuccess) res = ncclAllReduce(a, b, 64, ncclFloat, ncclSum, comm, NULL);
  } else {
    size_t count = 3000;
    ncclDataType_t t = ncclFloat;
    ncclRedOp_t op = ncclSum;
    if (rank == 1 && !strcmp(mcase, "coll_count")) count++;
    if (rank == 1 && !strcmp(mcase, "coll_dtype")) t = ncclInt32;
    if (rank == 1 && !strcmp(mcase, "coll_op")) op = ncclMax;
    res = ncclAllReduce(a, b, count, t, op, comm, NULL);
  }
  int rc = finish(rank, comm, res, t0);
  free(a);
  free(b);
  return rc;
}

static int log_has(int nranks, const char* what) {
  for (int r = 0; r < nranks; r++) {
    char path[300], line[2048];
    snprintf(path, sizeof path, "%s/rank%d.log", logdir, r);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, what) != NULL;
    fclose(f);
    if (found) return 1;
  }
  return 0;
}

static void dump_logs(int nranks) {
  for (int r = 0; r < nranks; r++) {
    char path[300], line[2048];
    snprintf(path, sizeof path, "%s/rank%d.log", logdir, r);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f)) fprintf(stderr, "[rank %d] %s", r, line);
    fclose(f);
    unlink(path);
  }
  rmdir(logdir);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc < 3) {
    fprintf(stderr, "usage: host_mismatch CASE shm|net\n");
    return 2;
  }
  mcase = argv[1];
  if (!strcmp(argv[2], "net")) setenv("NCCL_SHM_DISABLE", "1", 1);
  setenv("WEFT_TIMEOUT_MS", "30000", 1);
  snprintf(logdir, sizeof logdir, "/tmp/weft-mismatch-%d", (int)getpid());
  mkdir(logdir, 0700);
  int nranks = strncmp(mcase, "p2p_", 4) == 0 ? 2 : 3;
  int rc = test_fork_ranks(nranks, rank_main, NULL, 60);
  const char* want = NULL;
  if (!strcmp(mcase, "p2p_small"))
    want = "ncclRecv from rank 0 of 1024 x float32 (4096 bytes) meets an ncclSend of 4096 x "
           "float32 (16384 bytes)";
  else if (!strcmp(mcase, "p2p_short"))
    want = "ncclRecv from rank 0 of 4096 x float32 (16384 bytes) meets an ncclSend of 1024 x "
           "float32 (4096 bytes)";
  else if (!strcmp(mcase, "p2p_large"))
    want = "ncclRecv from rank 0 of 1000 x float32 (4000 bytes) meets an ncclSend of 1048576 x "
           "float32 (4194304 bytes)";
  else if (!strcmp(mcase, "p2p_setup"))
    want = "ncclSend to rank 1 of 1048576 x float32 (4194304 bytes)";
  else if (!strcmp(mcase, "coll_root"))
    want = "root 1";
  else if (!strcmp(mcase, "coll_count"))
    want = "(count 3001, float32, sum";
  else if (!strcmp(mcase, "coll_dtype"))
    want = "(count 3000, int32, sum";
  else if (!strcmp(mcase, "coll_op"))
    want = "(count 3000, float32, max";
  if (rc == 0 && want && !log_has(nranks, want)) {
    fprintf(stderr, "no WARN contains \"%s\"\n", want);
    rc = 1;
  }
  if (rc == 0 && !strcmp(mcase, "p2p_setup") &&
      !log_has(nranks, "ncclRecv from rank 0 of 1024 x float32 (4096 bytes)")) {
    fprintf(stderr, "no WARN names the receive\n");
    rc = 1;
  }
  if (rc == 0 && !strcmp(mcase, "coll_root") && !log_has(nranks, "root 0")) {
    fprintf(stderr, "no WARN names root 0\n");
    rc = 1;
  }
  if (rc == 0 && strncmp(mcase, "coll_", 5) == 0 &&
      !log_has(nranks, "every rank must call the same collectives")) {
    fprintf(stderr, "no WARN names the collective mismatch\n");
    rc = 1;
  }
  dump_logs(nranks);
  return rc;
}
