/* Out of file descriptors (issue 42): the error names errno and the limit that was hit, not
 * only "unhandled system error". A child lowers RLIMIT_NOFILE to a random count just above the
 * fds it has open, so the library's next socket cannot be made, and makes a unique id and a
 * one-rank communicator; the last error must say EMFILE and the limit. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

int main(void) {
  test_require_weft_lib();
  uint64_t rng = test_seed((uint64_t)time(NULL));
  fflush(NULL);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    alarm(30);
    /* The limit: the highest open fd + 1 plus a few (random), every number below it taken. */
    int top = 0;
    for (int fd = 0; fd < 4096; fd++)
      if (fcntl(fd, F_GETFD) != -1) top = fd + 1;
    rlim_t lim = (rlim_t)top + (rlim_t)(test_rand(&rng) % 3);
    struct rlimit rl = {lim, lim};
    EXPECT(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    while (dup(2) >= 0) {
    }
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    ncclComm_t comm;
    if (r == ncclSuccess) r = ncclCommInitRank(&comm, 1, id, 0);
    const char* err = ncclGetLastError(NULL);
    char want[64];
    snprintf(want, sizeof want, "may have %llu open files", (unsigned long long)lim);
    printf("limit %llu: %s: %s\n", (unsigned long long)lim, ncclGetErrorString(r), err);
    fflush(NULL);
    _exit(r == ncclSystemError && strstr(err, "EMFILE") && strstr(err, want) ? 0 : 1);
  }
  int st = 0;
  EXPECT(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
