/* Zero-copy windows (device mode): every rank's buffer of one ncclCommWindowRegister, mapped
 * into this process, so the direct algorithms' kernels read peers' user memory in place
 * (algo_direct.h). Built once, collectively, at registration:
 *
 *  1. each rank says how a peer can reach its buffer: the address itself (a peer in the same
 *     process), a CUDA IPC handle of the allocation holding it plus the offset (cudaMalloc
 *     memory, another process), a file descriptor of the cuMem allocation holding it
 *     (ncclMemAlloc memory, another process: the peer takes a copy of the descriptor with
 *     pidfd_getfd, which needs Linux 5.6 and ptrace rights over the owner), or not at all
 *     (host memory, zero copy turned off, a peer reached through shm or net);
 *  2. the descriptions are gathered over bootstrap; each rank maps every peer's buffer
 *     (IPC handles opened once per process, whoever asks again shares the mapping);
 *  3. a second gather tells every rank whether all ranks mapped all peers. Only then is the
 *     window zero copy, on every rank alike; otherwise the data path copies as before and
 *     NCCL_DEBUG=INFO says why.
 * The mapped addresses go to the GPU once (an array of nranks pointers); a captured graph that
 * uses the window reads them on every replay, so the window must outlive the graphs that use
 * it (as in NCCL). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "transport/transport.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/param.h"

enum { WIN_NONE = 0, WIN_PTR = 1, WIN_IPC = 2, WIN_FD = 3 };

typedef struct {
  int32_t how;       /* WIN_* */
  int32_t dev;       /* the owner's CUDA device (WIN_PTR: as this process numbers them) */
  uint64_t ptr;      /* WIN_PTR: the buffer's address */
  uint64_t offset;   /* WIN_IPC, WIN_FD: the buffer's offset in its allocation */
  uint64_t alloc;    /* WIN_FD: the allocation's bytes */
  int32_t pid, fd;   /* WIN_FD: the owner's process and its descriptor of the allocation */
  uint64_t size;     /* bytes registered */
  uint8_t handle[WEFT_IPC_HANDLE_BYTES];
  char why[80];      /* WIN_NONE: the reason, for the others' log */
} win_info;

struct weft_window_map {
  int nranks;
  size_t bytes;       /* the smallest registration of any rank: the extent zero copy may use */
  char** host_peers;  /* rank q's buffer as mapped here (this rank's own at [rank]) */
  void** opened;      /* per rank: the IPC mapping to release (NULL: none) */
  uint64_t* mapped;   /* per rank: the bytes of a cuMem mapping at opened[q] (0: IPC) */
  int export_fd;      /* this rank's exported descriptor while peers take it (-1: none) */
  char* const* dev_peers; /* host_peers, in GPU memory for the kernels */
};

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "topo/cuda_entry.h"

/* Map rank q's cuMem allocation through a copy of its descriptor; 0 with why set. */
static int import_fd(struct ncclComm* comm, weft_window_map* m, int q, const win_info* in,
                     char* why, size_t whylen) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)in->pid, 0);
  int fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, in->fd, 0);
  if (pidfd >= 0) close(pidfd);
  if (fd < 0) {
    snprintf(why, whylen, "taking rank %d's cuMem descriptor (pidfd_getfd) failed: %s", q,
             strerror(errno));
    return 0;
  }
  void* va = NULL;
  char what[96];
  int ok = ipcmap_map_fd(comm->cuda_dev, fd, in->alloc, &va, what, sizeof what);
  close(fd);
  if (!ok) {
    snprintf(why, whylen, "rank %d's cuMem window: %s", q, what);
    return 0;
  }
  m->opened[q] = va;
  m->mapped[q] = in->alloc;
  m->host_peers[q] = (char*)va + in->offset;
  return 1;
#else
  (void)comm, (void)m, (void)in;
  snprintf(why, whylen, "rank %d's cuMem window needs pidfd_getfd (Linux 5.6)", q);
  return 0;
#endif
}

