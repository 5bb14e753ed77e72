/* NCCL_COMM_ID=host:port: every rank builds the same id from it (constant magic, secret derived
 * from the text), rank 0 starts the root on that address, and the others, started first, keep
 * trying until it is up. Bad values are rejected. Runs on 127.0.0.1 and, when the loopback has
 * IPv6, on [::1]. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

static int run_rank(int rank, int n, ncclUniqueId* unused, void* arg) {
  (void)unused;
  (void)arg;
  if (rank == 0) bs_sleep_ms(300); /* the root comes up after the others started */
  ncclUniqueId id;
  EXPECT_OK(bootstrap_id_from_env(rank, &id));
  weft_bootstrap_id d;
  EXPECT_OK(bootstrap_id_decode(&id, &d));
  EXPECT(d.magic == WEFT_COMM_ID_MAGIC);
  weft_bootstrap* b = NULL;
  EXPECT_OK(bootstrap_init(&id, rank, n, 10000, NULL, &b));
  ncclUniqueId* all = calloc((size_t)n, sizeof *all);
  all[rank] = id;
  EXPECT_OK(bootstrap_allgather(b, all, sizeof *all));
  for (int r = 0; r < n; r++) EXPECT(memcmp(&all[r], &id, sizeof id) == 0);
  free(all);
  EXPECT_OK(bootstrap_barrier(b));
  bootstrap_close(b);
  if (rank == 0) EXPECT(bs_wait_settled(-1, 3000)); /* its root ended */
  return 0;
}

int main(void) {
  test_require_weft_lib();
  ncclUniqueId id, id2;
  unsetenv("NCCL_COMM_ID");
  EXPECT_RES(bootstrap_id_from_env(1, &id), ncclInvalidArgument);
  EXPECT(bs_last_error_has("unset", "NCCL_COMM_ID", NULL));
  setenv("NCCL_COMM_ID", "no-port-here", 1);
  EXPECT_RES(bootstrap_id_from_env(1, &id), ncclInvalidArgument);
  setenv("NCCL_COMM_ID", "127.0.0.1:0", 1);
  EXPECT_RES(bootstrap_id_from_env(1, &id), ncclInvalidArgument);
  setenv("NCCL_COMM_ID", "127.0.0.1:99999", 1);
  EXPECT_RES(bootstrap_id_from_env(1, &id), ncclInvalidArgument);

  const char* hosts[] = {"127.0.0.1", "[::1]"};
  for (int h = 0; h < 2; h++) {
    if (h == 1 && !bs_have_ipv6_loopback()) {
      fprintf(stderr, "no IPv6 on loopback: [::1] case not run\n");
      break;
    }
    int port = test_free_port();
    EXPECT(port > 0);
    char text[64];
    snprintf(text, sizeof text, "%s:%d", hosts[h], port);
    setenv("NCCL_COMM_ID", text, 1);
    /* Ranks other than 0 start nothing and all compute the same id. */
    EXPECT_OK(bootstrap_id_from_env(1, &id));
    EXPECT_OK(bootstrap_id_from_env(2, &id2));
    EXPECT(memcmp(&id, &id2, sizeof id) == 0);
    EXPECT_EQ_INT(bs_root_threads_live(), 0);
    int rc = test_fork_plain(3, run_rank, NULL, 30);
    if (rc != 0) {
      fprintf(stderr, "NCCL_COMM_ID=%s: ranks failed\n", text);
      return 1;
    }
    fprintf(stderr, "NCCL_COMM_ID=%s: ok\n", text);
  }
  return 0;
}
