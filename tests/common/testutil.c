/* Shared test helpers (see testutil.h). */
#include "testutil.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void test_require_weft_lib(void) {
  Dl_info info;
  if (!dladdr((void*)ncclGetVersion, &info) || info.dli_fname == NULL) {
    fprintf(stderr, "cannot tell which library provides ncclGetVersion\n");
    exit(1);
  }
  /* WEFT_TEST_LIBDIR in the environment: the build's libraries were copied elsewhere (a GPU
   * machine that runs binaries built here); it must still be weft's, never NVIDIA's. */
  const char* dir = getenv("WEFT_TEST_LIBDIR");
  if (!dir || !*dir) dir = WEFT_TEST_LIBDIR;
  char want[PATH_MAX], got[PATH_MAX];
  if (!realpath(dir, want) || !realpath(info.dli_fname, got) ||
      strncmp(want, got, strlen(want)) != 0 || dlsym(RTLD_DEFAULT, "weftVersionString") == NULL) {
    fprintf(stderr, "wrong libnccl loaded: %s (expected weft's, under %s)\n", info.dli_fname,
            dir);
    exit(1);
  }
  test_exec_child(); /* a rank started by test_exec_ranks runs its function from here */
}

int test_wait_children(pid_t* pids, int n, int timeout_s) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int left = n, failed = 0;
  while (left > 0) {
    int status;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      for (int i = 0; i < n; i++) {
        if (pids[i] != p) continue;
        pids[i] = 0;
        left--;
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
          fprintf(stderr, "rank %d exited with status %d\n", i, WEXITSTATUS(status));
          failed = 1;
        } else if (WIFSIGNALED(status)) {
          fprintf(stderr, "rank %d killed by signal %d (%s)\n", i, WTERMSIG(status),
                  strsignal(WTERMSIG(status)));
          failed = 1;
        }
      }
      continue;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > timeout_s) {
      for (int i = 0; i < n; i++)
        if (pids[i]) {
          fprintf(stderr, "rank %d still running after %d s: killing\n", i, timeout_s);
          kill(pids[i], SIGKILL);
          waitpid(pids[i], NULL, 0);
          pids[i] = 0;
        }
      return 1;
    }
    usleep(2000);
  }
  return failed;
}

static int fork_ranks(int n, test_rank_fn fn, void* arg, int timeout_s, int share_id) {
  int fds[2];
  if (share_id && pipe(fds) != 0) return 1;
  pid_t* pids = calloc((size_t)n, sizeof *pids);
  if (!pids) return 1;
  fflush(NULL);
  for (int r = 0; r < n; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      exit(1);
    }
    if (p == 0) {
      free(pids); /* the parent's: a child that fails with exit() must not report it leaked */
      ncclUniqueId id;
      memset(&id, 0, sizeof id);
      if (share_id) {
        if (r == 0) {
          close(fds[0]);
          if (ncclGetUniqueId(&id) != ncclSuccess) _exit(2);
          for (int i = 1; i < n; i++)
            if (write(fds[1], &id, sizeof id) != (ssize_t)sizeof id) _exit(2);
          close(fds[1]);
        } else {
          close(fds[1]);
          if (test_read_full(fds[0], &id, sizeof id) != sizeof id) _exit(2);
          close(fds[0]);
        }
      }
      int rc = fn(r, n, share_id ? &id : NULL, arg);
      fflush(NULL);
      _exit(rc);
    }
    pids[r] = p;
  }
  if (share_id) {
    close(fds[0]);
    close(fds[1]);
  }
  int rc = test_wait_children(pids, n, timeout_s);
  free(pids);
  return rc;
}

size_t test_read_full(int fd, void* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t k = read(fd, (char*)buf + got, len - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  return got;
}

int test_fork_ranks(int n, test_rank_fn fn, void* arg, int timeout_s) {
  return fork_ranks(n, fn, arg, timeout_s, 1);
}

int test_probe_in_child(int (*probe)(void)) {
  fflush(NULL);
  pid_t p = fork();
  if (p == 0) _exit(probe() == 1 ? 0 : 1);
  int st = 0;
  if (p < 0 || waitpid(p, &st, 0) != p) return 0;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int test_fork_plain(int n, test_rank_fn fn, void* arg, int timeout_s) {
  return fork_ranks(n, fn, arg, timeout_s, 0);
}

static int count_dir(const char* path) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the DIR's own fd (for /proc/self/fd); harmless offset for task counts */
}

int test_count_fds(void) { return count_dir("/proc/self/fd"); }
static void* no_op_thread(void* arg) { return arg; }

/* A sanitizer runtime starts helper threads of its own: ThreadSanitizer its background thread at
 * the first pthread_create, and in a forked child one more at fork and again at the first
 * pthread_create. The first count of a process starts (and joins) one thread first, so those
 * exist before any baseline is taken and never show up as a leak. */
int test_count_threads(void) {
  static pid_t primed;
  if (primed != getpid()) {
    primed = getpid();
    pthread_t t;
    if (pthread_create(&t, NULL, no_op_thread, NULL) == 0) pthread_join(t, NULL);
    usleep(20000); /* the joined thread's task leaves /proc a moment after the join */
  }
  return count_dir("/proc/self/task") + 1;
}

int test_settle_threads(int want) {
  int t = test_count_threads();
  for (int i = 0; i < 200 && t > want; i++) {
    usleep(10000);
    t = test_count_threads();
  }
  return t;
}

int test_count_my_shm(void) {
  char prefix[32];
  snprintf(prefix, sizeof prefix, "weft-%d-", (int)getpid());
  DIR* d = opendir("/dev/shm");
  if (!d) return 0;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

long test_rss_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

uint64_t test_seed(uint64_t fallback) {
  const char* s = getenv("WEFT_TEST_SEED");
  uint64_t v = s ? strtoull(s, NULL, 0) : fallback;
  return v ? v : 0x9e3779b97f4a7c15ull;
}

uint64_t test_rand(uint64_t* s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

int test_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr*)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr*)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}
