/* The device side of windows (device mode): what kernels built against nccl_device.h read.
 *
 * Every window of a device communicator has, in GPU memory of the communicator's device, NCCL's
 * device window (ncclWindow_vidmem, always in the 2.32 layout: a superset of 2.30's,
 * abi/nccl_devcomm.h) and the int32 per world rank its lsaPeerDelta4G points to. The address
 * of that device window is the ncclWindow_t ncclCommWindowRegister hands out, as in NCCL.
 * A window LSA mapped by transport/ (transport_lsa.c) describes the flat mapping; any other
 * (a team of one, cudaMalloc memory, a non-symmetric window) describes only this rank's
 * buffer: lsaFlatBase is the buffer, stride4G 0, every other rank's delta invalid.
 *
 * The communicator's window table (ncclDevComm.windowTable, what ncclFindWindow walks) lists
 * every window with its device window: blocks of 32 entries linked by `next`, rebuilt and
 * uploaded whole at every registration and deregistration; blocks are only added, so a table
 * address a device communicator holds stays valid until the communicator is destroyed.
 *
 * Uploads go through a stream of their own that does not wait for other streams: a window
 * may be registered while kernels of this process, waiting for a peer driven by this same
 * thread, still run on the legacy stream. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "gin/gin_comm.h"
#include "nccl_devcomm.h"
#include "transport/transport.h"
#include "util/check.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

struct weft_devapi {
  void** blocks; /* device: ncclDevWindowTable_v2_30_t each, linked in this order */
  int nblocks;
};

static ncclResult_t cuda_fail(const char* what, struct ncclComm* comm, cudaError_t e) {
  WARN("rank %d: %s: %s", comm->rank, what, cudaGetErrorString(e));
  return ncclUnhandledCudaError;
}

/* Run with comm's device current; restores the caller's. */
static ncclResult_t enter(struct ncclComm* comm, int* saved) {
  cudaError_t e = cudaGetDevice(saved);
  if (e == cudaSuccess) e = cudaSetDevice(comm->cuda_dev);
  return e == cudaSuccess ? ncclSuccess : cuda_fail("selecting the device", comm, e);
}

static void leave(int saved) { (void)cudaSetDevice(saved); }

/* Copy bytes to dst (GPU memory) and wait for that copy only. */
static ncclResult_t upload(struct ncclComm* comm, void* dst, const void* src, size_t bytes) {
  cudaStream_t s;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return cuda_fail("a stream for device-API uploads", comm, e);
  e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  return e == cudaSuccess ? ncclSuccess : cuda_fail("uploading a device window", comm, e);
}

ncclResult_t api_devwin_fill(struct ncclComm* comm, weft_mem_reg* r) {
  int n = comm->nranks, lsa_size, lsa_rank;
  transport_lsa_team(comm, &lsa_size, &lsa_rank);
  ncclWindowVidmem_v2_32_t w;
  memset(&w, 0, sizeof w);
  int32_t* delta = malloc((size_t)n * sizeof *delta);
  if (!delta) {
    WARN("rank %d: out of memory filling a device window", comm->rank);
    return ncclSystemError;
  }
  for (int q = 0; q < n; q++) delta[q] = NCCL_DEVCOMM_V2_32_PEER_DELTA4G_INVALID;
  w.winHost = (uintptr_t)r;
  w.lsaRank = lsa_rank;
  w.worldRank = comm->rank;
  w.winFlags = (uint32_t)r->win_flags;
  w.lsaPeerDelta4G = (uintptr_t)r->dev_delta;
  /* The proxy GIN type's handle (gin/gin_comm.h; 0 without GIN): the window is registered
   * whole, so ginOffset4K stays 0; 2.30 kernels read this word as ginWins[0]. */
  w.ginWinsDefaultBackend[0] = (uintptr_t)gin_comm_window_handle(comm, r);
  if (w.ginWinsDefaultBackend[0]) w.numSegments = 1; /* one registration: the whole window */
  if (r->lsa) {
    uint32_t stride4g = (uint32_t)(transport_window_lsa_stride(r->lsa) / NCCL_DEVCOMM_4G);
    w.lsaFlatBase = (uintptr_t)transport_window_lsa_base(r->lsa);
    w.stride4G = stride4g;
    /* The team is this rank's block of consecutive world ranks. */
    for (int i = 0; i < lsa_size; i++)
      delta[comm->rank - lsa_rank + i] = (int32_t)((uint32_t)i * stride4g);
  } else {
    /* Only this rank's buffer: reached as LSA rank lsa_rank with stride 0. */
    w.lsaFlatBase = (uintptr_t)r->buff;
    delta[comm->rank] = 0;
  }
  int saved;
  ncclResult_t res = enter(comm, &saved);
  if (res == ncclSuccess) {
    res = upload(comm, r->dev_delta, delta, (size_t)n * sizeof *delta);
    if (res == ncclSuccess) res = upload(comm, r->dev_win, &w, sizeof w);
    leave(saved);
  }
  free(delta);
  return res;
}

