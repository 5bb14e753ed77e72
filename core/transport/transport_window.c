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

/* ---- IPC mappings, shared within the process ----
 * The driver maps an exported allocation once per process: two ranks of this process that
 * open the same peer allocation share one mapping, released when the last lets go. */
typedef struct ipc_open {
  uint8_t handle[WEFT_IPC_HANDLE_BYTES];
  int dev;
  void* base;
  int refs;
  struct ipc_open* next;
} ipc_open;
static pthread_mutex_t ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static ipc_open* ipc_list;

static cudaError_t ipc_acquire(const uint8_t* handle, int dev, void** base) {
  pthread_mutex_lock(&ipc_lock);
  for (ipc_open* o = ipc_list; o; o = o->next)
    if (o->dev == dev && memcmp(o->handle, handle, WEFT_IPC_HANDLE_BYTES) == 0) {
      o->refs++;
      *base = o->base;
      pthread_mutex_unlock(&ipc_lock);
      return cudaSuccess;
    }
  cudaIpcMemHandle_t h;
  memcpy(&h, handle, sizeof h);
  void* p = NULL;
  cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
  ipc_open* o = e == cudaSuccess ? calloc(1, sizeof *o) : NULL;
  if (e == cudaSuccess && !o) {
    cudaIpcCloseMemHandle(p);
    e = cudaErrorMemoryAllocation;
  }
  if (o) {
    memcpy(o->handle, handle, WEFT_IPC_HANDLE_BYTES);
    o->dev = dev;
    o->base = p;
    o->refs = 1;
    o->next = ipc_list;
    ipc_list = o;
    *base = p;
  }
  pthread_mutex_unlock(&ipc_lock);
  return e;
}

static void ipc_release(struct ncclComm* comm, void* base) {
  pthread_mutex_lock(&ipc_lock);
  for (ipc_open** pp = &ipc_list; *pp; pp = &(*pp)->next) {
    ipc_open* o = *pp;
    if (o->base != base) continue;
    if (--o->refs == 0) {
      *pp = o->next;
      cudaError_t e = cudaIpcCloseMemHandle(o->base);
      if (e != cudaSuccess) devmem_cuda_fail(comm, NULL, "cudaIpcCloseMemHandle of a window", e);
      free(o);
    }
    break;
  }
  pthread_mutex_unlock(&ipc_lock);
}

/* How a peer in another process can reach [buff, buff + size): an IPC handle of the cudaMalloc
 * allocation holding it. 0 with why set when there is none. */
static int describe_ipc(void* buff, win_info* me) {
  uintptr_t base = 0;
  size_t len = 0;
  if (!cuda_alloc_range(buff, &base, &len)) {
    snprintf(me->why, sizeof me->why, "its allocation's extent is unknown");
    return 0;
  }
  cudaIpcMemHandle_t h;
  cudaError_t e = cudaIpcGetMemHandle(&h, (void*)base);
  if (e != cudaSuccess) {
    cudaGetLastError();
    /* cuMem (ncclMemAlloc) memory has no IPC handle: it is shared by file descriptor. */
    snprintf(me->why, sizeof me->why, "cudaIpcGetMemHandle refused it (%s)", cudaGetErrorName(e));
    return 0;
  }
  memcpy(me->handle, &h, sizeof h);
  me->offset = (uint64_t)((uintptr_t)buff - (uintptr_t)base);
  return 1;
}

/* ---- cuMem allocations (ncclMemAlloc), shared by file descriptor ---- */

static int describe_fd(void* buff, win_info* me) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  const weft_cuda_drv* d = cuda_drv();
  uintptr_t base = 0;
  size_t len = 0;
  CUmemGenericAllocationHandle h;
  int fd = -1;
  if (!d->retain_handle || !d->export_handle || !d->release ||
      !cuda_alloc_range(buff, &base, &len))
    return 0;
  if (d->retain_handle(&h, buff) != CUDA_SUCCESS) return 0;
  CUresult r = d->export_handle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  d->release(h);
  if (r != CUDA_SUCCESS) return 0;
  me->fd = fd;
  me->pid = (int32_t)getpid();
  me->offset = (uint64_t)((uintptr_t)buff - (uintptr_t)base);
  me->alloc = len;
  return 1;
#else
  (void)buff, (void)me;
  return 0;
#endif
}

