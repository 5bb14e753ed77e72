/* transport_fdx: descriptors handed between processes by SCM_RIGHTS.
 *  exchange: N forked processes (3..6, from the seed) each put a random tag in a memfd, open a
 *            listener, publish (pid, token) through shared memory, then exchange: every process
 *            must read every other's tag through the descriptor it received.
 *  per-fetcher steps (fdx_connect / fdx_serve / fdx_take, as the p2p FIFOs use them): N
 *            processes each hold a different memfd for every peer, behind a listener of its
 *            own; each connects to all its owners, serves each listener once, then takes: every
 *            process must read, from each owner, the tag that owner wrote for it alone.
 *  refusals: a fetch from a name nobody listens on, a name held by another process than the
 *            one named (a squatter), a server no fetcher comes to, and a listener closed
 *            unserved (a failed step's clean-up): each fails with a reason naming the process,
 *            within the timeout, and leaves no descriptor behind. */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "transport/transport_fdx.h"

#define MAXP 6

typedef struct {
  atomic_int arrived;
  int32_t pid[MAXP];
  uint64_t token[MAXP];
  uint64_t tag[MAXP];
} board;

/* fn(arg, i, n) in n forked processes; how many failed. */
static int run_procs(int n, int (*fn)(void*, int, int), void* arg) {
  pid_t kids[MAXP];
  fflush(NULL);
  for (int i = 0; i < n; i++) {
    kids[i] = fork();
    EXPECT(kids[i] >= 0);
    if (kids[i] == 0) _exit(fn(arg, i, n));
  }
  int bad = 0;
  for (int i = 0; i < n; i++) {
    int st = 0;
    EXPECT(waitpid(kids[i], &st, 0) == kids[i]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  return bad;
}

static int child(void* arg, int me, int n) {
  board* b = arg;
  alarm(30);
  int mfd = memfd_create("weft-fdx-test", MFD_CLOEXEC);
  EXPECT(mfd >= 0);
  EXPECT(pwrite(mfd, &b->tag[me], sizeof b->tag[me], 0) == (ssize_t)sizeof b->tag[me]);
  weft_fdx* x = NULL;
  uint64_t token = 0;
  EXPECT_OK(fdx_open(n, &x, &token));
  b->pid[me] = (int32_t)getpid();
  b->token[me] = token;
  atomic_fetch_add(&b->arrived, 1);
  while (atomic_load(&b->arrived) < n) usleep(1000);
  int32_t pids[MAXP];
  uint64_t tokens[MAXP];
  int from[MAXP], fds[MAXP], k = 0;
  /* fetch in a rotated order, so that no two processes connect in the same order */
  for (int i = 1; i < n; i++) {
    int q = (me + i) % n;
    from[k] = q;
    pids[k] = b->pid[q];
    tokens[k++] = b->token[q];
  }
  char why[160] = "";
  ncclResult_t r = fdx_exchange(x, mfd, n - 1, n - 1, pids, tokens, fds, 10000, why, sizeof why);
  if (r != ncclSuccess) {
    fprintf(stderr, "FAIL process %d: %s\n", me, why);
    return 1;
  }
  for (int i = 0; i < k; i++) {
    uint64_t got = 0;
    EXPECT(pread(fds[i], &got, sizeof got, 0) == (ssize_t)sizeof got);
    if (got != b->tag[from[i]]) {
      fprintf(stderr, "FAIL process %d: process %d's descriptor reads 0x%llx, its tag is 0x%llx\n",
              me, from[i], (unsigned long long)got, (unsigned long long)b->tag[from[i]]);
      return 1;
    }
    close(fds[i]);
  }
  fdx_close(x);
  close(mfd);
  return 0;
}

static void exchange(uint64_t* rng) {
  int n = 3 + (int)(test_rand(rng) % (MAXP - 2));
  board* b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT(b != MAP_FAILED);
  memset(b, 0, sizeof *b);
  for (int i = 0; i < n; i++) b->tag[i] = test_rand(rng);
  EXPECT_EQ_INT(run_procs(n, child, b), 0);
  printf("exchange: %d processes each read every other's tag\n", n);
  munmap(b, sizeof *b);
}

/* Per-fetcher descriptors: owner o's listener for fetcher f is token[o][f], its memfd holds
 * tag[o][f]. */
typedef struct {
  atomic_int arrived;
  int32_t pid[MAXP];
  uint64_t token[MAXP][MAXP];
  uint64_t tag[MAXP][MAXP];
} pair_board;

static int pair_child(void* arg, int me, int n) {
  pair_board* b = arg;
  alarm(30);
  weft_fdx* x[MAXP] = {0};
  int mfd[MAXP];
  for (int f = 0; f < n; f++) {
    mfd[f] = -1;
    if (f == me) continue;
    mfd[f] = memfd_create("weft-fdx-pair", MFD_CLOEXEC);
    EXPECT(mfd[f] >= 0);
    EXPECT(pwrite(mfd[f], &b->tag[me][f], sizeof(uint64_t), 0) == (ssize_t)sizeof(uint64_t));
    EXPECT_OK(fdx_open(1, &x[f], &b->token[me][f]));
  }
  b->pid[me] = (int32_t)getpid();
  atomic_fetch_add(&b->arrived, 1);
  while (atomic_load(&b->arrived) < n) usleep(1000);
  fdx_deadline d = fdx_deadline_in(10000);
  char why[160] = "";
  int sock[MAXP];
  /* 1: connect to every owner, in a rotated order */
  for (int i = 1; i < n; i++) {
    int o = (me + i) % n;
    if (fdx_connect(b->pid[o], b->token[o][me], &sock[o], why, sizeof why) != ncclSuccess) {
      fprintf(stderr, "FAIL process %d connecting to %d: %s\n", me, o, why);
      return 1;
    }
  }
  /* 2: serve each listener once, in the opposite rotation */
  for (int i = 1; i < n; i++) {
    int f = (me + n - i) % n;
    if (fdx_serve(x[f], mfd[f], 1, d, why, sizeof why) != ncclSuccess) {
      fprintf(stderr, "FAIL process %d serving %d: %s\n", me, f, why);
      return 1;
    }
    fdx_close(x[f]);
    close(mfd[f]);
  }
  /* 3: take and check */
  for (int o = 0; o < n; o++) {
    if (o == me) continue;
    int fd = -1;
    uint64_t got = 0;
    if (fdx_take(sock[o], b->pid[o], d, &fd, why, sizeof why) != ncclSuccess) {
      fprintf(stderr, "FAIL process %d taking from %d: %s\n", me, o, why);
      return 1;
    }
    EXPECT(pread(fd, &got, sizeof got, 0) == (ssize_t)sizeof got);
    if (got != b->tag[o][me]) {
      fprintf(stderr, "FAIL process %d: process %d's descriptor reads 0x%llx, the tag it wrote "
              "for this process is 0x%llx\n", me, o, (unsigned long long)got,
              (unsigned long long)b->tag[o][me]);
      return 1;
    }
    close(fd);
    close(sock[o]);
  }
  return 0;
}

static void per_fetcher(uint64_t* rng) {
  int n = 3 + (int)(test_rand(rng) % (MAXP - 2));
  pair_board* b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT(b != MAP_FAILED);
  memset(b, 0, sizeof *b);
  for (int o = 0; o < n; o++)
    for (int f = 0; f < n; f++) b->tag[o][f] = test_rand(rng);
  EXPECT_EQ_INT(run_procs(n, pair_child, b), 0);
  printf("per-fetcher steps: %d processes each read the %d tags written for it alone\n", n,
         n - 1);
  munmap(b, sizeof *b);
}

static int open_fds(void) {
  int n = 0;
  for (int fd = 0; fd < 1024; fd++)
    if (fcntl(fd, F_GETFD) != -1) n++;
  return n;
}

static void refusals(void) {
  int before = open_fds();
  char why[160];
  int fds[1] = {7};
  /* nobody listens there */
  int32_t pid = (int32_t)getpid();
  uint64_t token = 0x1234;
  EXPECT_RES(fdx_exchange(NULL, -1, 0, 1, &pid, &token, fds, 500, why, sizeof why),
             ncclSystemError);
  EXPECT(fds[0] == -1 && strstr(why, "connecting to process"));
  printf("no listener: %s\n", why);

  /* a squatter: this process listens on the name of its child's pid */
  pid_t kid = fork();
  EXPECT(kid >= 0);
  if (kid == 0) {
    pause();
    _exit(0);
  }
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "weft-fdx-%d-%016llx", (int)kid,
                     (unsigned long long)token);
  EXPECT(bind(s, (struct sockaddr*)&a,
              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len)) == 0);
  EXPECT(listen(s, 4) == 0);
  int32_t kpid = (int32_t)kid;
  EXPECT_RES(fdx_exchange(NULL, -1, 0, 1, &kpid, &token, fds, 500, why, sizeof why),
             ncclSystemError);
  EXPECT(fds[0] == -1 && strstr(why, "is held by process"));
  printf("squatter: %s\n", why);
  close(s);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);

  /* a server nobody comes to */
  weft_fdx* x = NULL;
  EXPECT_OK(fdx_open(2, &x, &token));
  int mfd = memfd_create("weft-fdx-test", MFD_CLOEXEC);
  EXPECT_RES(fdx_exchange(x, mfd, 1, 0, NULL, NULL, NULL, 300, why, sizeof why), ncclSystemError);
  EXPECT(strstr(why, "never came"));
  printf("no fetcher: %s\n", why);
  fdx_close(x);
  close(mfd);

  /* a listener closed with the fetcher's connection unserved: the take fails (not at the
   * deadline: the test's 30 s alarm would end it) */
  EXPECT_OK(fdx_open(1, &x, &token));
  int s2 = -1, got = 7;
  EXPECT_OK(fdx_connect((int32_t)getpid(), token, &s2, why, sizeof why));
  fdx_close(x);
  alarm(30);
  EXPECT_RES(fdx_take(s2, (int32_t)getpid(), fdx_deadline_in(600000), &got, why, sizeof why),
             ncclSystemError);
  alarm(0);
  EXPECT(got == -1 && strstr(why, "process"));
  printf("closed unserved: %s\n", why);
  close(s2);
  EXPECT_EQ_INT(open_fds(), before);
}

int main(void) {
  uint64_t seed = test_seed(0xfd0c0de);
  printf("seed 0x%llx (WEFT_TEST_SEED)\n", (unsigned long long)seed);
  uint64_t rng = seed | 1;
  for (int round = 0; round < 3; round++) exchange(&rng);
  for (int round = 0; round < 2; round++) per_fetcher(&rng);
  refusals();
  return 0;
}