/* Rebuild the window table from comm->regs and upload it. */
static ncclResult_t table_update(struct ncclComm* comm) {
  enum { PER = NCCL_DEVCOMM_V2_30_WINDOW_TABLE_ENTRIES };
  struct weft_devapi* d = comm->devapi;
  pthread_mutex_lock(&comm->lock);
  int n = 0;
  for (const weft_mem_reg* r = comm->regs; r; r = r->next)
    if (r->dev_win) n++;
  ncclDevWindowTableEntry_v2_30_t* e = calloc((size_t)(n ? n : 1), sizeof *e);
  int i = 0;
  for (const weft_mem_reg* r = comm->regs; e && r; r = r->next)
    if (r->dev_win)
      e[i++] = (ncclDevWindowTableEntry_v2_30_t){(uintptr_t)r->buff, (uintptr_t)r->size,
                                                 (uintptr_t)r->dev_win};
  pthread_mutex_unlock(&comm->lock);
  if (!e) {
    WARN("rank %d: out of memory for the device window table", comm->rank);
    return ncclSystemError;
  }
  int need = n ? (n + PER - 1) / PER : 1;
  ncclResult_t res = ncclSuccess;
  if (need > d->nblocks) {
    void** b = realloc(d->blocks, (size_t)need * sizeof *b);
    if (!b) res = ncclSystemError;
    else d->blocks = b;
    for (int k = d->nblocks; res == ncclSuccess && k < need; k++) {
      cudaError_t ce = cudaMalloc(&d->blocks[k], sizeof(ncclDevWindowTable_v2_30_t));
      if (ce != cudaSuccess) res = cuda_fail("allocating the device window table", comm, ce);
      else d->nblocks = k + 1;
      if (ce == cudaSuccess) transport_gpu_persist(comm, d->blocks[k], 1);
    }
  }
  ncclDevWindowTable_v2_30_t t;
  for (int k = 0; res == ncclSuccess && k < d->nblocks; k++) {
    memset(&t, 0, sizeof t);
    for (int j = 0; j < PER && k * PER + j < n; j++) t.entries[j] = e[k * PER + j];
    t.next = k + 1 < d->nblocks ? (uintptr_t)d->blocks[k + 1] : 0;
    res = upload(comm, d->blocks[k], &t, sizeof t);
  }
  free(e);
  return res;
}

ncclResult_t api_devwin_table(struct ncclComm* comm, void** table) {
  int saved;
  WEFT_CHECK(enter(comm, &saved));
  ncclResult_t res = ncclSuccess;
  if (!comm->devapi) {
    comm->devapi = calloc(1, sizeof *comm->devapi);
    if (!comm->devapi) res = ncclSystemError;
    if (res == ncclSuccess) res = table_update(comm);
  }
  leave(saved);
  if (res == ncclSuccess) *table = comm->devapi->blocks[0];
  return res;
}

