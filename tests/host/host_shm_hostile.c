/* The hang report's status board (comm_hang.c) against a hostile /dev/shm (issue 42), each in
 * a private tmpfs mounted on /dev/shm in a mount namespace of the test's own (unshare -m; skipped
 * where that is not permitted):
 *   full:    a 64 KiB tmpfs filled to the last byte. The board used to be mapped without its
 *            blocks, and the first store into it was a SIGBUS in every rank, even alone. Now no
 *            rank dies of a signal: one rank inits and runs without a shared board (the init
 *            names the path and ENOSPC), two ranks get a clean error or run, and nothing of
 *            weft's is left in /dev/shm.
 *   foreign: another user (nobody, through setresuid: root only) creates the board's file
 *            first, mode 0666, and truncates it to 0 over and over while two ranks run. The board
 *            used to open it (no O_EXCL, no owner check) and the ranks died of SIGBUS. Now they
 *            leave it alone (a warning names it and its owner) and their collectives, checked
 *            against a reference on random data, succeed.
 * Usage: host_shm_hostile full|foreign */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "weft.h"

#define COUNT 4096
#define ITERS 50
#define NOBODY 65534

/* Random data per rank (seeded from the seed and the rank), summed by every rank: checked
 * against the sum computed here. Returns the first failing result, else ncclSuccess. */
static ncclResult_t run_checked(ncclComm_t comm, int rank, int nranks, uint64_t seed) {
  static float s[COUNT], r[COUNT], want[COUNT];
  ncclResult_t res = ncclSuccess;
  for (int it = 0; it < ITERS && res == ncclSuccess; it++) {
    for (int i = 0; i < COUNT; i++) want[i] = 0;
    for (int q = 0; q < nranks; q++) {
      uint64_t st = seed * 1000003u + (uint64_t)q * 7919u + (uint64_t)it;
      for (int i = 0; i < COUNT; i++) {
        float v = (float)(test_rand(&st) % 1000);
        want[i] += v;
        if (q == rank) s[i] = v;
      }
    }
    res = ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, comm, NULL);
    if (res == ncclSuccess)
      for (int i = 0; i < COUNT; i++)
        if (r[i] != want[i]) {
          fprintf(stderr, "rank %d: iteration %d element %d: %g, expected %g\n", rank, it, i,
                  (double)r[i], (double)want[i]);
          exit(1);
        }
  }
  return res;
}

/* A private, size-limited /dev/shm for this process and its children. 0 when not permitted. */
static int private_shm(const char* size) {
  if (unshare(CLONE_NEWNS) != 0) {
    printf("SKIP: cannot make a mount namespace (unshare -m): %s\n", strerror(errno));
    return 0;
  }
  char opts[64];
  snprintf(opts, sizeof opts, "size=%s,mode=1777", size);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("weft-test", "/dev/shm", "tmpfs", 0, opts) != 0) {
    printf("SKIP: cannot mount a private tmpfs on /dev/shm: %s\n", strerror(errno));
    return 0;
  }
  return 1;
}

/* Names in /dev/shm other than keep; printed. */
static int others_in_shm(const char* keep) {
  DIR* d = opendir("/dev/shm");
  EXPECT(d != NULL);
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || (keep && strcmp(e->d_name, keep) == 0)) continue;
    fprintf(stderr, "left in /dev/shm: %s\n", e->d_name);
    n++;
  }
  closedir(d);
  return n;
}

/* ---- full ---- */

static int full_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  uint64_t seed = *(uint64_t*)arg;
  ncclComm_t comm;
  ncclResult_t res = ncclCommInitRank(&comm, nranks, *id, rank);
  printf("rank %d of %d: init on a full /dev/shm: %s\n", rank, nranks, ncclGetErrorString(res));
  if (res != ncclSuccess) return 0; /* a clean error: what this case allows */
  res = run_checked(comm, rank, nranks, seed);
  printf("rank %d of %d: AllReduce: %s\n", rank, nranks, ncclGetErrorString(res));
  if (nranks == 1) EXPECT_OK(res); /* nothing needs shared memory */
  if (res == ncclSuccess)
    EXPECT_OK(ncclCommDestroy(comm));
  else
    EXPECT_OK(ncclCommAbort(comm));
  return 0;
}

