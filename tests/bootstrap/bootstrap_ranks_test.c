/* 1, 2, 3 and 8 ranks join one bootstrap (the id and its root live in the parent, so the ranks
 * are fork+exec'd: test_exec_ranks) and run: allgather of random data (1 B, 4099 B and 1 MiB
 * per rank, checked against what every rank generated), barriers, a ring of send/recv, an all-to-all with four tags received in reverse
 * order (so most messages wait in the unexpected queue; some are 300 KB and cross in both
 * directions at once), a receive whose size differs from the sent size (an error naming both),
 * and close, after which the rank holds no more fds than before init.
 * With --ipv6 (and NCCL_SOCKET_IFNAME=lo NCCL_SOCKET_FAMILY=AF_INET6) everything runs on ::1. */
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

typedef struct {
  ncclUniqueId id;
  uint64_t seed;
  int ipv6;
} ctx;

static size_t a2a_size(int src, int dst, int tag) {
  if (tag == 3 && (src + dst) % 3 == 0) return 300000;
  return 1 + (size_t)((src * 131 + dst * 17 + tag * 7) % 3000);
}

static int run_rank(int rank, int n, ncclUniqueId* unused, void* arg) {
  (void)unused;
  ctx* c = arg;
  int fds0 = test_count_fds();
  weft_bootstrap* b = NULL;
  EXPECT_OK(bootstrap_init(&c->id, rank, n, 20000, NULL, &b));
  EXPECT_EQ_INT(bootstrap_rank(b), rank);
  EXPECT_EQ_INT(bootstrap_nranks(b), n);
  if (c->ipv6) EXPECT_EQ_INT(b->listen_addr.sa.sa_family, AF_INET6);

  /* Allgather. */
  const size_t sizes[] = {1, 4099, 1 << 20};
  for (int k = 0; k < 3; k++) {
    size_t sz = sizes[k];
    unsigned char* buf = malloc((size_t)n * sz);
    EXPECT(buf != NULL);
    memset(buf, 0xee, (size_t)n * sz);
    bs_fill(buf + (size_t)rank * sz, sz, c->seed, (uint64_t)rank, sz);
    EXPECT_OK(bootstrap_allgather(b, buf, sz));
    for (int r = 0; r < n; r++) EXPECT(bs_check(buf + (size_t)r * sz, sz, c->seed, (uint64_t)r, sz));
    free(buf);
  }
  for (int k = 0; k < 3; k++) EXPECT_OK(bootstrap_barrier(b));

  /* Ring: each rank sends its own size to the next. */
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  size_t my = 100 + (size_t)rank * 37, theirs = 100 + (size_t)prev * 37;
  unsigned char* m = malloc(my > theirs ? my : theirs);
  bs_fill(m, my, c->seed, 1000 + (uint64_t)rank, 7);
  EXPECT_OK(bootstrap_send(b, next, 7, m, my));
  memset(m, 0, theirs);
  EXPECT_OK(bootstrap_recv(b, prev, 7, m, theirs));
  EXPECT(bs_check(m, theirs, c->seed, 1000 + (uint64_t)prev, 7));
  free(m);

  /* All-to-all (itself included), tags 0..3, received in reverse peer and tag order. */
  unsigned char* big = malloc(300000);
  for (int tag = 0; tag < 4; tag++)
    for (int i = 0; i < n; i++) {
      int peer = (rank + 1 + i) % n;
      size_t sz = a2a_size(rank, peer, tag);
      bs_fill(big, sz, c->seed, (uint64_t)(rank * 1000 + peer), (uint64_t)tag);
      EXPECT_OK(bootstrap_send(b, peer, tag, big, sz));
    }
  for (int tag = 3; tag >= 0; tag--)
    for (int peer = n - 1; peer >= 0; peer--) {
      size_t sz = a2a_size(peer, rank, tag);
      memset(big, 0, sz);
      EXPECT_OK(bootstrap_recv(b, peer, tag, big, sz));
      EXPECT(bs_check(big, sz, c->seed, (uint64_t)(peer * 1000 + rank), (uint64_t)tag));
    }
  free(big);
  EXPECT_EQ_INT(b->q_bytes, 0);
  EXPECT_OK(bootstrap_barrier(b));

  /* A receive of the wrong size fails and names both sizes; the connection stays usable. */
  if (n >= 2 && rank == 0) {
    char sixteen[16] = "0123456789abcde";
    EXPECT_OK(bootstrap_send(b, 1, 99, sixteen, sizeof sixteen));
    EXPECT_OK(bootstrap_send(b, 1, 98, sixteen, 4));
  }
  if (n >= 2 && rank == 1) {
    char eight[8];
    EXPECT_RES(bootstrap_recv(b, 0, 99, eight, sizeof eight), ncclInternalError);
    EXPECT(bs_last_error_has("size mismatch", "expected 8 bytes", "sent 16", "rank 0", NULL));
    EXPECT_OK(bootstrap_recv(b, 0, 98, eight, 4));
    EXPECT(memcmp(eight, "0123", 4) == 0);
  }
  EXPECT_OK(bootstrap_barrier(b));
  bootstrap_close(b);
  EXPECT_EQ_INT(test_count_fds(), fds0);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  ctx c;
  memset(&c, 0, sizeof c);
  c.ipv6 = argc > 1 && !strcmp(argv[1], "--ipv6");
  if (c.ipv6 && !bs_have_ipv6_loopback()) {
    fprintf(stderr, "skip: no IPv6 on the loopback interface (cannot bind [::1])\n");
    return TEST_SKIP_RC;
  }
  c.seed = test_seed(0xb007);
  const int counts[] = {1, 2, 3, 8};
  for (int k = 0; k < 4; k++) {
    int n = counts[k];
    if (c.ipv6 && n == 8) continue; /* the transport is the same; keep the test short */
    uint64_t t0 = bs_now_ms();
    EXPECT_OK(bootstrap_get_unique_id(&c.id));
    weft_bootstrap_id d;
    EXPECT_OK(bootstrap_id_decode(&c.id, &d));
    if (c.ipv6) EXPECT_EQ_INT(d.addr.sa.sa_family, AF_INET6);
    c.seed += 1;
    if (test_exec_ranks(n, run_rank, &c, sizeof c, NULL, 40) != 0) {
      fprintf(stderr, "%d ranks failed\n", n);
      return 1;
    }
    EXPECT(bs_wait_settled(-1, 3000)); /* the root served the init and ended */
    fprintf(stderr, "%d ranks: ok in %llu ms\n", n, (unsigned long long)(bs_now_ms() - t0));
  }
  return 0;
}
