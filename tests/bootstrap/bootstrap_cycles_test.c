/* 200 init/use/close cycles in one process, a fresh id each time, two ranks as threads: after
 * each cycle the root thread has ended and the thread and fd counts are back to where they
 * started. Then three ids nobody uses: their roots end at WEFT_INIT_TIMEOUT_MS (500 ms here). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

#define CYCLES 200

static ncclUniqueId g_id;

static void* rank_main(void* arg) {
  int rank = (int)(intptr_t)arg;
  weft_bootstrap* b = NULL;
  EXPECT_OK(bootstrap_init(&g_id, rank, 2, 10000, NULL, &b));
  uint64_t v[2] = {0, 0};
  v[rank] = 0xabc0 + (uint64_t)rank;
  EXPECT_OK(bootstrap_allgather(b, v, sizeof v[0]));
  EXPECT(v[0] == 0xabc0 && v[1] == 0xabc1);
  EXPECT_OK(bootstrap_send(b, 1 - rank, 9, &v[rank], sizeof v[rank]));
  uint64_t got = 0;
  EXPECT_OK(bootstrap_recv(b, 1 - rank, 9, &got, sizeof got));
  EXPECT(got == v[1 - rank]);
  EXPECT_OK(bootstrap_barrier(b));
  bootstrap_close(b);
  return NULL;
}

static void cycle(void) {
  EXPECT_OK(bootstrap_get_unique_id(&g_id));
  pthread_t t[2];
  for (int r = 0; r < 2; r++)
    EXPECT_EQ_INT(pthread_create(&t[r], NULL, rank_main, (void*)(intptr_t)r), 0);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
}

int main(void) {
  test_require_weft_lib();
  cycle(); /* warm-up: lazily created library state (log, params) */
  EXPECT(bs_wait_settled(-1, 3000));
  int threads0 = test_count_threads(), fds0 = test_count_fds();
  long rss0 = test_rss_kb();
  uint64_t t0 = bs_now_ms();
  for (int i = 0; i < CYCLES; i++) {
    cycle();
    if (!bs_wait_settled(threads0, 2000)) {
      fprintf(stderr, "cycle %d: threads did not return to %d\n", i, threads0);
      return 1;
    }
    EXPECT_EQ_INT(test_count_fds(), fds0);
  }
  /* Memory is checked by the sanitizer builds (LeakSanitizer); RSS is only reported. */
  fprintf(stderr, "%d cycles in %llu ms, rss %ld -> %ld kB\n", CYCLES,
          (unsigned long long)(bs_now_ms() - t0), rss0, test_rss_kb());

  ncclUniqueId unused[3];
  for (int i = 0; i < 3; i++) EXPECT_OK(bootstrap_get_unique_id(&unused[i]));
  EXPECT_EQ_INT(bs_root_threads_live(), 3);
  EXPECT_EQ_INT(test_count_fds(), fds0 + 1); /* one listener and one thread serve them all */
  EXPECT(test_settle_threads(threads0 + 1) <= threads0 + 1);
  EXPECT(bs_wait_settled(threads0, 3000));
  EXPECT_EQ_INT(test_count_fds(), fds0);
  fprintf(stderr, "ok\n");
  return 0;
}
