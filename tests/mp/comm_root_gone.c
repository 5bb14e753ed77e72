/* A unique id whose root is gone (the process that made it exited) fails init soon (issue 42):
 * a random id's root is up before the id exists, so a refused connection after a short bounded
 * retry (2 s) means it is gone, not "not up yet"; before, init waited WEFT_INIT_TIMEOUT_MS
 * (30 s here). An NCCL_COMM_ID root may start later, and keeps the full wait (not tested: it
 * is the init timeout). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define BOUND_MS 8000

int main(void) {
  test_require_weft_lib();
  setenv("WEFT_INIT_TIMEOUT_MS", "30000", 1);
  int p[2];
  EXPECT(pipe(p) == 0);
  fflush(NULL);
  pid_t pid = fork(); /* makes an id and exits: its root goes with it */
  EXPECT(pid >= 0);
  if (pid == 0) {
    ncclUniqueId id;
    EXPECT_OK(ncclGetUniqueId(&id));
    EXPECT(write(p[1], &id, sizeof id) == (ssize_t)sizeof id);
    _exit(0);
  }
  ncclUniqueId id;
  EXPECT(test_read_full(p[0], &id, sizeof id) == sizeof id);
  int st = 0;
  EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(p[0]);
  close(p[1]);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ncclComm_t comm;
  ncclResult_t res = ncclCommInitRank(&comm, 2, id, 1);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  printf("init with a gone root: %s after %.0f ms\n", ncclGetErrorString(res), ms);
  EXPECT_RES(res, ncclRemoteError);
  EXPECT(ms < BOUND_MS);
  return 0;
}
