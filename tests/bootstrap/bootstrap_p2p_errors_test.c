/* Two ranks; each failure names the rank and the peer, and what can go on afterwards does:
 *  - unexpected messages past the queue bound (64 MiB): the receive fails naming rank 0, the
 *    sender's blocked send fails, the messages queued before the bound are still delivered;
 *  - a new connection from the same peer after a broken one is accepted;
 *  - allgather with different sizes on the two ranks: both fail, naming both sizes;
 *  - a receive from a rank that closed its bootstrap fails, saying so. */
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

#define BIG (30u << 20)

static int run_rank(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  weft_bootstrap* b = NULL;
  EXPECT_OK(bootstrap_init(id, rank, n, 15000, NULL, &b));
  unsigned char* big = malloc(BIG);
  EXPECT(big != NULL);
  if (rank == 0) {
    for (int tag = 1; tag <= 2; tag++) {
      bs_fill(big, BIG, 77, 0, (uint64_t)tag);
      EXPECT_OK(bootstrap_send(b, 1, tag, big, BIG));
    }
    EXPECT(bootstrap_send(b, 1, 3, big, BIG) != ncclSuccess);
    EXPECT(bs_last_error_has("sender", "rank 1", NULL));
  } else {
    char small[8];
    EXPECT_RES(bootstrap_recv(b, 0, 4, small, sizeof small), ncclInternalError);
    EXPECT(bs_last_error_has("bound", "rank 0", "queue", NULL));
    for (int tag = 1; tag <= 2; tag++) {
      EXPECT_OK(bootstrap_recv(b, 0, tag, big, BIG));
      EXPECT(bs_check(big, BIG, 77, 0, (uint64_t)tag));
    }
    EXPECT_EQ_INT(b->q_bytes, 0);
  }
  free(big);
  EXPECT_OK(bootstrap_barrier(b));

  char hello[6] = "hello";
  if (rank == 0) EXPECT_OK(bootstrap_send(b, 1, 8, hello, sizeof hello));
  if (rank == 1) {
    memset(hello, 0, sizeof hello);
    EXPECT_OK(bootstrap_recv(b, 0, 8, hello, sizeof hello));
    EXPECT(!strcmp(hello, "hello"));
  }

  uint64_t v[4] = {0};
  EXPECT_RES(bootstrap_allgather(b, v, rank == 0 ? 8 : 16), ncclInternalError);
  if (rank == 0)
    EXPECT(bs_last_error_has("allgather 0", "rank 1 is in allgather", "16 bytes", "with 8", NULL));
  else
    EXPECT(bs_last_error_has("allgather 1", "rank 0 is in allgather", "8 bytes", "with 16", NULL));

  if (rank == 0) {
    bootstrap_close(b);
    return 0;
  }
  char x[4];
  EXPECT_RES(bootstrap_recv(b, 0, 9, x, sizeof x), ncclRemoteError);
  EXPECT(bs_last_error_has("closed", "rank 0 closed its connection", NULL));
  bootstrap_close(b);
  return 0;
}

int main(void) {
  test_require_weft_lib();
  ncclUniqueId id; /* its root lives here: the ranks are fork+exec'd */
  EXPECT_OK(bootstrap_get_unique_id(&id));
  EXPECT_EQ_INT(test_exec_ranks(2, run_rank, NULL, 0, &id, 25), 0);
  EXPECT(bs_wait_settled(-1, 3000));
  fprintf(stderr, "ok\n");
  return 0;
}
