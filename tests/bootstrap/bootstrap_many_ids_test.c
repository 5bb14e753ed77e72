/* Unused unique ids are cheap (issue 18, finding 8): 2000 ncclGetUniqueId under a soft fd limit
 * of 1024 all succeed (each used to hold a thread and a listening fd until
 * WEFT_INIT_TIMEOUT_MS), the process gains at most one fd and one thread for all of them, the
 * last id still serves a real two-rank init while the others wait, and all of them end at
 * WEFT_INIT_TIMEOUT_MS (4000 ms here). */
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bs_testutil.h"

#define NIDS 2000

static ncclUniqueId ids[NIDS];

static void* rank_main(void* arg) {
  int rank = (int)(intptr_t)arg;
  weft_bootstrap* b = NULL;
  EXPECT_OK(bootstrap_init(&ids[NIDS - 1], rank, 2, 10000, NULL, &b));
  uint64_t v[2] = {0, 0};
  v[rank] = 0x5eed0 + (uint64_t)rank;
  EXPECT_OK(bootstrap_allgather(b, v, sizeof v[0]));
  EXPECT(v[0] == 0x5eed0 && v[1] == 0x5eed1);
  bootstrap_close(b);
  return NULL;
}

int main(void) {
  test_require_weft_lib();
  struct rlimit rl;
  EXPECT(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  if (rl.rlim_cur > 1024) rl.rlim_cur = 1024;
  EXPECT(setrlimit(RLIMIT_NOFILE, &rl) == 0);
  int threads0 = bs_baseline_threads(), fds0 = test_count_fds();
  for (int i = 0; i < NIDS; i++) EXPECT_OK(bootstrap_get_unique_id(&ids[i]));
  EXPECT_EQ_INT(bs_root_threads_live(), NIDS);
  int fds1 = test_count_fds(), threads1 = test_count_threads();
  fprintf(stderr, "%d ids: fds %d -> %d, threads %d -> %d\n", NIDS, fds0, fds1, threads0, threads1);
  EXPECT(fds1 <= fds0 + 1);
  EXPECT(threads1 <= threads0 + 1);
  weft_bootstrap_id a, z;
  EXPECT_OK(bootstrap_id_decode(&ids[0], &a));
  EXPECT_OK(bootstrap_id_decode(&ids[NIDS - 1], &z));
  EXPECT(a.magic != z.magic && a.secret != z.secret);

  pthread_t t[2];
  for (int r = 0; r < 2; r++)
    EXPECT_EQ_INT(pthread_create(&t[r], NULL, rank_main, (void*)(intptr_t)r), 0);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  /* The root retires its id just after it sends the ranks their verdicts, so the ranks can be
   * back before it has: wait for it, boundedly. */
  for (int ms = 0; ms < 5000 && bs_root_threads_live() != NIDS - 1; ms++) usleep(1000);
  EXPECT_EQ_INT(bs_root_threads_live(), NIDS - 1);

  /* An id's secret is what lets a rank in: the first id with the last id's secret is refused. */
  weft_bootstrap_id forged = a;
  forged.secret = z.secret;
  ncclUniqueId fu;
  memset(&fu, 0, sizeof fu);
  memcpy(fu.internal, &forged, sizeof forged);
  weft_bootstrap* b = NULL;
  EXPECT(bootstrap_init(&fu, 0, 2, 800, NULL, &b) != ncclSuccess);

  EXPECT(bs_wait_settled(threads0, 15000));
  EXPECT_EQ_INT(test_count_fds(), fds0);
  fprintf(stderr, "ok\n");
  return 0;
}
