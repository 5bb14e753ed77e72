/* Abort ends waits promptly: bootstrap_abort from another thread ends a blocked recv (timeout
 * 30 s) at once, so does setting the abort flag given to init, and so does the flag during an
 * init that would otherwise wait 20 s for a rank that never comes. Later calls fail at once,
 * and close after abort leaves no fd behind. Two ranks run as threads of this process. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

static ncclUniqueId g_id;
static weft_bootstrap* g_b[2];
static volatile uint32_t g_flag[2];

static void* init_rank(void* arg) {
  int rank = (int)(intptr_t)arg;
  EXPECT_OK(bootstrap_init(&g_id, rank, 2, 10000, &g_flag[rank], &g_b[rank]));
  return NULL;
}

typedef struct {
  weft_bootstrap* b;
  int peer, tag;
  ncclResult_t res;
  uint64_t took;
} recv_job;

static void* blocked_recv(void* arg) {
  recv_job* j = arg;
  char buf[8];
  uint64_t t0 = bs_now_ms();
  j->res = bootstrap_recv(j->b, j->peer, j->tag, buf, sizeof buf);
  j->took = bs_now_ms() - t0;
  return NULL;
}

static void* lonely_init(void* arg) {
  recv_job* j = arg;
  weft_bootstrap* b = NULL;
  uint64_t t0 = bs_now_ms();
  j->res = bootstrap_init(&g_id, 0, 2, 20000, &g_flag[0], &b);
  j->took = bs_now_ms() - t0;
  EXPECT(b == NULL);
  return NULL;
}

int main(void) {
  test_require_weft_lib();
  int fds0 = test_count_fds();
  EXPECT_OK(bootstrap_get_unique_id(&g_id));
  pthread_t t[2];
  for (int r = 0; r < 2; r++)
    EXPECT_EQ_INT(pthread_create(&t[r], NULL, init_rank, (void*)(intptr_t)r), 0);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < 2; r++) bootstrap_set_timeout(g_b[r], 30000);

  /* bootstrap_abort from this thread while rank 0 waits in recv. */
  recv_job j = {.b = g_b[0], .peer = 1, .tag = 5};
  EXPECT_EQ_INT(pthread_create(&t[0], NULL, blocked_recv, &j), 0);
  bs_sleep_ms(300);
  bootstrap_abort(g_b[0]);
  pthread_join(t[0], NULL);
  fprintf(stderr, "recv ended %llu ms after it began (abort at 300)\n",
          (unsigned long long)j.took);
  EXPECT_EQ_INT(j.res, ncclRemoteError);
  EXPECT(j.took < 1000);
  int x = 1;
  uint64_t t0 = bs_now_ms();
  EXPECT(bootstrap_send(g_b[0], 1, 1, &x, sizeof x) != ncclSuccess);
  EXPECT(bootstrap_barrier(g_b[0]) != ncclSuccess);
  EXPECT(bs_now_ms() - t0 < 100);

  /* The flag given to init, on rank 1. */
  recv_job k = {.b = g_b[1], .peer = 0, .tag = 6};
  EXPECT_EQ_INT(pthread_create(&t[1], NULL, blocked_recv, &k), 0);
  bs_sleep_ms(300);
  __atomic_store_n(&g_flag[1], 1, __ATOMIC_RELEASE);
  pthread_join(t[1], NULL);
  fprintf(stderr, "flagged recv ended after %llu ms (flag at 300)\n", (unsigned long long)k.took);
  EXPECT_EQ_INT(k.res, ncclRemoteError);
  EXPECT(k.took < 1000);
  bootstrap_close(g_b[0]);
  bootstrap_close(g_b[1]);

  /* The flag during an init that waits for a rank that never comes. */
  g_flag[0] = 0;
  EXPECT_OK(bootstrap_get_unique_id(&g_id));
  recv_job l = {0};
  EXPECT_EQ_INT(pthread_create(&t[0], NULL, lonely_init, &l), 0);
  bs_sleep_ms(300);
  __atomic_store_n(&g_flag[0], 1, __ATOMIC_RELEASE);
  pthread_join(t[0], NULL);
  fprintf(stderr, "flagged init ended after %llu ms (flag at 300)\n", (unsigned long long)l.took);
  EXPECT_EQ_INT(l.res, ncclRemoteError);
  EXPECT(l.took < 1000);

  /* The second root is still waiting for its rank 1 (it ends at its rank-derived deadline);
   * all the rest is closed. */
  EXPECT_EQ_INT(bs_root_threads_live(), 1);
  EXPECT_EQ_INT(test_count_fds(), fds0 + 1);
  fprintf(stderr, "ok\n");
  return 0;
}
