/* Stray connections to the bootstrap root during a real 4-rank init: one client sends
 * garbage, one connects and stays silent, one sends a plausible-looking header with a wrong
 * secret. The init still succeeds on every rank. The root thread lives in this process, so the
 * ranks are fork+exec'd (test_exec_ranks). */
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "testutil.h"
#include "weft.h"

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  usleep(200000); /* let the strays reach the root first */
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  int v = rank * 3 + 1, all[4];
  EXPECT_OK(weftCommOobAllGather(comm, &v, all, sizeof v));
  for (int r = 0; r < nranks; r++) EXPECT_EQ_INT(all[r], r * 3 + 1);
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

static int connect_to(const weft_bootstrap_id* b) {
  int fd = socket(b->addr.sa.sa_family, SOCK_STREAM, 0);
  EXPECT(fd >= 0);
  socklen_t len = b->addr.sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                   : sizeof(struct sockaddr_in);
  EXPECT(connect(fd, &b->addr.sa, len) == 0);
  return fd;
}

int main(void) {
  test_require_weft_lib();
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id)); /* the root thread lives in this process */
  weft_bootstrap_id b;
  memcpy(&b, &id, sizeof b);

  int garbage = connect_to(&b);
  uint64_t s = test_seed(5);
  char junk[512];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)test_rand(&s);
  EXPECT(write(garbage, junk, sizeof junk) == (ssize_t)sizeof junk);
  int silent = connect_to(&b);
  int forged = connect_to(&b);
  uint64_t hdr[8] = {b.magic, b.secret ^ 1, 1, 0, 4, 0, 0, 0};
  EXPECT(write(forged, hdr, sizeof hdr) == (ssize_t)sizeof hdr);

  int rc = test_exec_ranks(4, rank_main, NULL, 0, &id, 60);
  close(garbage);
  close(silent);
  close(forged);
  return rc;
}
