/* A communicator destroyed or aborted inside a group that holds queued work on it (issue 18,
 * finding 3). Its queued operations (or its queued init) are dropped and ncclGroupEnd neither
 * touches the freed communicator nor fails the group's other communicators: an AllReduce queued
 * in the same group on a second communicator still runs and gives the right sums. Afterwards
 * the stale handle, and a forged one whose words look like a communicator's magics, are refused
 * with ncclInvalidArgument (no read of freed memory: the ASan CI run sees any).
 *
 * Usage: comm_destroy_in_group abort|destroy|init */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft.h"

#define COUNT 4099
static int mode_abort, mode_init;

static void check_refused(ncclComm_t stale) {
  int n = -1;
  EXPECT_RES(ncclCommCount(stale, &n), ncclInvalidArgument);
  EXPECT_RES(ncclCommDestroy(stale), ncclInvalidArgument);
  EXPECT_RES(ncclCommAbort(stale), ncclInvalidArgument);
  /* A block every word of which is the start or end magic of a communicator ("weftcomm"). */
  uint64_t* forged = malloc(64 * 1024);
  forged[0] = 0x77656674636f6d6dull;
  for (size_t i = 1; i < 64 * 1024 / 8; i++) forged[i] = 0x6d6d6f6374666577ull;
  EXPECT_RES(ncclCommCount((ncclComm_t)forged, &n), ncclInvalidArgument);
  EXPECT_RES(ncclCommDestroy((ncclComm_t)forged), ncclInvalidArgument);
  free(forged);
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t a, b;
  EXPECT_OK(ncclCommInitRank(&a, nranks, *id, rank));
  EXPECT_OK(ncclCommSplit(a, 0, rank, &b, NULL));
  uint64_t seed = test_seed(18) + (uint64_t)rank;
  float *s = malloc(COUNT * sizeof *s), *r = malloc(COUNT * sizeof *r);
  float* all = malloc((size_t)nranks * COUNT * sizeof *all);
  for (int i = 0; i < COUNT; i++) s[i] = (float)(test_rand(&seed) % 1000);
  EXPECT_OK(weftCommOobAllGather(a, s, all, COUNT * sizeof *s));

  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, a, NULL));
  EXPECT_OK(ncclSend(s, COUNT, ncclFloat, (rank + 1) % nranks, a, NULL));
  EXPECT_OK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, b, NULL));
  if (mode_abort)
    EXPECT_OK(ncclCommAbort(a));
  else
    EXPECT_OK(ncclCommDestroy(a));
  EXPECT_OK(ncclGroupEnd());
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int k = 0; k < nranks; k++) want += all[(size_t)k * COUNT + i];
    if (r[i] != want) {
      fprintf(stderr, "rank %d: r[%d] = %g, expected %g\n", rank, i, r[i], want);
      return 1;
    }
  }
  check_refused(a);
  EXPECT_OK(ncclCommDestroy(b));
  check_refused(b);
  free(s);
  free(r);
  free(all);
  return 0;
}

/* One rank: an init deferred by the group, destroyed before ncclGroupEnd. */
static int init_main(void) {
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id));
  ncclComm_t c = NULL;
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclCommInitRank(&c, 1, id, 0));
  EXPECT(c != NULL);
  EXPECT_OK(ncclCommDestroy(c));
  EXPECT_OK(ncclGroupEnd());
  check_refused(c);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  const char* mode = argc > 1 ? argv[1] : "abort";
  mode_abort = strcmp(mode, "abort") == 0;
  mode_init = strcmp(mode, "init") == 0;
  if (mode_init) return init_main();
  return test_fork_ranks(3, rank_main, NULL, 60);
}
