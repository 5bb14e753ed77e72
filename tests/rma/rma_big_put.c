/* Large one-sided puts, checked the moment the wait returns: rank 0 puts 16 MiB of random data
 * into rank 1's window with one ncclPutSignal; rank 1 waits for its signal and compares the
 * window with the reference at once, from the last byte back (the bytes that land last), then
 * signals rank 0 that the next round may overwrite it. A plugin or transport that raises the
 * signal before the data is in place fails here almost surely (rma_plugin_path.sh "broken"),
 * where rma_put_signal's smaller puts may land in time.
 *
 * Usage: rma_big_put <nranks> shm|net (ranks beyond 2 only take part in the communicator). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rma_ref.h"
#include "testutil.h"

#define BIG (16u << 20)
#define ROUNDS 3

/* A failed call ends the rank the way an application should: its communicator aborted, which
 * joins every thread weft and its plugins started (the broken plugin's run fails on purpose). */
#define TRY(call)                                                                         \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected ncclSuccess\n", __FILE__,     \
              __LINE__, #call, (int)r_, ncclGetErrorString(r_));                          \
      goto fail;                                                                          \
    }                                                                                     \
  } while (0)

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  uint64_t seed = *(const uint64_t*)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  char* win_buf = calloc(1, BIG);
  char* src_buf = malloc(BIG);
  char* expect = malloc(BIG);
  EXPECT(win_buf && src_buf && expect);
  ncclWindow_t win, src_win;
  TRY(ncclCommWindowRegister(comm, win_buf, BIG, &win, NCCL_WIN_COLL_SYMMETRIC));
  TRY(ncclCommWindowRegister(comm, src_buf, BIG, &src_win, NCCL_WIN_COLL_SYMMETRIC));
  for (int round = 0; round < ROUNDS; round++) {
    uint64_t state = rma_ref_mix(seed, 11, (uint64_t)round + 1, 0);
    if (rank == 0) {
      rma_ref_fill(src_buf, BIG, state);
      TRY(ncclPutSignal(src_buf, BIG, ncclInt8, 1, win, 0, 0, 0, 0, comm, NULL));
      ncclWaitSignalDesc_t d = {1, 1, 0, 0}; /* rank 1 checked this round */
      TRY(ncclWaitSignal(1, &d, comm, NULL));
    } else if (rank == 1) {
      rma_ref_fill(expect, BIG, state);
      ncclWaitSignalDesc_t d = {1, 0, 0, 0};
      TRY(ncclWaitSignal(1, &d, comm, NULL));
      for (size_t b = BIG; b-- > 0;)
        if (win_buf[b] != expect[b]) {
          fprintf(stderr, "rank 1 round %d: byte %zu of the window is %d, expected %d (the "
                  "signal came before the data)\n", round, b, win_buf[b], expect[b]);
          goto fail;
        }
      TRY(ncclSignal(0, 0, 0, 0, comm, NULL));
    }
  }
  TRY(ncclCommWindowDeregister(comm, src_win));
  TRY(ncclCommWindowDeregister(comm, win));
  EXPECT_OK(ncclCommDestroy(comm));
  if (rank == 1) printf("rank 1: %d rounds of %u-byte puts matched the reference\n", ROUNDS, BIG);
  free(win_buf);
  free(src_buf);
  free(expect);
  return 0;
fail:
  (void)ncclCommAbort(comm);
  free(win_buf);
  free(src_buf);
  free(expect);
  return 1;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int n = argc > 1 ? atoi(argv[1]) : 2;
  if (n < 2) n = 2;
  if (argc > 2 && strcmp(argv[2], "net") == 0) setenv("NCCL_SHM_DISABLE", "1", 1);
  uint64_t seed = test_seed((uint64_t)time(NULL));
  printf("seed %llu (WEFT_TEST_SEED), %d ranks over %s\n", (unsigned long long)seed, n,
         argc > 2 ? argv[2] : "shm");
  return test_fork_ranks(n, rank_main, &seed, 100);
}
