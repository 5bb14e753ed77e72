/* KernelCh events of device launches, timed on the GPU as NCCL times them: each block of a
 * profiled launch stores %globaltimer when it starts and when it has run its works, into
 * host-mapped memory; a host function enqueued after the kernel reports, once the kernel is
 * done, a KernelCh per work (parent: its Coll or P2p event, stopped at launch as in NCCL; pTimer
 * the block's start) with its KernelChStop state (pTimer: the block's stop). Records come from a
 * fixed pool (no allocation per launch, none freed by the host function, which may not call
 * CUDA); captured launches are not timed (a replay has no host side to report from). */
#include "device/device_prof.h"

#include <cuda_runtime_api.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "device/device.h"
#include "plugin/profiler.h"
#include "util/clock.h"
#include "util/log.h"

#define PROF_RECS 32

typedef struct weft_dev_prof_rec {
  int busy; /* atomic: 1 from arm until the host function is done */
  struct ncclComm* comm;
  unsigned long long* ts; /* host view: [2b] start, [2b+1] stop of block b */
  int n;
  struct {
    void* parent;
    uint16_t block;
    uint8_t channel;
  } items[WEFT_DEV_MAX_WORKS];
} weft_dev_prof_rec;

typedef struct weft_dev_prof {
  unsigned long long* ts;     /* PROF_RECS × 2 × WEFT_DEV_MAX_BLOCKS, host-mapped */
  unsigned long long* ts_dev; /* the same, as the kernels address it */
  weft_dev_prof_rec recs[PROF_RECS];
  int next;
  int dropped;
} weft_dev_prof;

static ncclResult_t pool_create(struct ncclComm* comm, weft_dev_prof** out) {
  weft_dev_prof* p = calloc(1, sizeof *p);
  size_t bytes = sizeof(unsigned long long) * 2 * WEFT_DEV_MAX_BLOCKS * PROF_RECS;
  if (!p) {
    WARN("rank %d: out of memory for the KernelCh records", comm->rank);
    return ncclSystemError;
  }
  cudaError_t e = cudaHostAlloc((void**)&p->ts, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e == cudaSuccess) e = cudaHostGetDevicePointer((void**)&p->ts_dev, p->ts, 0);
  if (e != cudaSuccess) {
    WARN("rank %d (cuda device %d): host-mapped memory for KernelCh times (%zu bytes): %s",
         comm->rank, comm->cuda_dev, bytes, cudaGetErrorString(e));
    if (p->ts) cudaFreeHost(p->ts);
    free(p);
    return ncclUnhandledCudaError;
  }
  for (int i = 0; i < PROF_RECS; i++) p->recs[i].ts = p->ts + (size_t)i * 2 * WEFT_DEV_MAX_BLOCKS;
  *out = p;
  return ncclSuccess;
}

ncclResult_t device_prof_arm(struct ncclComm* comm, weft_dev_prof** pool, int capturing,
                             weft_work* const* ws, const int* blk, int n,
                             unsigned long long** ts_dev, weft_dev_prof_rec** rec) {
  *ts_dev = NULL;
  *rec = NULL;
  if (!PROF_ON(&comm->prof, ncclProfileKernelCh) || capturing || n <= 0 ||
      n > WEFT_DEV_MAX_WORKS)
    return ncclSuccess;
  if (*pool == NULL) {
    ncclResult_t res = pool_create(comm, pool);
    if (res != ncclSuccess) return res;
  }
  weft_dev_prof* p = *pool;
  weft_dev_prof_rec* r = NULL;
  for (int k = 0; k < PROF_RECS && !r; k++) {
    weft_dev_prof_rec* c = &p->recs[(p->next + k) % PROF_RECS];
    if (__atomic_load_n(&c->busy, __ATOMIC_ACQUIRE) == 0) r = c;
  }
  if (!r) { /* the kernels are PROF_RECS launches behind: leave this one untimed */
    if (p->dropped++ == 0)
      INFO(NCCL_INIT, "rank %d: %d launches in flight: KernelCh of some launches not reported",
           comm->rank, PROF_RECS);
    return ncclSuccess;
  }
  p->next = (int)(r - p->recs + 1) % PROF_RECS;
  r->comm = comm;
  r->n = 0;
  int nblocks = 0;
  for (int i = 0; i < n; i++) {
    if (ws[i]->op->prof_ev == NULL) continue;
    r->items[r->n].parent = ws[i]->op->prof_ev;
    r->items[r->n].block = (uint16_t)blk[i];
    r->items[r->n].channel = (uint8_t)ws[i]->channel;
    r->n++;
    if (blk[i] + 1 > nblocks) nblocks = blk[i] + 1;
  }
  if (r->n == 0) return ncclSuccess;
  memset(r->ts, 0, sizeof *r->ts * 2 * (size_t)nblocks);
  __atomic_store_n(&r->busy, 1, __ATOMIC_RELEASE);
  *ts_dev = p->ts_dev + (r->ts - p->ts);
  *rec = r;
  return ncclSuccess;
}

static void CUDART_CB report(void* arg) {
  weft_dev_prof_rec* r = arg;
  weft_prof* pf = &r->comm->prof;
  for (int i = 0; i < r->n; i++) {
    const unsigned long long* t = r->ts + 2 * r->items[i].block;
    ncclProfilerEventDescr_v6_t d;
    memset(&d, 0, sizeof d);
    d.type = ncclProfileKernelCh;
    d.parentObj = r->items[i].parent;
    d.rank = r->comm->rank;
    d.kernelCh.channelId = r->items[i].channel;
    d.kernelCh.pTimer = t[0];
    void* h = prof_start(pf, &d);
    ncclProfilerEventStateArgs_v6_t a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = t[1];
    prof_state(pf, h, ncclProfilerKernelChStop, &a);
    prof_stop(pf, h);
  }
  __atomic_store_n(&r->busy, 0, __ATOMIC_RELEASE);
}

ncclResult_t device_prof_after(struct ncclComm* comm, weft_dev_prof_rec* rec, void* stream) {
  if (!rec) return ncclSuccess;
  cudaError_t e = cudaLaunchHostFunc((cudaStream_t)stream, report, rec);
  if (e != cudaSuccess) {
    __atomic_store_n(&rec->busy, 0, __ATOMIC_RELEASE);
    WARN("rank %d (cuda device %d): cudaLaunchHostFunc for the KernelCh events: %s", comm->rank,
         comm->cuda_dev, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

void device_prof_cancel(weft_dev_prof_rec* rec) {
  if (rec) __atomic_store_n(&rec->busy, 0, __ATOMIC_RELEASE);
}

void device_prof_destroy(struct ncclComm* comm, weft_dev_prof* p) {
  if (!p) return;
  /* The executor waited for its last launch; a host function may still be on its way. */
  uint64_t t0 = clock_ns();
  for (int i = 0; i < PROF_RECS; i++)
    while (__atomic_load_n(&p->recs[i].busy, __ATOMIC_ACQUIRE) && clock_ns() - t0 < 2000000000ull)
      sched_yield();
  for (int i = 0; i < PROF_RECS; i++)
    if (__atomic_load_n(&p->recs[i].busy, __ATOMIC_ACQUIRE)) {
      WARN("rank %d: a KernelCh report is still pending after 2 s; its memory is left allocated",
           comm->rank);
      return;
    }
  cudaFreeHost(p->ts);
  free(p);
}
