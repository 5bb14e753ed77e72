/* Inits that cannot complete fail in time and say why:
 *  - nranks 3, only ranks 0 and 1 start: both fail within the 2000 ms bound, naming rank 2;
 *  - a rank with a different nranks fails the init at once for every rank (issue 42: the first
 *    one used to time out), each told both counts;
 *  - a second process claiming rank 0 fails the init on every process (finding 4: the real
 *    rank must not be shut out while an impostor takes its place), naming both claimants;
 *  - nothing listens at the root's address: the error names that address;
 *  - the root accepts but never answers: the error says so. */
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

#define TMO 2000

typedef struct {
  ncclUniqueId id;
  int case_no;
} ctx;

static int missing(int rank, int n, ncclUniqueId* u, void* arg) {
  (void)n;
  (void)u;
  ctx* c = arg;
  uint64_t t0 = bs_now_ms();
  weft_bootstrap* b = NULL;
  ncclResult_t r = bootstrap_init(&c->id, rank, 3, TMO, NULL, &b);
  uint64_t took = bs_now_ms() - t0;
  EXPECT(r != ncclSuccess);
  EXPECT(b == NULL);
  fprintf(stderr, "rank %d failed after %llu ms\n", rank, (unsigned long long)took);
  EXPECT(took <= TMO + 3000); /* bounded, with slack for a loaded 2-core CI box */
  EXPECT(bs_last_error_has("missing", "rank 2 never checked in", "timed out", NULL));
  return 0;
}

static int nranks_mismatch(int rank, int n, ncclUniqueId* u, void* arg) {
  (void)n;
  (void)u;
  ctx* c = arg;
  weft_bootstrap* b = NULL;
  uint64_t t0 = bs_now_ms();
  if (rank == 0) {
    EXPECT_RES(bootstrap_init(&c->id, 0, 2, TMO, NULL, &b), ncclInvalidUsage);
    EXPECT(bs_now_ms() - t0 < TMO - 300); /* told when rank 1 checks in, not at the timeout */
    EXPECT(bs_last_error_has("first", "said 2, rank 1 said 3", NULL));
  } else {
    bs_sleep_ms(300);
    t0 = bs_now_ms();
    EXPECT_RES(bootstrap_init(&c->id, 1, 3, TMO, NULL, &b), ncclInvalidUsage);
    EXPECT(bs_now_ms() - t0 < TMO - 300); /* rejected at check-in, not at the timeout */
    EXPECT(bs_last_error_has("second", "said 2, rank 1 said 3 (this rank: 3)", NULL));
  }
  return 0;
}

static int duplicate(int proc, int n, ncclUniqueId* u, void* arg) {
  (void)n;
  (void)u;
  ctx* c = arg;
  weft_bootstrap* b = NULL;
  int rank = proc == 2 ? 1 : 0;
  bs_sleep_ms(300 * proc);
  EXPECT_RES(bootstrap_init(&c->id, rank, 2, 5000, NULL, &b), ncclInvalidUsage);
  EXPECT(bs_last_error_has("duplicate", "rank 0 was claimed by two processes",
                           "first the one listening on", "then the one listening on", NULL));
  return 0;
}

int main(void) {
  test_require_weft_lib();
  ctx c; /* the ids' root lives here: the ranks are fork+exec'd */
  memset(&c, 0, sizeof c);
  EXPECT_OK(bootstrap_get_unique_id(&c.id));
  EXPECT_EQ_INT(test_exec_ranks(2, missing, &c, sizeof c, NULL, 20), 0);
  EXPECT(bs_wait_settled(-1, 3000));
  fprintf(stderr, "missing rank: ok\n");

  EXPECT_OK(bootstrap_get_unique_id(&c.id));
  EXPECT_EQ_INT(test_exec_ranks(2, nranks_mismatch, &c, sizeof c, NULL, 20), 0);
  EXPECT(bs_wait_settled(-1, 3000));
  fprintf(stderr, "nranks mismatch: ok\n");

  EXPECT_OK(bootstrap_get_unique_id(&c.id));
  EXPECT_EQ_INT(test_exec_ranks(3, duplicate, &c, sizeof c, NULL, 20), 0);
  EXPECT(bs_wait_settled(-1, 3000));
  fprintf(stderr, "duplicate rank: ok\n");

  /* Nobody at the root's address. */
  weft_bootstrap_id fake;
  memset(&fake, 0, sizeof fake);
  fake.magic = 0x1234567812345678ull;
  fake.secret = 42;
  int port = test_free_port();
  char text[64];
  snprintf(text, sizeof text, "127.0.0.1:%d", port);
  EXPECT_OK(socket_parse_hostport(text, &fake.addr));
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  memcpy(id.internal, &fake, sizeof fake);
  weft_bootstrap* b = NULL;
  uint64_t t0 = bs_now_ms();
  EXPECT_RES(bootstrap_init(&id, 0, 2, 1000, NULL, &b), ncclRemoteError);
  EXPECT(bs_now_ms() - t0 <= 1200);
  EXPECT(bs_last_error_has("no root", "could not reach the bootstrap root", text, NULL));

  /* A root that listens but never answers. */
  int lfd = -1;
  weft_sockaddr bound;
  EXPECT_OK(socket_listen(&fake.addr, &lfd, &bound));
  t0 = bs_now_ms();
  EXPECT_RES(bootstrap_init(&id, 0, 2, 1000, NULL, &b), ncclRemoteError);
  EXPECT(bs_now_ms() - t0 <= 1200);
  EXPECT(bs_last_error_has("silent root", "never answered", text, NULL));
  close(lfd);
  return 0;
}
