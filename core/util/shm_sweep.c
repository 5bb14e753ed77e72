/* Sweeping /dev/shm of files left by processes that no longer exist (shm_sweep.h). */
#include "util/shm_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


int shm_sweep_orphans(shm_owner_fn owner, int min_age_s, shm_removed_fn removed, void* arg) {
  DIR* d = opendir("/dev/shm");
  if (!d) return 0;
  uid_t uid = geteuid();
  time_t now = time(NULL);
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    int pid = owner(e->d_name);
    if (pid <= 0 || pid == (int)getpid()) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != uid || now - st.st_mtime < min_age_s)
      continue;
    char name[sizeof e->d_name + 1];
    name[0] = '/';
    memcpy(name + 1, e->d_name, sizeof e->d_name);
    if (shm_unlink(name) == 0) {
      n++;
      if (removed) removed(name, pid, arg);
    }
  }
  closedir(d);
  return n;
}