/* Map rank q's cuMem allocation through a copy of its descriptor; 0 with why set. */
static int import_fd(struct ncclComm* comm, weft_window_map* m, int q, const win_info* in,
                     char* why, size_t whylen) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  const weft_cuda_drv* d = cuda_drv();
  if (!d->import_handle || !d->release || !d->reserve || !d->map || !d->set_access ||
      !d->address_free || !d->unmap) {
    snprintf(why, whylen, "the CUDA driver lacks the cuMem import calls");
    return 0;
  }
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)in->pid, 0);
  int fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, in->fd, 0);
  if (pidfd >= 0) close(pidfd);
  if (fd < 0) {
    snprintf(why, whylen, "taking rank %d's cuMem descriptor (pidfd_getfd) failed: %s", q,
             strerror(errno));
    return 0;
  }
  CUmemGenericAllocationHandle h;
  CUresult r =
      d->import_handle(&h, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(fd);
  if (r != CUDA_SUCCESS) {
    snprintf(why, whylen, "cuMemImportFromShareableHandle of rank %d's window: error %d", q,
             (int)r);
    return 0;
  }
  CUdeviceptr va = 0;
  r = d->reserve(&va, in->alloc, 0, 0, 0);
  if (r == CUDA_SUCCESS) {
    r = d->map(va, in->alloc, 0, h, 0);
    if (r != CUDA_SUCCESS) d->address_free(va, in->alloc);
  }
  d->release(h); /* the mapping holds the allocation from here on */
  if (r == CUDA_SUCCESS) {
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = comm->cuda_dev;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = d->set_access(va, in->alloc, &a, 1);
    if (r != CUDA_SUCCESS) {
      d->unmap(va, in->alloc);
      d->address_free(va, in->alloc);
    }
  }
  if (r != CUDA_SUCCESS) {
    snprintf(why, whylen, "mapping rank %d's cuMem window: CUDA driver error %d", q, (int)r);
    return 0;
  }
  m->opened[q] = (void*)(uintptr_t)va;
  m->mapped[q] = in->alloc;
  m->host_peers[q] = (char*)(uintptr_t)va + in->offset;
  return 1;
#else
  (void)comm, (void)m, (void)in;
  snprintf(why, whylen, "rank %d's cuMem window needs pidfd_getfd (Linux 5.6)", q);
  return 0;
#endif
}

static void unmap_fd(void* va, uint64_t bytes) {
  const weft_cuda_drv* d = cuda_drv();
  if (d->unmap) d->unmap((CUdeviceptr)(uintptr_t)va, bytes);
  if (d->address_free) d->address_free((CUdeviceptr)(uintptr_t)va, bytes);
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
  if (describe_ipc(buff, me))
    me->how = WIN_IPC;
  else if (describe_fd(buff, me))
    me->how = WIN_FD; /* why still says why IPC could not */
  else
    me->how = WIN_NONE;
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
  cudaError_t e = ipc_acquire(in->handle, comm->cuda_dev, &base);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(why, whylen, "cudaIpcOpenMemHandle of rank %d's window: %s", q, cudaGetErrorName(e));
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
      unmap_fd(m->opened[q], m->mapped[q]);
    else
      ipc_release(comm, m->opened[q]);
  }
  if (m->export_fd >= 0) close(m->export_fd);
  free(m->mapped);
  if (m->dev_peers) {
    cudaError_t e = cudaFree((void*)m->dev_peers);
    if (e != cudaSuccess) devmem_cuda_fail(comm, NULL, "cudaFree of a window's table", e);
  }
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
    void *d = NULL, *sp = NULL;
    res = devmem_stream(comm, &sp);
    cudaError_t e = cudaSuccess;
    if (res == ncclSuccess) e = cudaMalloc(&d, (size_t)n * sizeof(char*));
    if (res == ncclSuccess && e == cudaSuccess) {
      m->dev_peers = d;
      /* On the private stream: a plain copy would queue behind (blocking) user streams. */
      e = cudaMemcpyAsync(d, m->host_peers, (size_t)n * sizeof(char*), cudaMemcpyHostToDevice,
                          (cudaStream_t)sp);
      if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)sp);
    }
    if (res == ncclSuccess && e != cudaSuccess)
      res = devmem_cuda_fail(comm, NULL, "copying a window's table", e);
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
