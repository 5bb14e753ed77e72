/* ncclCommSuspend / ncclCommResume / ncclCommMemStats in host mode: cycles of suspend, a
 * refused collective, resume and a collective with exact sums, on a 3-rank communicator of one
 * process (ncclCommInitAll, collectives in a group). MemStats must say Suspended while
 * suspended, Suspend > 0, Persist + Suspend == Total. After the cycles open fds, threads,
 * resident memory and this process's /dev/shm files are where they were.
 *
 * Usage: comm_suspend [CYCLES]   (default 50; 1000 with WEFT_TEST_FULL=1, the full run) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define NCOMMS 3
#define COUNT 70000 /* large enough for the LL protocol's scratch and shm FIFOs */

static void allreduce_all(ncclComm_t* comms, int32_t** bufs, uint64_t seed, int count) {
  for (int c = 0; c < NCOMMS; c++)
    for (int i = 0; i < count; i++) bufs[c][i] = (int32_t)((seed * 31 + (uint64_t)i * (uint64_t)(c + 3)) % 100000);
  EXPECT_OK(ncclGroupStart());
  for (int c = 0; c < NCOMMS; c++)
    EXPECT_OK(ncclAllReduce(bufs[c], bufs[c], (size_t)count, ncclInt32, ncclSum, comms[c], NULL));
  EXPECT_OK(ncclGroupEnd());
  for (int i = 0; i < count; i++) {
    int32_t want = 0;
    for (int c = 0; c < NCOMMS; c++) want += (int32_t)((seed * 31 + (uint64_t)i * (uint64_t)(c + 3)) % 100000);
    for (int c = 0; c < NCOMMS; c++) EXPECT_EQ_INT(bufs[c][i], want);
  }
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  const char* full = getenv("WEFT_TEST_FULL");
  int cycles = full && strcmp(full, "1") == 0 ? 1000 : argc > 1 ? atoi(argv[1]) : 50;
  uint64_t seed = test_seed(0x5a59e4d);
  printf("seed 0x%llx (WEFT_TEST_SEED replays it), %d cycles\n", (unsigned long long)seed, cycles);
  ncclComm_t comms[NCOMMS];
  EXPECT_OK(ncclCommInitAll(comms, NCOMMS, NULL));
  int32_t* bufs[NCOMMS];
  for (int c = 0; c < NCOMMS; c++) EXPECT((bufs[c] = malloc(COUNT * sizeof(int32_t))) != NULL);
  uint64_t st = seed;
  /* Warm up: connections of both protocols set up (what later cycles reuse). */
  allreduce_all(comms, bufs, test_rand(&st), COUNT);
  allreduce_all(comms, bufs, test_rand(&st), 100);
  /* and one suspend/resume (the first refusal's WARN sets up the log's state) */
  int32_t one = 1;
  for (int c = 0; c < NCOMMS; c++) EXPECT_OK(ncclCommSuspend(comms[c], NCCL_SUSPEND_MEM));
  EXPECT_RES(ncclAllReduce(&one, &one, 1, ncclInt32, ncclSum, comms[0], NULL), ncclInvalidUsage);
  for (int c = 0; c < NCOMMS; c++) EXPECT_OK(ncclCommResume(comms[c]));
  allreduce_all(comms, bufs, test_rand(&st), COUNT);
  allreduce_all(comms, bufs, test_rand(&st), 100);
  int fds = test_count_fds(), threads = test_settle_threads(1), shm = test_count_my_shm();
  long rss = test_rss_kb();
  uint64_t total = 0, suspend = 0, persist = 0, flag = 1;
  EXPECT_OK(ncclCommMemStats(comms[0], ncclStatGpuMemTotal, &total));
  EXPECT_OK(ncclCommMemStats(comms[0], ncclStatGpuMemSuspend, &suspend));
  EXPECT_OK(ncclCommMemStats(comms[0], ncclStatGpuMemPersist, &persist));
  EXPECT_OK(ncclCommMemStats(comms[0], ncclStatGpuMemSuspended, &flag));
  printf("memstats: Suspend %llu, Persist %llu, Total %llu bytes, Suspended %llu\n",
         (unsigned long long)suspend, (unsigned long long)persist, (unsigned long long)total,
         (unsigned long long)flag);
  EXPECT(suspend > 0);
  EXPECT_EQ_INT(total, suspend + persist);
  EXPECT_EQ_INT(flag, 0);
  for (int k = 0; k < cycles; k++) {
    for (int c = 0; c < NCOMMS; c++) EXPECT_OK(ncclCommSuspend(comms[c], NCCL_SUSPEND_MEM));
    EXPECT_OK(ncclCommMemStats(comms[k % NCOMMS], ncclStatGpuMemSuspended, &flag));
    EXPECT_EQ_INT(flag, 1);
    /* refused at once, not deferred to the group's end */
    EXPECT_RES(ncclAllReduce(&one, &one, 1, ncclInt32, ncclSum, comms[k % NCOMMS], NULL),
               ncclInvalidUsage);
    for (int c = 0; c < NCOMMS; c++) EXPECT_OK(ncclCommResume(comms[c]));
    EXPECT_OK(ncclCommMemStats(comms[k % NCOMMS], ncclStatGpuMemSuspended, &flag));
    EXPECT_EQ_INT(flag, 0);
    allreduce_all(comms, bufs, test_rand(&st), k % 2 ? 100 : COUNT); /* the sizes warmed up */
  }
  int fds2 = test_count_fds(), threads2 = test_settle_threads(threads), shm2 = test_count_my_shm();
  long rss2 = test_rss_kb();
  printf("fds %d -> %d, threads %d -> %d, rss %ld -> %ld kB, /dev/shm files %d -> %d\n", fds,
         fds2, threads, threads2, rss, rss2, shm, shm2);
  EXPECT_EQ_INT(fds2, fds);
  EXPECT_EQ_INT(threads2, threads);
  EXPECT_EQ_INT(shm2, shm);
  EXPECT(WEFT_TEST_SANITIZED || rss2 - rss < 1024);
  for (int c = 0; c < NCOMMS; c++) EXPECT_OK(ncclCommDestroy(comms[c]));
  EXPECT_EQ_INT(test_count_my_shm(), 0);
  for (int c = 0; c < NCOMMS; c++) free(bufs[c]);
  return 0;
}
