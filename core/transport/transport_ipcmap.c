/* Sharing a GPU buffer with another process (device mode), for zero-copy windows
 * (transport_window.c), registered buffers (transport_regview.c) and P2P FIFOs
 * (transport_p2p.c, which only open CUDA IPC handles):
 *  - cudaMalloc memory: a CUDA IPC handle of the allocation holding the buffer, plus the
 *    buffer's offset in it. The driver maps an exported allocation once per process, so two
 *    ranks of this process that open the same peer allocation share one mapping (counted here),
 *    released when the last lets go;
 *  - cuMem memory (ncclMemAlloc): a POSIX file descriptor of the allocation, mapped whole into
 *    a reserved range and made readable and writable by the importing device. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "comm/comm.h"
#include "transport/transport_internal.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "topo/cuda_entry.h"

typedef struct ipc_open {
  uint8_t handle[WEFT_IPC_HANDLE_BYTES];
  int dev;
  void* base;
  int refs;
  int closing; /* refs reached 0: cudaIpcCloseMemHandle runs, outside the lock */
  struct ipc_open* next;
} ipc_open;
static pthread_mutex_t ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static ipc_open* ipc_list;

int ipcmap_acquire(const uint8_t* handle, int dev, void** base) {
  pthread_mutex_lock(&ipc_lock);
  for (ipc_open* o = ipc_list; o; o = o->next)
    if (o->dev == dev && memcmp(o->handle, handle, WEFT_IPC_HANDLE_BYTES) == 0) {
      if (o->closing) { /* opening it again would fail until the close ends: not waited for */
        pthread_mutex_unlock(&ipc_lock);
        return IPCMAP_CLOSING;
      }
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
  return (int)e;
}

int ipcmap_still_mapped(int e) { return e == cudaErrorAlreadyMapped || e == IPCMAP_CLOSING; }

const char* ipcmap_acquire_error(int e) {
  return e == IPCMAP_CLOSING ? "its earlier mapping is still being closed"
                             : cudaGetErrorName((cudaError_t)e);
}

/* The close may wait until this process's kernels end, and they may wait for a peer whose
 * request waits for an acquire: the lock is not held across it. */
void ipcmap_release(struct ncclComm* comm, const tconn* c, void* base) {
  pthread_mutex_lock(&ipc_lock);
  ipc_open* o = ipc_list;
  while (o && o->base != base) o = o->next;
  int close_it = o && !o->closing && --o->refs == 0;
  if (close_it) o->closing = 1;
  pthread_mutex_unlock(&ipc_lock);
  if (!close_it) return;
  cudaError_t e = cudaIpcCloseMemHandle(base);
  if (e != cudaSuccess)
    devmem_cuda_fail(comm, c, "cudaIpcCloseMemHandle of a peer's buffer", e);
  pthread_mutex_lock(&ipc_lock);
  for (ipc_open** pp = &ipc_list; *pp; pp = &(*pp)->next)
    if (*pp == o) {
      *pp = o->next;
      break;
    }
  pthread_mutex_unlock(&ipc_lock);
  free(o);
}

int ipcmap_describe_ipc(void* buff, uint8_t* handle, uint64_t* offset, char* why,
                        size_t whylen) {
  uintptr_t base = 0;
  size_t len = 0;
  if (!cuda_alloc_range(buff, &base, &len)) {
    snprintf(why, whylen, "its allocation's extent is unknown");
    return 0;
  }
  cudaIpcMemHandle_t h;
  cudaError_t e = cudaIpcGetMemHandle(&h, (void*)base);
  if (e != cudaSuccess) {
    cudaGetLastError();
    /* cuMem (ncclMemAlloc) memory has no IPC handle: it is shared by file descriptor. */
    snprintf(why, whylen, "cudaIpcGetMemHandle refused it (%s)", cudaGetErrorName(e));
    return 0;
  }
  memcpy(handle, &h, sizeof h);
  *offset = (uint64_t)((uintptr_t)buff - (uintptr_t)base);
  return 1;
}

int ipcmap_export_fd(void* buff, int* fd, uint64_t* offset, uint64_t* alloc, char* why,
                     size_t whylen) {
  const weft_cuda_drv* d = cuda_drv();
  uintptr_t base = 0;
  size_t len = 0;
  CUmemGenericAllocationHandle h;
  *fd = -1;
  if (!d->retain_handle || !d->export_handle || !d->release) {
    snprintf(why, whylen, "the CUDA driver lacks the cuMem export calls");
    return 0;
  }
  if (!cuda_alloc_range(buff, &base, &len)) {
    snprintf(why, whylen, "cuMemGetAddressRange does not know %p", buff);
    return 0;
  }
  /* Each step named: cudaMalloc memory stops at the retain, cuMem memory created without a
   * POSIX fd handle type (ncclMemAlloc falls back to that where a container refuses it) at the
   * export. */
  CUresult r = d->retain_handle(&h, buff);
  if (r != CUDA_SUCCESS) {
    snprintf(why, whylen, "cuMemRetainAllocationHandle: %s (not cuMem memory: cudaMalloc?)",
             cuda_drv_error(r));
    return 0;
  }
  r = d->export_handle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  d->release(h);
  if (r != CUDA_SUCCESS) {
    *fd = -1;
    snprintf(why, whylen, "cuMemExportToShareableHandle (POSIX fd): %s", cuda_drv_error(r));
    return 0;
  }
  *offset = (uint64_t)((uintptr_t)buff - (uintptr_t)base);
  *alloc = len;
  return 1;
}

int ipcmap_describe(void* buff, uint8_t* handle, uint64_t* offset, int* fd, uint64_t* alloc,
                    char* why, size_t whylen) {
  *fd = -1;
  if (ipcmap_describe_ipc(buff, handle, offset, why, whylen)) return IPCMAP_IPC;
  char fd_why[128];
  if (ipcmap_export_fd(buff, fd, offset, alloc, fd_why, sizeof fd_why)) return IPCMAP_FD;
  size_t used = strlen(why);
  if (used < whylen) snprintf(why + used, whylen - used, "; %s", fd_why);
  return 0;
}

int ipcmap_map_fd(int dev, int fd, uint64_t alloc, void** va_out, char* why, size_t whylen) {
  const weft_cuda_drv* d = cuda_drv();
  if (!d->import_handle || !d->release || !d->reserve || !d->map || !d->set_access ||
      !d->address_free || !d->unmap) {
    snprintf(why, whylen, "the CUDA driver lacks the cuMem import calls");
    return 0;
  }
  CUmemGenericAllocationHandle h;
  CUresult r =
      d->import_handle(&h, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (r != CUDA_SUCCESS) {
    snprintf(why, whylen, "cuMemImportFromShareableHandle: CUDA driver error %d", (int)r);
    return 0;
  }
  CUdeviceptr va = 0;
  r = d->reserve(&va, alloc, 0, 0, 0);
  if (r == CUDA_SUCCESS) {
    r = d->map(va, alloc, 0, h, 0);
    if (r != CUDA_SUCCESS) d->address_free(va, alloc);
  }
  d->release(h); /* the mapping holds the allocation from here on */
  if (r == CUDA_SUCCESS) {
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = dev;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = d->set_access(va, alloc, &a, 1);
    if (r != CUDA_SUCCESS) {
      d->unmap(va, alloc);
      d->address_free(va, alloc);
    }
  }
  if (r != CUDA_SUCCESS) {
    snprintf(why, whylen, "mapping a cuMem allocation: CUDA driver error %d", (int)r);
    return 0;
  }
  *va_out = (void*)(uintptr_t)va;
  return 1;
}

int ipcmap_take_fd(int pid, int fd, char* why, size_t whylen) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
  int mine = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  if (mine < 0)
    snprintf(why, whylen, "taking descriptor %d of process %d (%s) failed: %s", fd, pid,
             pidfd < 0 ? "pidfd_open" : "pidfd_getfd", strerror(errno));
  if (pidfd >= 0) close(pidfd);
  return mine;
#else
  (void)pid;
  (void)fd;
  snprintf(why, whylen, "taking another process's descriptor needs pidfd_getfd (Linux 5.6)");
  return -1;
#endif
}

/* CAP_SYS_PTRACE in this process's effective set (/proc/self/status). */
static int has_cap_sys_ptrace(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long caps = 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    found = sscanf(line, "CapEff: %llx", &caps) == 1;
  fclose(f);
  return found && (caps >> 19) & 1; /* CAP_SYS_PTRACE is capability 19 */
}

int ipcmap_can_take_fds(char* why, size_t whylen) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  /* The calls themselves (kernel 5.6, a seccomp filter may refuse them), on this process. */
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)getpid(), 0);
  int copy = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, pidfd, 0);
  int err = errno;
  if (copy >= 0) close(copy);
  if (pidfd >= 0) close(pidfd);
  if (copy < 0) {
    snprintf(why, whylen, "%s is refused here: %s", pidfd < 0 ? "pidfd_open" : "pidfd_getfd",
             strerror(err));
    return 0;
  }
  /* Another process of this user: Yama's ptrace_scope 1 and 2 allow it only with
   * CAP_SYS_PTRACE (1 also to an ancestor, which peers are not), 3 never. */
  int scope = 0;
  FILE* f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
  if (f) {
    if (fscanf(f, "%d", &scope) != 1) scope = 0;
    fclose(f);
  }
  if (scope == 0 || (scope < 3 && has_cap_sys_ptrace())) return 1;
  snprintf(why, whylen, "kernel.yama.ptrace_scope = %d%s", scope,
           scope < 3 ? " without CAP_SYS_PTRACE" : "");
  return 0;
#else
  snprintf(why, whylen, "this weft was built without pidfd_getfd (Linux 5.6)");
  return 0;
#endif
}

void ipcmap_unmap_fd(void* va, uint64_t bytes) {
  const weft_cuda_drv* d = cuda_drv();
  if (d->unmap) d->unmap((CUdeviceptr)(uintptr_t)va, bytes);
  if (d->address_free) d->address_free((CUdeviceptr)(uintptr_t)va, bytes);
}

#endif
