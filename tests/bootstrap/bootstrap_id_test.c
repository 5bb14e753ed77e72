/* The unique id: a made id decodes to what was made (random magic and secret, a listening
 * root); zero, garbage and tampered ids are rejected; init rejects bad rank/nranks; a root whose
 * id is never used ends at WEFT_INIT_TIMEOUT_MS (set to 400 ms here) and leaves no fd or thread. */
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

int main(void) {
  test_require_weft_lib();
  uint64_t rng = test_seed(0x1d1d);
  int threads0 = bs_baseline_threads(), fds0 = test_count_fds();

  ncclUniqueId a, b;
  EXPECT_OK(bootstrap_get_unique_id(&a));
  EXPECT_OK(bootstrap_get_unique_id(&b));
  EXPECT_EQ_INT(bs_root_threads_live(), 2);
  EXPECT_EQ_INT(test_count_fds(), fds0 + 1);
  weft_bootstrap_id da, db;
  EXPECT_OK(bootstrap_id_decode(&a, &da));
  EXPECT_OK(bootstrap_id_decode(&b, &db));
  EXPECT(da.magic != 0 && da.magic != WEFT_COMM_ID_MAGIC);
  EXPECT(da.magic != db.magic);
  EXPECT(da.secret != db.secret);
  EXPECT(da.addr.sa.sa_family == AF_INET || da.addr.sa.sa_family == AF_INET6);
  EXPECT(socket_addr_port(&da.addr) != 0);
  /* One listener serves every id of the process; the magic and secret tell them apart. */
  EXPECT(socket_addr_equal(&da.addr, &db.addr));
  for (size_t i = sizeof(weft_bootstrap_id); i < sizeof a.internal; i++)
    EXPECT_EQ_INT(a.internal[i], 0);
  EXPECT(memcmp(&a, &da, sizeof da) == 0); /* the id is the struct, as is */

  /* The root really listens there. */
  int fd = -1;
  EXPECT_OK(socket_connect(&da.addr, 2000, &fd));
  close(fd);

  ncclUniqueId zero;
  memset(&zero, 0, sizeof zero);
  EXPECT_RES(bootstrap_id_decode(&zero, &da), ncclInvalidArgument);
  EXPECT(bs_last_error_has("zero id", "invalid unique id", NULL));
  for (int k = 0; k < 100; k++) {
    ncclUniqueId g;
    for (size_t i = 0; i < sizeof g.internal; i++) g.internal[i] = (char)test_rand(&rng);
    EXPECT_RES(bootstrap_id_decode(&g, &da), ncclInvalidArgument);
  }
  ncclUniqueId t = a;
  t.internal[100] = 1; /* a byte past the id */
  EXPECT_RES(bootstrap_id_decode(&t, &da), ncclInvalidArgument);
  t = a;
  ((weft_bootstrap_id*)t.internal)->addr.sa.sa_family = 77;
  EXPECT_RES(bootstrap_id_decode(&t, &da), ncclInvalidArgument);
  t = a;
  socket_addr_set_port(&((weft_bootstrap_id*)t.internal)->addr, 0);
  EXPECT_RES(bootstrap_id_decode(&t, &da), ncclInvalidArgument);

  weft_bootstrap* bs = NULL;
  EXPECT_RES(bootstrap_init(&a, 0, 0, 1000, NULL, &bs), ncclInvalidArgument);
  EXPECT_RES(bootstrap_init(&a, 2, 2, 1000, NULL, &bs), ncclInvalidArgument);
  EXPECT_RES(bootstrap_init(&a, -1, 2, 1000, NULL, &bs), ncclInvalidArgument);
  EXPECT_RES(bootstrap_init(&a, 0, BS_MAX_RANKS + 1, 1000, NULL, &bs), ncclInvalidArgument);
  EXPECT_RES(bootstrap_init(&zero, 0, 1, 1000, NULL, &bs), ncclInvalidArgument);
  EXPECT_RES(bootstrap_init(&a, 0, 1, 0, NULL, &bs), ncclInvalidArgument);
  EXPECT(bs == NULL);

  /* Nobody used a or b: their roots end at the init timeout (400 ms) and close everything. */
  EXPECT(bs_wait_settled(threads0, 3000));
  EXPECT_EQ_INT(test_count_fds(), fds0);
  fprintf(stderr, "ok\n");
  return 0;
}
