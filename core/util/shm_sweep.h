/* Removing what killed processes left in /dev/shm. A process that dies before it unlinks its
 * shared-memory files (SIGKILL, a crash, _exit) leaves them, in RAM, until reboot; the next
 * process that creates files of the same kind sweeps those of processes that no longer exist.
 * Used by the shm transport and by weft's libfabric plugin (whose shm provider names its
 * regions after what the plugin passes). */
#ifndef WEFT_UTIL_SHM_SWEEP_H
#define WEFT_UTIL_SHM_SWEEP_H

/* The pid that created /dev/shm/<name> when name is one of the caller's kind, else 0. */
typedef int (*shm_owner_fn)(const char* name);

/* Told of each file removed (path "/name" as shm_unlink takes it, and the dead owner), so that
 * the caller logs it its own way (a plugin through its logger). */
typedef void (*shm_removed_fn)(const char* path, int pid, void* arg);

/* Unlink every /dev/shm file that owner claims for a process that no longer exists (kill(pid,
 * 0) fails with ESRCH), that is a regular file of this user, not this process's, and older than
 * min_age_s seconds (a peer's setup in progress is not touched); removed (may be NULL) hears of
 * each. Returns how many were removed. Processes of another pid namespace sharing /dev/shm look
 * dead: min_age_s keeps fresh files of theirs, and the caller names only its own kind. */
int shm_sweep_orphans(shm_owner_fn owner, int min_age_s, shm_removed_fn removed, void* arg);

#endif
