/* One thread drives every rank of a host-mode communicator (grouped ncclCommInitRank) and
 * issues the one-sided calls of all of them inside one group: at ncclGroupEnd every rank's calls
 * run at once (each rank's in its call order), so a rank's wait may count the puts of a rank
 * issued after it in the group. The
 * windows are checked against what the puts must have left; an AllReduce in the same group
 * runs first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rma_ref.h"
#include "testutil.h"

#define NRANKS 3
#define REGION 4096
#define ROUNDS 3

int main(void) {
  test_require_weft_lib();
  uint64_t seed = test_seed((uint64_t)time(NULL));
  printf("seed %llu (WEFT_TEST_SEED), %d ranks on one thread\n", (unsigned long long)seed,
         NRANKS);
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id));
  ncclComm_t comm[NRANKS];
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < NRANKS; r++) EXPECT_OK(ncclCommInitRank(&comm[r], NRANKS, id, r));
  EXPECT_OK(ncclGroupEnd());
  char* win[NRANKS];
  char* expect[NRANKS];
  ncclWindow_t wh[NRANKS];
  float ar[NRANKS][16];
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < NRANKS; r++) {
    win[r] = malloc(NRANKS * REGION);
    expect[r] = malloc(NRANKS * REGION);
    EXPECT(win[r] && expect[r]);
    rma_ref_fill(win[r], NRANKS * REGION, rma_ref_mix(seed, 1, (uint64_t)r + 1, 0));
    memcpy(expect[r], win[r], NRANKS * REGION);
    EXPECT_OK(ncclCommWindowRegister(comm[r], win[r], NRANKS * REGION, &wh[r],
                                     NCCL_WIN_COLL_SYMMETRIC));
  }
  EXPECT_OK(ncclGroupEnd());
  for (int round = 0; round < ROUNDS; round++) {
    ncclWaitSignalDesc_t d[NRANKS][NRANKS];
    EXPECT_OK(ncclGroupStart());
    for (int r = 0; r < NRANKS; r++) {
      for (int i = 0; i < 16; i++) ar[r][i] = (float)(r + i + round);
      EXPECT_OK(ncclAllReduce(ar[r], ar[r], 16, ncclFloat32, ncclSum, comm[r], NULL));
    }
    /* rank r puts, then waits: its wait counts the puts of ranks issued later in the group
     * (a rank's own calls run in order, as on a stream) */
    for (int r = 0; r < NRANKS; r++) {
      for (int t = 0; t < NRANKS; t++) {
        /* the source: this rank's own region of its window, refilled each round */
        char* src = win[r] + (size_t)r * REGION;
        size_t off = (size_t)(round * 97 + t * 13) % (REGION / 2);
        rma_ref_fill(src, REGION / 2, rma_ref_mix(seed, 2, (uint64_t)r + 1, (uint64_t)round));
        memcpy(expect[r] + (size_t)r * REGION, src, REGION / 2);
        EXPECT_OK(ncclPutSignal(src, REGION / 2 - off, ncclInt8, t, wh[r],
                                (size_t)r * REGION + REGION / 2 + off, 0, 0, 0, comm[r], NULL));
        EXPECT_OK(ncclSignal(t, 0, 0, 0, comm[r], NULL));
        memcpy(expect[t] + (size_t)r * REGION + REGION / 2 + off, src, REGION / 2 - off);
      }
      for (int s = 0; s < NRANKS; s++) d[r][s] = (ncclWaitSignalDesc_t){2, s, 0, 0};
      EXPECT_OK(ncclWaitSignal(NRANKS, d[r], comm[r], NULL));
    }
    EXPECT_OK(ncclGroupEnd());
    for (int r = 0; r < NRANKS; r++) {
      for (int i = 0; i < 16; i++)
        EXPECT(ar[r][i] == (float)(NRANKS * (NRANKS - 1) / 2 + NRANKS * (i + round)));
      for (size_t b = 0; b < NRANKS * REGION; b++)
        if (win[r][b] != expect[r][b]) {
          fprintf(stderr, "round %d: rank %d's window byte %zu is %d, expected %d\n", round, r,
                  b, win[r][b], expect[r][b]);
          return 1;
        }
    }
  }
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < NRANKS; r++) EXPECT_OK(ncclCommWindowDeregister(comm[r], wh[r]));
  EXPECT_OK(ncclGroupEnd());
  for (int r = 0; r < NRANKS; r++) {
    EXPECT_OK(ncclCommDestroy(comm[r]));
    free(win[r]);
    free(expect[r]);
  }
  printf("%d rounds matched\n", ROUNDS);
  return 0;
}
