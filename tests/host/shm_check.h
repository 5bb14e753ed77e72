/* Leak check for the shm transport: a segment /dev/shm/weft-<pid>-<8 hex>-<n> (the transport's
 * exact name shape) whose creating process no longer exists was left behind (names are unlinked
 * as soon as both ends map them). Segments of live processes (other tests running at the same
 * time) and other libraries' files (libfabric's shm provider appends ":0:0") are not counted. */
#ifndef WEFT_TEST_SHM_CHECK_H
#define WEFT_TEST_SHM_CHECK_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>

static inline int shm_orphan_segments(void) {
  DIR* d = opendir("/dev/shm");
  if (!d) return 0;
  int found = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    int pid, used = 0;
    unsigned hash, n;
    if (sscanf(e->d_name, "weft-%d-%8x-%u%n", &pid, &hash, &n, &used) != 3) continue;
    if (e->d_name[used] != '\0') continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    fprintf(stderr, "left in /dev/shm by exited pid %d: %s\n", pid, e->d_name);
    found++;
  }
  closedir(d);
  return found;
}

#endif