ncclResult_t api_devwin_create(struct ncclComm* comm, weft_mem_reg* r) {
  int saved;
  WEFT_CHECK(enter(comm, &saved));
  void *table, *win = NULL, *delta = NULL;
  ncclResult_t res = ncclSuccess;
  cudaError_t e = cudaMalloc(&win, sizeof(ncclWindowVidmem_v2_32_t));
  if (e == cudaSuccess) e = cudaMalloc(&delta, (size_t)comm->nranks * sizeof(int32_t));
  if (e != cudaSuccess) res = cuda_fail("allocating a device window", comm, e);
  if (res == ncclSuccess) {
    transport_gpu_persist(comm, win, 1);
    transport_gpu_persist(comm, delta, 1);
  }
  leave(saved);
  pthread_mutex_lock(&comm->lock); /* r is in comm->regs already: the table reads these */
  r->dev_win = res == ncclSuccess ? win : NULL;
  r->dev_delta = res == ncclSuccess ? delta : NULL;
  pthread_mutex_unlock(&comm->lock);
  if (res == ncclSuccess) res = api_devwin_fill(comm, r);
  /* Listed in the table: made with this window in it, or rewritten. */
  if (res == ncclSuccess)
    res = comm->devapi ? api_devwin_listed(comm) : api_devwin_table(comm, &table);
  if (res != ncclSuccess) {
    pthread_mutex_lock(&comm->lock);
    r->dev_win = NULL;
    r->dev_delta = NULL;
    pthread_mutex_unlock(&comm->lock);
    if (enter(comm, &saved) == ncclSuccess) {
      if (win && delta) {
        transport_gpu_persist(comm, win, -1);
        transport_gpu_persist(comm, delta, -1);
      }
      cudaFree(win);
      cudaFree(delta);
      leave(saved);
    }
  }
  return res;
}

ncclResult_t api_devwin_listed(struct ncclComm* comm) {
  int saved;
  WEFT_CHECK(enter(comm, &saved));
  ncclResult_t res = comm->devapi ? table_update(comm) : ncclSuccess;
  leave(saved);
  return res;
}

void api_devwin_free(struct ncclComm* comm, weft_mem_reg* r) {
  if (!r->dev_win) return;
  int saved;
  if (enter(comm, &saved) != ncclSuccess) return;
  transport_gpu_persist(comm, r->dev_win, -1);
  transport_gpu_persist(comm, r->dev_delta, -1);
  cudaFree(r->dev_win);
  cudaFree(r->dev_delta);
  leave(saved);
}

void api_devapi_free(struct ncclComm* comm) {
  struct weft_devapi* d = comm->devapi;
  if (!d) return;
  int saved;
  if (enter(comm, &saved) == ncclSuccess) {
    for (int k = 0; k < d->nblocks; k++) {
      transport_gpu_persist(comm, d->blocks[k], -1);
      cudaFree(d->blocks[k]);
    }
    leave(saved);
  }
  free(d->blocks);
  free(d);
  comm->devapi = NULL;
}

#else /* !WEFT_HAVE_CUDA: no device windows (host mode only). */

ncclResult_t api_devwin_fill(struct ncclComm* comm, weft_mem_reg* r) { (void)comm, (void)r; return ncclSuccess; }
ncclResult_t api_devwin_create(struct ncclComm* comm, weft_mem_reg* r) { (void)comm, (void)r; return ncclSuccess; }
ncclResult_t api_devwin_listed(struct ncclComm* comm) { (void)comm; return ncclSuccess; }
ncclResult_t api_devwin_table(struct ncclComm* comm, void** table) {
  (void)comm;
  *table = NULL;
  return ncclInvalidUsage;
}
void api_devwin_free(struct ncclComm* comm, weft_mem_reg* r) { (void)comm, (void)r; }
void api_devapi_free(struct ncclComm* comm) { (void)comm; }

#endif
