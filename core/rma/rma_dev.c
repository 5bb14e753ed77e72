/* One-sided calls on a GPU communicator (device mode): the put copies straight into the peer's
 * window as mapped here (the zero-copy mapping of symmetric windows, transport_window.c: CUDA
 * IPC or the pointer itself, ranks sharing one GPU included), then a one-thread kernel adds one
 * to the peer's counter for this rank; a wait is a kernel that spins on this GPU's counters.
 * All of it is on the caller's stream, so it is captured in CUDA graphs and replays: the
 * signal adds one per replay and the wait consumes what it waited for, in device memory.
 *
 * The counters (one u64 per source rank) are device memory of this GPU, mapped by every peer
 * like a symmetric window, at the first symmetric window (rma_connect, collective). */
#include <stdlib.h>
#include <string.h>

#include "rma/rma_internal.h"
#include "transport/transport.h"
#include "util/check.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "device/device_exec.h"

static ncclResult_t cuda_failed(const struct ncclComm* comm, const char* what, cudaError_t e) {
  WARN("rank %d (cuda device %d): %s failed: %s", comm->rank, comm->cuda_dev, what,
       cudaGetErrorString(e));
  (void)cudaGetLastError();
  return ncclUnhandledCudaError;
}

/* Zeroed device memory of bytes on the comm's GPU (which is current). */
static ncclResult_t zeroed(const struct ncclComm* comm, size_t bytes, uint64_t** out) {
  void* p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) return cuda_failed(comm, "cudaMalloc (one-sided counters)", e);
  cudaStream_t s;
  e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess) {
    e = cudaMemsetAsync(p, 0, bytes, s);
    cudaError_t e2 = cudaStreamSynchronize(s);
    if (e == cudaSuccess) e = e2;
    cudaStreamDestroy(s);
  }
  if (e != cudaSuccess) {
    cudaFree(p);
    return cuda_failed(comm, "zeroing the one-sided counters", e);
  }
  *out = p;
  transport_gpu_persist((struct ncclComm*)comm, p, 1); /* ncclCommMemStats' Persist */
  return ncclSuccess;
}

ncclResult_t rma_dev_connect(struct weft_rma* r) {
  struct ncclComm* comm = r->comm;
  size_t bytes = (size_t)comm->nranks * sizeof(uint64_t);
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  cudaError_t e = cudaSetDevice(comm->cuda_dev);
  if (e != cudaSuccess) return cuda_failed(comm, "cudaSetDevice", e);
  ncclResult_t res = zeroed(comm, bytes, &r->dev_sig);
  if (res == ncclSuccess) res = zeroed(comm, bytes, &r->dev_consumed);
  /* Every rank takes part in the mapping, whatever it found: none is left waiting. */
  weft_window_map* m = NULL;
  ncclResult_t mres = transport_window_map(comm, r->dev_sig, bytes, &m);
  if (res == ncclSuccess) res = mres;
  r->sig_map = m;
  if (res == ncclSuccess && !m && comm->nranks > 1)
    snprintf(r->dev_why, sizeof r->dev_why,
             "the peers cannot reach this GPU's signal counters (NCCL_DEBUG=INFO "
             "NCCL_DEBUG_SUBSYS=REG says why; one-sided calls need every rank peer to peer, "
             "2 to %d ranks, WEFT_ZERO_COPY on)",
             WEFT_WINDOW_MAX_RANKS);
  if (saved >= 0) cudaSetDevice(saved);
  return res;
}

