/* Stray clients do not disturb a real 4-rank init. Before and while the ranks join, a thread in
 * the parent (where the root lives) connects to the root and: sends garbage; stays silent; closes at once;
 * sends 8 bytes of a real hello and stops; sends whole hellos with a wrong secret, a wrong kind
 * and an out-of-range rank; and opens 150 silent connections (more than the root holds pending).
 * The init must succeed well within its bound. Then rank 0 sends garbage to, and holds a silent
 * connection on, rank 1's own listener while it does p2p with rank 1. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "bs_testutil.h"

#define NSILENT 150

static ncclUniqueId g_id;
static int silent[32]; /* stray fds kept open until the end */
static int nsilent;

static int g_ready;

/* -1 when the root is gone already (the init finished): fine for a stray. */
static int connect_to(const weft_sockaddr* a) {
  int fd = -1;
  if (socket_connect(a, 500, &fd) != ncclSuccess) return -1;
  return fd;
}

static void keep(int fd) {
  if (fd >= 0 && nsilent < (int)(sizeof silent / sizeof silent[0]))
    silent[nsilent++] = fd;
  else if (fd >= 0)
    close(fd);
}

static void send_hello(const weft_sockaddr* a, const weft_bootstrap_id* id, uint32_t kind,
                       int rank, int nranks, uint64_t secret) {
  bs_hello h;
  bs_hello_init(&h, id, kind, rank, nranks);
  h.secret = secret;
  h.addr = *a;
  h.timeout_ms = 100;
  int fd = connect_to(a);
  if (fd >= 0) (void)socket_send_all(fd, &h, sizeof h, 1000);
  keep(fd); /* left open: the root must close it */
}

static void one_round(const weft_bootstrap_id* id, uint64_t* rng, int hold) {
  char junk[100];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)test_rand(rng);
  int fd = connect_to(&id->addr);
  if (fd >= 0) (void)socket_send_all(fd, junk, sizeof junk, 1000);
  if (fd >= 0) close(fd);
  fd = connect_to(&id->addr); /* connects and closes at once */
  if (fd >= 0) close(fd);
  fd = connect_to(&id->addr); /* a real magic, then nothing */
  if (fd >= 0) (void)socket_send_all(fd, &id->magic, sizeof id->magic, 1000);
  if (hold)
    keep(fd);
  else if (fd >= 0)
    close(fd);
  keep(connect_to(&id->addr)); /* silent from the start */
  send_hello(&id->addr, id, BS_KIND_CHECKIN, 0, 4, id->secret ^ 1);   /* wrong secret */
  send_hello(&id->addr, id, BS_KIND_RING, 1, 4, id->secret);          /* not a check-in */
  send_hello(&id->addr, id, BS_KIND_CHECKIN, 7, 4, id->secret);       /* rank out of range */
  send_hello(&id->addr, id, BS_KIND_CHECKIN, 0, 1 << 30, id->secret); /* nranks too big */
}

/* Strays before the ranks start (all kinds, and a flood of silent clients: more than the root
 * keeps pending at once), then more while they join. */
static void* strays(void* arg) {
  (void)arg;
  weft_bootstrap_id id;
  EXPECT_OK(bootstrap_id_decode(&g_id, &id));
  uint64_t rng = test_seed(0x5757);
  static int flood[NSILENT];
  one_round(&id, &rng, 1);
  for (int i = 0; i < NSILENT; i++) flood[i] = connect_to(&id.addr);
  for (int i = 0; i < NSILENT; i++) EXPECT(flood[i] >= 0); /* the root is still up */
  __atomic_store_n(&g_ready, 1, __ATOMIC_RELEASE);
  for (int round = 1; round < 4; round++) {
    bs_sleep_ms(100);
    one_round(&id, &rng, 0);
  }
  bs_sleep_ms(1200);
  for (int i = 0; i < NSILENT; i++)
    if (flood[i] >= 0) close(flood[i]);
  return NULL;
}

static int run_rank(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  bs_sleep_ms(50 + 100 * rank); /* arrive while the strays are at it */
  uint64_t t0 = bs_now_ms();
  weft_bootstrap* b = NULL;
  EXPECT_OK(bootstrap_init(id, rank, n, 10000, NULL, &b));
  uint64_t took = bs_now_ms() - t0;
  fprintf(stderr, "rank %d: init took %llu ms\n", rank, (unsigned long long)took);
  EXPECT(took < 4000);
  int v[4] = {0};
  v[rank] = rank * 11 + 1;
  EXPECT_OK(bootstrap_allgather(b, v, sizeof v[0]));
  for (int r = 0; r < n; r++) EXPECT_EQ_INT(v[r], r * 11 + 1);

  /* Strays on a rank's own listener. */
  if (rank == 0) {
    int g = connect_to(&b->addrs[1]);
    EXPECT(g >= 0);
    char junk[80];
    memset(junk, 0x5a, sizeof junk);
    (void)socket_send_all(g, junk, sizeof junk, 1000);
    int s = connect_to(&b->addrs[1]);
    EXPECT(s >= 0);
    bs_hello h; /* a full hello claiming to be rank 2, with a wrong secret */
    bs_hello_init(&h, &b->id, BS_KIND_P2P, 2, n);
    h.secret ^= 0xff;
    int w = connect_to(&b->addrs[1]);
    EXPECT(w >= 0);
    (void)socket_send_all(w, &h, sizeof h, 1000);
    char msg[64] = "through the strays";
    EXPECT_OK(bootstrap_send(b, 1, 3, msg, sizeof msg));
    EXPECT_OK(bootstrap_barrier(b));
    close(g);
    close(s);
    close(w);
  } else {
    if (rank == 1) {
      char msg[64];
      EXPECT_OK(bootstrap_recv(b, 0, 3, msg, sizeof msg));
      EXPECT(!strcmp(msg, "through the strays"));
    }
    EXPECT_OK(bootstrap_barrier(b));
  }
  /* A real p2p connection to rank 1 still gets through after the strays. */
  if (rank == 2) EXPECT_OK(bootstrap_send(b, 1, 4, &rank, sizeof rank));
  if (rank == 1) {
    int from = -1;
    EXPECT_OK(bootstrap_recv(b, 2, 4, &from, sizeof from));
    EXPECT_EQ_INT(from, 2);
  }
  EXPECT_OK(bootstrap_barrier(b));
  bootstrap_close(b);
  return 0;
}

int main(void) {
  test_require_weft_lib();
  int fds0 = test_count_fds();
  EXPECT_OK(bootstrap_get_unique_id(&g_id));
  pthread_t t;
  EXPECT_EQ_INT(pthread_create(&t, NULL, strays, NULL), 0);
  while (!__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE)) bs_sleep_ms(1);
  int rc = test_exec_ranks(4, run_rank, NULL, 0, &g_id, 25); /* threads here: fork+exec */
  pthread_join(t, NULL);
  EXPECT_EQ_INT(rc, 0);
  for (int i = 0; i < nsilent; i++) close(silent[i]);
  EXPECT(bs_wait_settled(-1, 3000));
  EXPECT_EQ_INT(test_count_fds(), fds0);
  fprintf(stderr, "ok\n");
  return 0;
}