static void describe(struct ncclComm* comm, void* buff, size_t size, win_info* me) {
  memset(me, 0, sizeof *me);
  me->fd = -1;
  me->size = size;
  me->dev = comm->cuda_dev;
  me->ptr = (uint64_t)(uintptr_t)buff;
  if (!param_int(WEFT_PARAM_ZERO_COPY)) {
    snprintf(me->why, sizeof me->why, "WEFT_ZERO_COPY=0");
    return;
  }
  if (comm->nranks < 2 || comm->nranks > WEFT_WINDOW_MAX_RANKS) {
    snprintf(me->why, sizeof me->why, "zero copy runs on 2 to %d ranks",
             WEFT_WINDOW_MAX_RANKS);
    return;
  }
  if (!transport_all_p2p(comm)) {
    snprintf(me->why, sizeof me->why, "a peer is not reached peer to peer");
    return;
  }
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, buff) != cudaSuccess || a.type != cudaMemoryTypeDevice) {
    cudaGetLastError();
    snprintf(me->why, sizeof me->why, "it is not GPU memory");
    return;
  }
  me->how = WIN_PTR;
  int other_process = 0;
  for (int q = 0; q < comm->nranks; q++)
    if (q != comm->rank && !p2p_same_process(comm, q)) other_process = 1;
  if (!other_process) return;
  uint64_t alloc = 0;
  int how = ipcmap_describe(buff, me->handle, &me->offset, &me->fd, &alloc, me->why,
                            sizeof me->why);
  me->how = how == IPCMAP_IPC ? WIN_IPC : how == IPCMAP_FD ? WIN_FD : WIN_NONE;
  if (how == IPCMAP_FD) { /* why still says why IPC could not */
    me->pid = (int32_t)getpid();
    me->alloc = alloc;
  }
}

/* Map rank q's buffer as described; 0 with why set when it cannot be. */
static int map_peer(struct ncclComm* comm, weft_window_map* m, int q, const win_info* in,
                    char* why, size_t whylen) {
  if (in->how == WIN_NONE) {
    snprintf(why, whylen, "rank %d: %s", q, in->why);
    return 0;
  }
  if (p2p_same_process(comm, q)) {
    if (in->dev != comm->cuda_dev && p2p_enable_peer_access(comm, in->dev) != ncclSuccess) {
      snprintf(why, whylen, "peer access to device %d failed", in->dev);
      return 0;
    }
    m->host_peers[q] = (char*)(uintptr_t)in->ptr;
    return 1;
  }
  if (in->how == WIN_FD) return import_fd(comm, m, q, in, why, whylen);
  if (in->how != WIN_IPC) {
    snprintf(why, whylen, "rank %d (another process) offered no IPC handle", q);
    return 0;
  }
  void* base = NULL;
  int e = regserve_acquire(comm, in->handle, &base);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(why, whylen, "cudaIpcOpenMemHandle of rank %d's window: %s", q,
             ipcmap_acquire_error(e));
    return 0;
  }
  m->opened[q] = base;
  m->host_peers[q] = (char*)base + in->offset;
  return 1;
}

static void release(struct ncclComm* comm, weft_window_map* m) {
  if (!m) return;
  for (int q = 0; q < m->nranks; q++) {
    if (!m->opened || !m->opened[q]) continue;
    if (m->mapped && m->mapped[q])
      ipcmap_unmap_fd(m->opened[q], m->mapped[q]);
    else
      ipcmap_release(comm, NULL, m->opened[q]);
  }
  if (m->export_fd >= 0) close(m->export_fd);
  free(m->mapped);
  devmem_free(comm, (void*)m->dev_peers, "a window's table");
  free(m->host_peers);
  free(m->opened);
  free(m);
}