static int run_full(uint64_t seed) {
  if (!private_shm("64k")) return TEST_SKIP_RC;
  int fd = open("/dev/shm/filler", O_CREAT | O_WRONLY, 0600);
  EXPECT(fd >= 0);
  static char block[4096];
  while (write(fd, block, sizeof block) > 0) {
  }
  EXPECT(errno == ENOSPC);
  close(fd);
  int rc = test_fork_ranks(1, full_rank, &seed, 60);
  rc |= test_fork_ranks(2, full_rank, &seed, 60);
  int left = others_in_shm("filler");
  unlink("/dev/shm/filler");
  EXPECT_EQ_INT(left, 0);
  return rc;
}

/* ---- foreign ---- */

/* The board's name as comm_hang.c makes it: this user, the id's FNV-1a hash, the rank count. */
static void board_name(const ncclUniqueId* id, int nranks, char* buf, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char* b = (const unsigned char*)id;
  for (size_t i = 0; i < sizeof *id; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  snprintf(buf, len, "/weft-hang-%u-%016llx-%d", (unsigned)geteuid(), (unsigned long long)h,
           nranks);
}

/* The other user: makes name (0666) as nobody, says so on ready_fd, truncates it until killed. */
static int attacker(const char* name, int ready_fd) {
  if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
      setresuid(NOBODY, NOBODY, NOBODY) != 0) {
    perror("attacker: cannot become nobody");
    return 1;
  }
  umask(0);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0666);
  if (fd < 0) {
    perror("attacker: shm_open");
    return 1;
  }
  char c = 1;
  if (write(ready_fd, &c, 1) != 1) return 1;
  close(ready_fd);
  for (;;) {
    if (ftruncate(fd, 0) != 0) return 1;
    usleep(200);
  }
}

static int foreign_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  uint64_t seed = *(uint64_t*)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  EXPECT_OK(run_checked(comm, rank, nranks, seed));
  EXPECT_OK(weftCommHangReport(comm)); /* reads the board too */
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

static int run_foreign(uint64_t seed) {
  if (geteuid() != 0) {
    printf("SKIP: acting as another user (nobody) needs root\n");
    return TEST_SKIP_RC;
  }
  if (!private_shm("16m")) return TEST_SKIP_RC;
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id));
  char name[96], fdtext[16];
  board_name(&id, 2, name, sizeof name);
  int p[2];
  EXPECT(pipe(p) == 0);
  snprintf(fdtext, sizeof fdtext, "%d", p[1]);
  char* argv[] = {"host_shm_hostile", "attacker", name, fdtext, NULL};
  fflush(NULL);
  pid_t pid = fork(); /* this process has the id's root thread: exec at once */
  EXPECT(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(p[1]);
  char c;
  EXPECT(read(p[0], &c, 1) == 1);
  close(p[0]);
  struct stat st;
  char path[128];
  snprintf(path, sizeof path, "/dev/shm%s", name);
  EXPECT(stat(path, &st) == 0 && st.st_uid == NOBODY);
  int rc = test_exec_ranks(2, foreign_rank, &seed, sizeof seed, &id, 60);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  /* Still there and still nobody's: a user's file is not another's to remove. */
  EXPECT(stat(path, &st) == 0 && st.st_uid == NOBODY);
  unlink(path);
  EXPECT_EQ_INT(others_in_shm(NULL), 0);
  return rc;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "attacker") == 0) return attacker(argv[2], atoi(argv[3]));
  test_require_weft_lib();
  if (argc < 2) {
    fprintf(stderr, "usage: %s full|foreign\n", argv[0]);
    return 2;
  }
  uint64_t seed = test_seed((uint64_t)time(NULL));
  printf("seed %llu\n", (unsigned long long)seed);
  if (strcmp(argv[1], "full") == 0) return run_full(seed);
  if (strcmp(argv[1], "foreign") == 0) return run_foreign(seed);
  fprintf(stderr, "unknown case %s\n", argv[1]);
  return 2;
}
