/* libfabric's shm provider never removes the shared-memory region of an endpoint whose process
 * died (16 MiB of RAM each in /dev/shm, until reboot). The plugin names its regions
 * weft-ofi-<pid>-<id> and its first shm endpoint sweeps the regions of exited processes: this
 * test plants regions named for a dead process (old, and one just made) and for a live one,
 * opens an endpoint on shm (a listen), and checks that only the old dead one is gone. The
 * provider must be shm (WEFT_OFI_PROVIDER=shm); skipped (77) when it cannot be opened. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net_ofi.h"
#include "testutil.h"

static const ncclNet_v11_t* net = &net_ofi_v11;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

/* A region file of age_s seconds. */
static int plant(const char* name, int age_s) {
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    fprintf(stderr, "shm_open(%s): %s\n", name, strerror(errno));
    return -1;
  }
  int rc = ftruncate(fd, 4096);
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= age_s;
  t[1] = t[0];
  if (rc == 0) rc = futimens(fd, t);
  close(fd);
  return rc;
}

static int exists(const char* name) {
  char path[256];
  snprintf(path, sizeof path, "/dev/shm%s", name);
  return access(path, F_OK) == 0;
}

int main(void) {
  /* A pid that no longer exists: a child that exited and was reaped. */
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, NULL, 0);
  /* A live process other than this one. */
  pid_t live = fork();
  if (live == 0) {
    pause();
    _exit(0);
  }
  unsigned tag = (unsigned)(getpid() & 0xffff) << 16;
  char old_dead[96], young_dead[96], old_live[96], other[96];
  snprintf(old_dead, sizeof old_dead, "/weft-ofi-%d-%08x:0:0", (int)dead, tag | 1);
  snprintf(young_dead, sizeof young_dead, "/weft-ofi-%d-%08x:0:0", (int)dead, tag | 2);
  snprintf(old_live, sizeof old_live, "/weft-ofi-%d-%08x:0:0", (int)live, tag | 3);
  snprintf(other, sizeof other, "/weft-%d-%08x:0:0", (int)dead, tag | 4); /* not the plugin's */
  int fail = plant(old_dead, 3600) || plant(young_dead, 0) || plant(old_live, 3600) ||
             plant(other, 3600);
  void* ctx = NULL;
  void* lc = NULL;
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  int skip = 0;
  if (!fail) {
    ncclResult_t res = net->init(&ctx, 1, NULL, logger, NULL);
    int ndev = 0;
    if (res == ncclSuccess) res = net->devices(&ndev);
    if (res != ncclSuccess || ndev < 1) {
      printf("SKIP: the shm provider cannot be opened here\n");
      skip = 1;
    } else if (net->listen(ctx, 0, handle, &lc) != ncclSuccess) {
      fprintf(stderr, "listen on shm failed\n");
      fail = 1;
    }
  }
  if (!fail && !skip) {
    const struct {
      const char* name;
      int want;
      const char* what;
    } c[] = {{old_dead, 0, "an exited process's, 1 h old"},
             {young_dead, 1, "an exited process's, just made"},
             {old_live, 1, "a live process's"},
             {other, 1, "not named as the plugin names its regions"}};
    for (int i = 0; i < 4; i++)
      if (exists(c[i].name) != c[i].want) {
        fprintf(stderr, "FAIL: %s (%s) %s\n", c[i].name, c[i].what,
                c[i].want ? "was removed" : "is still there");
        fail = 1;
      }
  }
  if (lc) net->closeListen(lc);
  if (ctx) net->finalize(ctx);
  shm_unlink(old_dead);
  shm_unlink(young_dead);
  shm_unlink(old_live);
  shm_unlink(other);
  kill(live, SIGKILL);
  waitpid(live, NULL, 0);
  if (skip) return 77;
  if (!fail) printf("ok: the exited process's old region was removed; the others were kept\n");
  return fail ? 1 : 0;
}
