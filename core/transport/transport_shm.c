/* Shared-memory connections between processes of one host. The receiver creates a POSIX
 * segment (control block + slots), reserves its pages (posix_fallocate, so a full /dev/shm is
 * an error here and not a SIGBUS later), maps it and sends its name; the sender maps it and
 * unlinks the name at once. From then on the segment lives exactly as long as the mappings,
 * whatever way either process ends. The receiver unlinks again at close in case the sender
 * never got that far (ENOENT is then expected). A receiver killed between creating a segment
 * and its sender's unlink leaves the name behind; the first segment a process creates sweeps
 * such orphans first: names of this exact shape, owned by this user, whose creating pid no
 * longer exists and that are older than ORPHAN_AGE_S (a live setup in another pid namespace
 * sharing /dev/shm unlinks its names within its setup). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/shm_sweep.h"

static unsigned shm_counter;
static int swept;

#define ORPHAN_AGE_S 10

/* The pid of a segment of ours: /dev/shm/weft-<pid>-<8 hex>-<n>, exactly. */
static int segment_owner(const char* name) {
  int pid, used = 0;
  unsigned hash, n;
  if (sscanf(name, "weft-%d-%8x-%u%n", &pid, &hash, &n, &used) != 3 || name[used] != '\0')
    return 0;
  return pid;
}

static void log_removed(const char* path, int pid, void* arg) {
  (void)arg;
  INFO(NCCL_INIT, "removed /dev/shm%s, left by exited process %d", path, pid);
}

static void sweep_orphans(void) {
  shm_sweep_orphans(segment_owner, ORPHAN_AGE_S, log_removed, NULL);
}

ncclResult_t shm_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info) {
  size_t bytes = conn_mem_bytes(c->conn.step_bytes);
  if (__atomic_exchange_n(&swept, 1, __ATOMIC_ACQ_REL) == 0) sweep_orphans();
  unsigned n = __atomic_fetch_add(&shm_counter, 1, __ATOMIC_RELAXED);
  snprintf(c->shm_name, sizeof c->shm_name, "/weft-%d-%08x-%u", (int)getpid(),
           (unsigned)(comm->comm_hash & 0xffffffffu), n);
  int fd = shm_open(c->shm_name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    char e[160];
    WARN("rank %d: shm_open(%s) for a connection from rank %d failed: %s", comm->rank,
         c->shm_name, c->key.peer, weft_sys_error(errno, e, sizeof e));
    c->shm_name[0] = '\0';
    return ncclSystemError;
  }
  int rc = posix_fallocate(fd, 0, (off_t)bytes);
  if (rc != 0) {
    WARN("rank %d: cannot reserve %zu bytes of shared memory in /dev/shm for a connection "
         "from rank %d: %s (NCCL_BUFFSIZE sizes it; NCCL_SHM_DISABLE=1 avoids it)",
         comm->rank, bytes, c->key.peer, strerror(rc));
    close(fd);
    shm_unlink(c->shm_name);
    c->shm_name[0] = '\0';
    return ncclSystemError;
  }
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    WARN("rank %d: mmap of %zu bytes of %s failed: %s", comm->rank, bytes, c->shm_name,
         strerror(err));
    shm_unlink(c->shm_name);
    c->shm_name[0] = '\0';
    return ncclSystemError;
  }
  c->map = p;
  c->map_bytes = bytes;
  c->conn.ctrl = p;
  c->conn.buff = (char*)p + WEFT_FIFO_CTRL_BYTES;
  snprintf(info->shm_name, sizeof info->shm_name, "%s", c->shm_name);
  info->shm_bytes = bytes;
  return ncclSuccess;
}

ncclResult_t shm_send_connect(struct ncclComm* comm, tconn* c, const conn_info* info) {
  size_t bytes = conn_mem_bytes(c->conn.step_bytes);
  char name[SHM_NAME_MAX];
  memcpy(name, info->shm_name, sizeof name);
  name[sizeof name - 1] = '\0';
  if (info->shm_bytes != bytes || strncmp(name, "/weft-", 6) != 0) {
    WARN("rank %d: rank %d offered shared memory %s of %llu bytes, expected %zu bytes",
         comm->rank, c->key.peer, name, (unsigned long long)info->shm_bytes, bytes);
    return ncclInternalError;
  }
  int fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) {
    WARN("rank %d: cannot open rank %d's shared memory %s: %s (is /dev/shm shared between "
         "them? NCCL_SHM_DISABLE=1 uses the network instead)",
         comm->rank, c->key.peer, name, strerror(errno));
    return ncclSystemError;
  }
  shm_unlink(name); /* mapped or not, nobody else needs the name */
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size != bytes) {
    WARN("rank %d: rank %d's shared memory %s has the wrong size", comm->rank, c->key.peer,
         name);
    close(fd);
    return ncclInternalError;
  }
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    WARN("rank %d: mmap of rank %d's shared memory %s failed: %s", comm->rank, c->key.peer,
         name, strerror(err));
    return ncclSystemError;
  }
  c->map = p;
  c->map_bytes = bytes;
  c->conn.ctrl = p;
  c->conn.buff = (char*)p + WEFT_FIFO_CTRL_BYTES;
  __atomic_store_n(&c->conn.ctrl->attached, 1, __ATOMIC_RELEASE);
  return ncclSuccess;
}

/* A receiver that leaves before its sender has opened the segment: both ends set up a pair's
 * connections in one exchange, so the sender is about to open it; unlinking the name now
 * would fail the sender's setup ("cannot open … shared memory"). Wait a bounded while for it,
 * unless this end is aborting, the sender gave up on the connection or its process is gone. */
#define SHM_ATTACH_WAIT_MS 2000
static void wait_for_sender(struct ncclComm* comm, tconn* c) {
  if (!c->conn.ctrl || c->conn.is_send) return;
  int pid = comm->peers ? comm->peers[c->key.peer].pid : 0;
  uint64_t deadline = clock_ms() + SHM_ATTACH_WAIT_MS;
  weft_backoff bo = {0};
  while (!__atomic_load_n(&c->conn.ctrl->attached, __ATOMIC_ACQUIRE) &&
         !__atomic_load_n(&c->conn.ctrl->broken, __ATOMIC_ACQUIRE) &&
         !__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) && clock_ms() < deadline &&
         !(pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)) /* a dead sender opens nothing */
    backoff_wait(&bo);
}

void shm_close(struct ncclComm* comm, tconn* c) {
  if (c->shm_name[0]) wait_for_sender(comm, c); /* before this end marks the block broken */
  /* The peer may still wait on this connection (it failed, or this rank leaves early): tell it
   * through the shared control block, so its wait ends now with the reason. */
  if (c->connected && c->conn.ctrl) {
    int why = __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) ? WEFT_CONN_BROKEN_ABORT
                                                                   : WEFT_CONN_BROKEN_CLOSED;
    int none = 0;
    __atomic_compare_exchange_n(&c->conn.ctrl->broken, &none, why, 0, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
  }
  if (c->shm_name[0]) {
    shm_unlink(c->shm_name); /* ENOENT when the sender already did: expected */
    c->shm_name[0] = '\0';
  }
  if (c->map) munmap(c->map, c->map_bytes);
  c->map = NULL;
}