ncclResult_t rma_dev_put(struct weft_rma* r, const void* src, size_t bytes, int peer,
                         const weft_mem_reg* win, size_t offset, void* stream) {
  struct ncclComm* comm = r->comm;
  const char* fn = bytes ? "ncclPutSignal" : "ncclSignal";
  char* dst = NULL;
  uint64_t* slot;
  if (peer == comm->rank) {
    if (bytes) dst = (char*)win->buff + offset;
    slot = r->dev_sig + comm->rank;
  } else {
    if (!r->sig_map) {
      WARN("rank %d: %s to rank %d: %s", comm->rank, fn, peer, r->dev_why);
      return ncclInvalidUsage;
    }
    if (bytes) {
      if (!win->zc) {
        WARN("rank %d: %s: window %p is not mapped by every rank, so rank %d's copy cannot be "
             "written from here (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=REG says why)",
             comm->rank, fn, win->buff, peer);
        return ncclInvalidUsage;
      }
      if (offset + bytes > transport_window_bytes(win->zc)) {
        WARN("rank %d: %s: %zu bytes at offset %zu run past rank %d's copy of window %p (%zu "
             "bytes, the smallest any rank registered)",
             comm->rank, fn, bytes, offset, peer, win->buff, transport_window_bytes(win->zc));
        return ncclInvalidArgument;
      }
      dst = transport_window_peer(win->zc, peer) + offset;
    }
    slot = (uint64_t*)transport_window_peer(r->sig_map, peer) + comm->rank;
  }
  return device_exec_rma_put(comm, dst, src, bytes, slot, stream);
}

ncclResult_t rma_dev_wait(struct weft_rma* r, int n, const int* peers, const int* counts,
                          void* stream) {
  struct ncclComm* comm = r->comm;
  int* up = malloc((size_t)n * sizeof *up);
  uint64_t* uc = malloc((size_t)n * sizeof *uc);
  if (!up || !uc) {
    free(up);
    free(uc);
    WARN("rank %d: ncclWaitSignal: out of memory for %d descriptors", comm->rank, n);
    return ncclSystemError;
  }
  int m = 0; /* distinct peers, their counts summed */
  for (int i = 0; i < n; i++) {
    int k = 0;
    while (k < m && up[k] != peers[i]) k++;
    if (k == m) {
      up[m] = peers[i];
      uc[m++] = 0;
    }
    uc[k] += (uint64_t)counts[i];
  }
  ncclResult_t res = ncclSuccess;
  for (int k = 0; k < m && res == ncclSuccess; k++)
    if (up[k] != comm->rank && !r->sig_map) {
      WARN("rank %d: ncclWaitSignal for rank %d: %s", comm->rank, up[k], r->dev_why);
      res = ncclInvalidUsage;
    }
  if (res == ncclSuccess)
    res = device_exec_rma_wait(comm, r->dev_sig, r->dev_consumed, m, up, uc, stream);
  free(up);
  free(uc);
  return res;
}

void rma_dev_fini(struct weft_rma* r) {
  struct ncclComm* comm = r->comm;
  if (!r->dev_sig && !r->dev_consumed && !r->sig_map) return;
  transport_window_unmap(comm, r->sig_map);
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  if (cudaSetDevice(comm->cuda_dev) == cudaSuccess) {
    transport_gpu_persist(comm, r->dev_sig, -1);
    transport_gpu_persist(comm, r->dev_consumed, -1);
    if (r->dev_sig) cudaFree(r->dev_sig);
    if (r->dev_consumed) cudaFree(r->dev_consumed);
  }
  (void)cudaGetLastError();
  if (saved >= 0) cudaSetDevice(saved);
}

#else /* no CUDA: no communicator is ever in device mode */

ncclResult_t rma_dev_connect(struct weft_rma* r) {
  WARN("rank %d: one-sided calls on a GPU communicator need weft built with CUDA", r->comm->rank);
  return ncclInternalError;
}
ncclResult_t rma_dev_put(struct weft_rma* r, const void* src, size_t bytes, int peer,
                         const weft_mem_reg* win, size_t offset, void* stream) {
  (void)src, (void)bytes, (void)peer, (void)win, (void)offset, (void)stream;
  return rma_dev_connect(r);
}
ncclResult_t rma_dev_wait(struct weft_rma* r, int n, const int* peers, const int* counts,
                          void* stream) {
  (void)n, (void)peers, (void)counts, (void)stream;
  return rma_dev_connect(r);
}
void rma_dev_fini(struct weft_rma* r) { (void)r; }

#endif
