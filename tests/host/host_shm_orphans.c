/* A segment left in /dev/shm by a rank killed during connection setup (issue 18, finding 8) is
 * removed by the next communicator that sets up shared memory: a child creates a name of the
 * transport's shape and exits (as a SIGKILLed receiver would leave it), its age is set past
 * the sweep's bound, then two ranks connect over shm and the name must be gone. A fresh orphan
 * (younger than the bound) and one of a live process are left alone. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static void make_segment(const char* name, int age_s) {
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  EXPECT(fd >= 0);
  EXPECT(ftruncate(fd, 4096) == 0);
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= age_s;
  t[1] = t[0];
  EXPECT(futimens(fd, t) == 0);
  close(fd);
}

static int exists(const char* name) {
  char path[128];
  snprintf(path, sizeof path, "/dev/shm%s", name);
  return access(path, F_OK) == 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  float x[64] = {1};
  EXPECT_OK(ncclAllReduce(x, x, 64, ncclFloat, ncclSum, comm, NULL));
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(void) {
  test_require_weft_lib();
  char old_name[64], young_name[64], live_name[64];
  pid_t child = fork();
  if (child == 0) _exit(0);
  EXPECT(child > 0);
  waitpid(child, NULL, 0); /* its pid no longer exists */
  snprintf(old_name, sizeof old_name, "/weft-%d-deadbeef-0", (int)child);
  snprintf(young_name, sizeof young_name, "/weft-%d-deadbeef-1", (int)child);
  snprintf(live_name, sizeof live_name, "/weft-%d-deadbeef-2", (int)getpid());
  make_segment(old_name, 3600);
  make_segment(young_name, 0);
  make_segment(live_name, 3600);
  int rc = test_fork_ranks(2, rank_main, NULL, 60);
  int old_left = exists(old_name), young_left = exists(young_name), live_left = exists(live_name);
  shm_unlink(old_name);
  shm_unlink(young_name);
  shm_unlink(live_name);
  printf("orphan (1 h old): %s; fresh orphan: %s; live process's: %s\n",
         old_left ? "left" : "removed", young_left ? "left" : "removed",
         live_left ? "left" : "removed");
  EXPECT(rc == 0);
  EXPECT(!old_left);
  EXPECT(young_left);
  EXPECT(live_left);
  return 0;
}