static ncclResult_t build(struct ncclComm* comm, void* buff, size_t size, weft_window_map** out) {
  int n = comm->nranks, r = comm->rank;
  win_info* all = calloc((size_t)n, sizeof *all);
  weft_window_map* m = calloc(1, sizeof *m);
  int32_t* oks = calloc((size_t)n, sizeof *oks);
  ncclResult_t res = ncclSuccess;
  if (m) {
    m->nranks = n;
    m->export_fd = -1;
    m->host_peers = calloc((size_t)n, sizeof *m->host_peers);
    m->opened = calloc((size_t)n, sizeof *m->opened);
    m->mapped = calloc((size_t)n, sizeof *m->mapped);
  }
  int ok = all && m && oks && m->host_peers && m->opened && m->mapped;
  char why[160] = "out of memory";
  /* Every rank takes part in both gathers whatever it found, so none is left waiting. */
  win_info scratch;
  win_info* mine = all ? &all[r] : &scratch;
  describe(comm, buff, size, mine);
  if (m) m->export_fd = mine->fd; /* open until every peer took its copy (second gather) */
  else if (mine->fd >= 0) close(mine->fd);
  if (!ok) mine->how = WIN_NONE;
  if (all) {
    res = bootstrap_allgather(comm->bootstrap, all, sizeof *all);
  } else {
    WARN("rank %d: out of memory describing a window", r);
    res = ncclSystemError;
  }
  if (res == ncclSuccess && ok) {
    m->bytes = size;
    m->host_peers[r] = buff;
    for (int q = 0; q < n && ok; q++) {
      if (all[q].size < m->bytes) m->bytes = all[q].size;
      if (q != r) ok = map_peer(comm, m, q, &all[q], why, sizeof why);
    }
    if (all[r].how == WIN_NONE) {
      ok = 0;
      snprintf(why, sizeof why, "%s", all[r].why);
    }
  }
  if (res == ncclSuccess) {
    if (oks) {
      oks[r] = ok;
      res = bootstrap_allgather(comm->bootstrap, oks, sizeof *oks);
      for (int q = 0; q < n && res == ncclSuccess; q++)
        if (!oks[q] && ok) {
          ok = 0;
          snprintf(why, sizeof why, "rank %d could not map every peer's window", q);
        }
    } else {
      res = ncclSystemError;
    }
  }
  if (m && m->export_fd >= 0) { /* every peer has taken its copy by now */
    close(m->export_fd);
    m->export_fd = -1;
  }
  if (res == ncclSuccess && ok) {
    void* d = NULL;
    res = devmem_upload(comm, m->host_peers, (size_t)n * sizeof(char*), &d, "a window's table");
    m->dev_peers = d;
  }
  if (res == ncclSuccess && ok) {
    INFO(NCCL_REG, "rank %d: window %p (%zu bytes) is zero copy: %d ranks mapped, %zu bytes each",
         r, buff, size, n, m->bytes);
    *out = m;
  } else {
    if (res == ncclSuccess)
      INFO(NCCL_REG, "rank %d: window %p (%zu bytes) copies through the FIFOs: %s", r, buff, size,
           why);
    release(comm, m);
  }
  free(all);
  free(oks);
  return res;
}

ncclResult_t transport_window_map(struct ncclComm* comm, void* buff, size_t size,
                                  weft_window_map** out) {
  *out = NULL;
  if (comm->mode != WEFT_MODE_DEVICE) return ncclSuccess;
  int saved;
  WEFT_CHECK(devmem_enter(comm, &saved));
  ncclResult_t res = build(comm, buff, size, out);
  devmem_leave(comm, saved);
  return res;
}

void transport_window_unmap(struct ncclComm* comm, weft_window_map* m) {
  if (!m) return;
  int saved;
  if (devmem_enter(comm, &saved) != ncclSuccess) return;
  release(comm, m);
  devmem_leave(comm, saved);
}

#else /* !WEFT_HAVE_CUDA: host mode only, where windows are never zero copy. */

ncclResult_t transport_window_map(struct ncclComm* comm, void* buff, size_t size,
                                  weft_window_map** out) {
  (void)comm, (void)buff, (void)size;
  *out = NULL;
  return ncclSuccess;
}

void transport_window_unmap(struct ncclComm* comm, weft_window_map* m) { (void)comm, (void)m; }

#endif

char* const* transport_window_peers(const weft_window_map* m) { return m->dev_peers; }

size_t transport_window_bytes(const weft_window_map* m) { return m->bytes; }

char* transport_window_peer(const weft_window_map* m, int q) { return m->host_peers[q]; }
