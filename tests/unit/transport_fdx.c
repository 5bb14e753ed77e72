/* transport_fdx: descriptors handed between processes by SCM_RIGHTS.
 *  exchange: N forked processes (3..6, from the seed) each put a random tag in a memfd, open a
 *            listener, publish (pid, token) through shared memory, then exchange: every process
 *            must read every other's tag through the descriptor it received.
 *  refusals: a fetch from a name nobody listens on, a name held by another process than the
 *            one named (a squatter), and a server no fetcher comes to: each fails with a reason
 *            naming the process, within the timeout, and leaves no descriptor behind. */
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

static int child(board* b, int me, int n) {
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
  pid_t kids[MAXP];
  fflush(NULL);
  for (int i = 0; i < n; i++) {
    kids[i] = fork();
    EXPECT(kids[i] >= 0);
    if (kids[i] == 0) _exit(child(b, i, n));
  }
  int bad = 0;
  for (int i = 0; i < n; i++) {
    int st = 0;
    EXPECT(waitpid(kids[i], &st, 0) == kids[i]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  EXPECT_EQ_INT(bad, 0);
  printf("exchange: %d processes each read every other's tag\n", n);
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
  EXPECT_EQ_INT(open_fds(), before);
}

int main(void) {
  uint64_t seed = test_seed(0xfd0c0de);
  printf("seed 0x%llx (WEFT_TEST_SEED)\n", (unsigned long long)seed);
  uint64_t rng = seed | 1;
  for (int round = 0; round < 3; round++) exchange(&rng);
  refusals();
  return 0;
}
