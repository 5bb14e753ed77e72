/* Host side of the GPU executor (device_exec.h).
 *
 * A group's work items become one kernel launch per run of ops that share a kernel (datatype
 * and operator; copies go with any), in call order. Blocks: a collective's works of channel c
 * all run on one block (collectives are ordered alike on every rank, so one block per channel
 * cannot deadlock), every point-to-point (channel, peer, direction) gets a block of its own (a
 * send and a receive of one group must progress at once). All point-to-point works of a group
 * go into one launch: split over two, a rank's send could wait for a receive its peer has put
 * in a later launch. */
#include "device/device_exec.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "device/device.h"
#include "device/device_prof.h"
#include "device/device_rma.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/param.h"
#include "util/names.h"

#define DEVICE_DEFAULT_CHANNELS 64

struct weft_device {
  uint32_t* words;     /* host-mapped: [0] abort, [1] error, [2] signal wait's peer + 1 */
  uint32_t* words_dev; /* the same, as the kernels address them */
  cudaEvent_t last;    /* recorded after each launch outside capture */
  int have_last;
  cudaStream_t last_stream;
  cudaEvent_t join; /* for groups spanning several streams */
  weft_dev_launch* launch; /* staging for one launch's parameters */
  /* Scratch of device_exec_launch, grown on demand (no allocation per launch once warm). */
  weft_work** run;
  weft_work** p2p;
  int* blk;
  int scratch_cap;
  int max_blocks; /* blocks one launch may use (ranks sharing the GPU split it) */
  struct weft_dev_prof* prof; /* KernelCh records (device_prof.c), made on first use */
};

/* Room for n work items in the scratch arrays. */
static ncclResult_t scratch_reserve(struct ncclComm* comm, struct weft_device* d, int n) {
  if (n <= d->scratch_cap) return ncclSuccess;
  int cap = d->scratch_cap ? d->scratch_cap : 64;
  while (cap < n) cap *= 2;
  weft_work** run = realloc(d->run, sizeof *run * (size_t)cap);
  if (run) d->run = run;
  weft_work** p2p = realloc(d->p2p, sizeof *p2p * (size_t)cap);
  if (p2p) d->p2p = p2p;
  int* blk = realloc(d->blk, sizeof *blk * (size_t)cap);
  if (blk) d->blk = blk;
  if (!run || !p2p || !blk) {
    WARN("rank %d: out of memory launching %d work items", comm->rank, n);
    return ncclSystemError;
  }
  d->scratch_cap = cap;
  return ncclSuccess;
}

/* Run with the communicator's GPU current; put the caller's back afterwards. */
typedef struct {
  int saved;
} dev_guard;
static cudaError_t guard_enter(dev_guard* g, int dev) {
  if (cudaGetDevice(&g->saved) != cudaSuccess) g->saved = -1;
  if (g->saved == dev) {
    g->saved = -1; /* already current: nothing to set, nothing to put back */
    return cudaSuccess;
  }
  return cudaSetDevice(dev);
}
static void guard_leave(const dev_guard* g) {
  if (g->saved >= 0) cudaSetDevice(g->saved);
}

#define CUDA_TRY(comm, call, what)                                                          \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      WARN("rank %d (cuda device %d): %s failed: %s", (comm)->rank, (comm)->cuda_dev, what, \
           cudaGetErrorString(e_));                                                         \
      res = ncclUnhandledCudaError;                                                         \
      goto out;                                                                             \
    }                                                                                       \
  } while (0)

int device_default_channels(void) { return DEVICE_DEFAULT_CHANNELS; }
int device_resident_blocks(int cuda_dev) {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, cuda_dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}
unsigned device_protocols(int ll128_ok) {
  return (1u << NCCL_PROTO_SIMPLE) | (1u << NCCL_PROTO_LL) | (ll128_ok ? 1u << NCCL_PROTO_LL128 : 0);
}

ncclResult_t device_exec_create(struct ncclComm* comm, int max_blocks, struct weft_device** out) {
  ncclResult_t res = ncclSuccess;
  dev_guard g;
  struct weft_device* d = calloc(1, sizeof *d);
  if (!d || !(d->launch = malloc(sizeof *d->launch))) {
    WARN("rank %d: out of memory for the device executor", comm->rank);
    free(d);
    return ncclSystemError;
  }
  d->max_blocks = max_blocks < 1 || max_blocks > WEFT_DEV_MAX_BLOCKS ? WEFT_DEV_MAX_BLOCKS
                                                                     : max_blocks;
  CUDA_TRY(comm, guard_enter(&g, comm->cuda_dev), "cudaSetDevice");
  CUDA_TRY(comm, cudaHostAlloc((void**)&d->words, 64, cudaHostAllocMapped | cudaHostAllocPortable),
           "cudaHostAlloc of the abort/error words");
  memset(d->words, 0, 64);
  CUDA_TRY(comm, cudaHostGetDevicePointer((void**)&d->words_dev, d->words, 0),
           "cudaHostGetDevicePointer");
  CUDA_TRY(comm, cudaEventCreateWithFlags(&d->last, cudaEventDisableTiming), "cudaEventCreate");
  CUDA_TRY(comm, cudaEventCreateWithFlags(&d->join, cudaEventDisableTiming), "cudaEventCreate");
  *out = d;
out:
  guard_leave(&g);
  if (res != ncclSuccess) {
    if (d->words) cudaFreeHost(d->words);
    free(d->launch);
    free(d);
  }
  return res;
}

void device_exec_stop(struct weft_device* d) {
  if (d) __atomic_store_n(&d->words[0], 1u, __ATOMIC_RELEASE);
}

uint32_t* device_exec_abort_word(struct weft_device* d) { return d ? d->words_dev : NULL; }

void device_exec_wait_idle(struct ncclComm* comm, struct weft_device* d, int abort) {
  if (!d) return;
  dev_guard g;
  if (guard_enter(&g, comm->cuda_dev) != cudaSuccess) {
    WARN("rank %d: cannot select cuda device %d to wait for the kernels", comm->rank,
         comm->cuda_dev);
  }
  if (abort) device_exec_stop(d);
  if (d->have_last) {
    /* Kernels still running use the connections about to be freed: wait for them, bounded;
     * past the bound, tell them to stop and wait for that. */
    uint64_t deadline = clock_ms() + (uint64_t)param_int(WEFT_PARAM_TIMEOUT_MS);
    weft_backoff bo = {0};
    cudaError_t e;
    while ((e = cudaEventQuery(d->last)) == cudaErrorNotReady) {
      if (clock_ms() > deadline && !d->words[0]) {
        WARN("rank %d: kernels still running at destroy after WEFT_TIMEOUT_MS; stopping them",
             comm->rank);
        __atomic_store_n(&d->words[0], 1u, __ATOMIC_RELEASE);
      }
      backoff_wait(&bo);
    }
    d->have_last = 0;
  }
  guard_leave(&g);
}

void device_exec_destroy(struct ncclComm* comm, struct weft_device* d, int abort) {
  if (!d) return;
  device_exec_wait_idle(comm, d, abort);
  dev_guard g;
  if (guard_enter(&g, comm->cuda_dev) != cudaSuccess) {
    WARN("rank %d: cannot select cuda device %d to free the device executor", comm->rank,
         comm->cuda_dev);
  }
  device_prof_destroy(comm, d->prof);
  cudaEventDestroy(d->last);
  cudaEventDestroy(d->join);
  cudaFreeHost(d->words);
  free(d->launch);
  free(d->run);
  free(d->p2p);
  free(d->blk);
  free(d);
  guard_leave(&g);
}

ncclResult_t device_exec_error(struct ncclComm* comm) {
  struct weft_device* d = comm->device;
  if (!d) return ncclSuccess;
  uint32_t e = __atomic_load_n(&d->words[1], __ATOMIC_ACQUIRE);
  if (e == 0) return ncclSuccess;
  return e == 2 ? ncclRemoteError : ncclSystemError;
}

int device_exec_error_peer(struct ncclComm* comm) {
  struct weft_device* d = comm->device;
  if (!d) return -1;
  return (int)__atomic_load_n(&d->words[2], __ATOMIC_ACQUIRE) - 1;
}

/* From this size a copy captured into a CUDA graph runs faster on the SMs than as a memcpy
 * node (H200: 775 us against 541 us per GiB; at 256 MiB the node still wins, 126 against
 * 138 us). Launched, copies up to WEFT_LAUNCHED_SM_COPY_MAX_BYTES between device buffers of
 * this GPU run on the SMs too (comm->launched_sm_copy_max): back to back, a copy-engine copy
 * costs ~5-6 us a call where a kernel launch costs less. */
#define CAPTURED_SM_COPY_MIN_BYTES (512ull << 20)

ncclResult_t device_exec_copy(struct ncclComm* comm, void* dst, const void* src, size_t bytes,
                              void* stream) {
  ncclResult_t res = ncclSuccess;
  dev_guard g;
  CUDA_TRY(comm, guard_enter(&g, comm->cuda_dev), "cudaSetDevice");
  int large = bytes >= CAPTURED_SM_COPY_MIN_BYTES, small = bytes <= comm->launched_sm_copy_max;
  if ((large || small) && (((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CUDA_TRY(comm, cudaStreamIsCapturing((cudaStream_t)stream, &cs), "cudaStreamIsCapturing");
    int captured = cs == cudaStreamCaptureStatusActive;
    struct cudaPointerAttributes da, sa;
    if ((captured ? large : small) &&
        cudaPointerGetAttributes(&da, dst) == cudaSuccess && da.type == cudaMemoryTypeDevice &&
        da.device == comm->cuda_dev && cudaPointerGetAttributes(&sa, src) == cudaSuccess &&
        sa.type == cudaMemoryTypeDevice && sa.device == comm->cuda_dev) {
      CUDA_TRY(comm, (cudaError_t)weft_dev_copy(dst, src, bytes, stream),
               "the SM copy kernel launch");
      goto out;
    }
  }
  CUDA_TRY(comm, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream),
           "cudaMemcpyAsync (a copy to self)");
out:
  guard_leave(&g);
  return res;
}

ncclResult_t device_exec_scale(struct ncclComm* comm, void* dst, const void* src, size_t count,
                               ncclDataType_t type, uint64_t scalar, const void* scalar_ptr,
                               void* stream) {
  ncclResult_t res = ncclSuccess;
  dev_guard g;
  CUDA_TRY(comm, guard_enter(&g, comm->cuda_dev), "cudaSetDevice");
  CUDA_TRY(comm, (cudaError_t)weft_dev_scale((int)type, dst, src, count, scalar, scalar_ptr,
                                             stream),
           "the one-rank PreMulSum kernel launch");
out:
  guard_leave(&g);
  return res;
}

ncclResult_t device_exec_rma_put(struct ncclComm* comm, void* dst, const void* src, size_t bytes,
                                 uint64_t* slot, void* stream) {
  ncclResult_t res = ncclSuccess;
  dev_guard g;
  CUDA_TRY(comm, guard_enter(&g, comm->cuda_dev), "cudaSetDevice");
  if (bytes)
    CUDA_TRY(comm, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream),
             "cudaMemcpyAsync (a one-sided put)");
  CUDA_TRY(comm, (cudaError_t)weft_dev_rma_signal(slot, stream), "the signal kernel launch");
out:
  guard_leave(&g);
  return res;
}

ncclResult_t device_exec_rma_wait(struct ncclComm* comm, const uint64_t* sig, uint64_t* consumed,
                                  int n, const int* peers, const uint64_t* counts, void* stream) {
  ncclResult_t res = ncclSuccess;
  struct weft_device* d = comm->device;
  dev_guard g;
  weft_dev_comm c;
  memset(&c, 0, sizeof c);
  c.abort_flag = d->words_dev;
  c.error = d->words_dev + 1;
  c.timeout_ns = (uint64_t)param_int(WEFT_PARAM_TIMEOUT_MS) * 1000000ull;
  CUDA_TRY(comm, guard_enter(&g, comm->cuda_dev), "cudaSetDevice");
  for (int i = 0; i < n; i += WEFT_DEV_RMA_WAIT_MAX) {
    weft_dev_rma_wait_args a;
    memset(&a, 0, sizeof a);
    a.n = n - i < WEFT_DEV_RMA_WAIT_MAX ? n - i : WEFT_DEV_RMA_WAIT_MAX;
    for (int k = 0; k < a.n; k++) {
      a.peer[k] = peers[i + k];
      a.count[k] = counts[i + k];
    }
    CUDA_TRY(comm, (cudaError_t)weft_dev_rma_wait(&c, sig, consumed, &a, d->words_dev + 2, stream),
             "the signal wait kernel launch");
  }
out:
  guard_leave(&g);
  return res;
}

/* ---- building launches ---- */

static int is_p2p(int func) { return func == ncclFuncSend || func == ncclFuncRecv; }
static int reduces(int func) {
  return func == ncclFuncAllReduce || func == ncclFuncReduce || func == ncclFuncReduceScatter;
}

/* The kernels' name for a reduction (Custom never reaches here: enqueue refuses it). */
static int dred_of(weft_red_kind kind) {
  switch (kind) {
    case WEFT_RED_PROD: return WEFT_DRED_PROD;
    case WEFT_RED_MAX: return WEFT_DRED_MAX;
    case WEFT_RED_MIN: return WEFT_DRED_MIN;
    case WEFT_RED_PREMULSUM: return WEFT_DRED_PREMULSUM;
    case WEFT_RED_SUMPOSTDIV: return WEFT_DRED_SUMPOSTDIV;
    default: return WEFT_DRED_SUM;
  }
}

/* The kernel an op needs: datatype and operator class (PreMulSum and SumPostDiv run in the Sum
 * kernel); -1 for a copy (fits any kernel). */
static int kernel_of(const weft_op* op) {
  if (!reduces(op->func)) return -1;
  int cls = dred_of(op->redop.kind);
  if (cls == WEFT_DRED_PREMULSUM || cls == WEFT_DRED_SUMPOSTDIV) cls = WEFT_DRED_SUM;
  return (int)op->dtype * 8 + cls;
}

static const weft_dev_launcher launchers[ncclNumTypes] = {
    weft_dev_launch_int8,  weft_dev_launch_uint8,  weft_dev_launch_int32, weft_dev_launch_uint32,
    weft_dev_launch_int64, weft_dev_launch_uint64, weft_dev_launch_half,  weft_dev_launch_float,
    weft_dev_launch_double, weft_dev_launch_bf16,  weft_dev_launch_e4m3,  weft_dev_launch_e5m2};

static ncclResult_t fill_work(struct ncclComm* comm, const weft_work* w, weft_dev_work* dw) {
  const weft_op* op = w->op;
  memset(dw, 0, sizeof *dw);
  dw->alg = w->alg;
  weft_dev_conn* table = transport_dev_table(comm);
  for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++) {
    if (w->keys[k].peer < 0) continue;
    if (k >= WEFT_DEV_MAX_CONNS) { /* the tuner keeps such algorithms off devices (tune_comm.c) */
      WARN("rank %d: %s: role %d (rank %d) is beyond the kernels' %d roles (algorithm %d on %d "
           "ranks)", comm->rank, weft_func_name(op->func), k, w->keys[k].peer, WEFT_DEV_MAX_CONNS,
           w->alg.algo, comm->nranks);
      return ncclInternalError;
    }
    weft_dev_conn* dc = transport_dev_conn(comm, &w->keys[k]);
    if (dc) dw->conns[k] = (uint32_t)(dc - table) + 1;
    if (!dc) {
      WARN("rank %d: %s: connection to rank %d (channel %d) has no device side", comm->rank,
           weft_func_name(op->func), w->keys[k].peer, w->keys[k].channel);
      return ncclInternalError;
    }
  }
  dw->dtype = op->dtype;
  dw->proto = op->proto;
  dw->redop = dred_of(op->redop.kind);
  dw->nranks_div = op->redop.nranks;
  memcpy(&dw->scalar, op->redop.scalar, sizeof dw->scalar);
  dw->scalar_ptr = op->scalar_ptr;
  return ncclSuccess;
}

/* Block identity of a work: collectives by channel, point-to-point by (channel, peer, dir). */
static long block_key(const weft_work* w) {
  if (!is_p2p(w->op->func)) return w->channel;
  return 1000000L + ((long)w->channel * 4096L + w->op->root) * 2 + (w->op->func == ncclFuncSend);
}

/* Lay the works [0, n) of ws out as blocks in L, keeping call order within a block. */
static ncclResult_t layout(struct ncclComm* comm, weft_work* const* ws, int n, int max_blocks,
                           weft_dev_launch* L, int* blk) {
  long keys[WEFT_DEV_MAX_BLOCKS];
  int counts[WEFT_DEV_MAX_BLOCKS] = {0};
  int nb = 0;
  for (int i = 0; i < n; i++) {
    long k = block_key(ws[i]);
    int b = 0;
    while (b < nb && keys[b] != k) b++;
    if (b == nb) {
      if (nb == max_blocks) {
        WARN("rank %d: one launch needs more than %d blocks (too many point-to-point peers and "
             "channels in one group%s)",
             comm->rank, max_blocks,
             max_blocks < WEFT_DEV_MAX_BLOCKS ? "; ranks sharing this GPU split its blocks" : "");
        return ncclInvalidUsage;
      }
      keys[nb++] = k;
    }
    blk[i] = b;
    counts[b]++;
  }
  int at = 0;
  for (int b = 0; b < nb; b++) {
    L->block_first[b] = (uint16_t)at;
    at += counts[b];
    L->block_end[b] = (uint16_t)L->block_first[b];
  }
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < n && res == ncclSuccess; i++)
    res = fill_work(comm, ws[i], &L->works[L->block_end[blk[i]]++]);
  L->nblocks = nb;
  L->nworks = n;
  return res;
}

static ncclResult_t launch_one(struct ncclComm* comm, struct weft_device* d,
                               weft_work* const* ws, int n, int kernel, cudaStream_t stream,
                               int capturing) {
  if (n == 0) return ncclSuccess;
  weft_dev_launch* L = d->launch;
  L->comm.conns = transport_dev_table(comm);
  L->comm.abort_flag = d->words_dev;
  L->comm.error = d->words_dev + 1;
  L->comm.timeout_ns = (uint64_t)param_int(WEFT_PARAM_TIMEOUT_MS) * 1000000ull;
  WEFT_CHECK(layout(comm, ws, n, d->max_blocks, L, d->blk));
  struct weft_dev_prof_rec* rec = NULL;
  WEFT_CHECK(device_prof_arm(comm, &d->prof, capturing, ws, d->blk, n, &L->comm.prof_ts, &rec));
  int dtype = kernel < 0 ? ncclUint8 : kernel / 8, cls = kernel < 0 ? WEFT_DRED_SUM : kernel % 8;
  int e = launchers[dtype](cls, L, stream);
  if (e != 0) {
    device_prof_cancel(rec);
    WARN("rank %d (cuda device %d): kernel launch of %d work item(s) on %d block(s) failed: %s",
         comm->rank, comm->cuda_dev, n, L->nblocks, cudaGetErrorString((cudaError_t)e));
    return ncclUnhandledCudaError;
  }
  return device_prof_after(comm, rec, stream);
}

ncclResult_t device_exec_launch(struct ncclComm* comm, const weft_op* ops, weft_work* works,
                                int nworks) {
  struct weft_device* d = comm->device;
  ncclResult_t res = ncclSuccess;
  dev_guard g;
  WEFT_CHECK(scratch_reserve(comm, d, nworks));
  weft_work** run = d->run;
  weft_work** p2p = d->p2p;
  CUDA_TRY(comm, guard_enter(&g, comm->cuda_dev), "cudaSetDevice");
  if (!ops) goto out;
  cudaStream_t stream = (cudaStream_t)ops->stream;
  enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  CUDA_TRY(comm, cudaStreamIsCapturing(stream, &cap), "cudaStreamIsCapturing");
  int capturing = cap != cudaStreamCaptureStatusNone;
  /* Launches of one communicator run in call order even across streams. */
  if (!capturing && d->have_last && d->last_stream != stream)
    CUDA_TRY(comm, cudaStreamWaitEvent(stream, d->last, 0), "cudaStreamWaitEvent");
  /* Ops of the group on other streams: the launch waits for their streams, and they for it. */
  for (const weft_op* op = ops->next; op; op = op->next) {
    if (op->stream == ops->stream) continue;
    CUDA_TRY(comm, cudaEventRecord(d->join, (cudaStream_t)op->stream), "cudaEventRecord");
    CUDA_TRY(comm, cudaStreamWaitEvent(stream, d->join, 0), "cudaStreamWaitEvent");
  }

  int np2p = 0;
  for (int i = 0; i < nworks; i++)
    if (is_p2p(works[i].op->func)) p2p[np2p++] = &works[i];
  if (np2p > WEFT_DEV_MAX_WORKS) {
    WARN("rank %d: a group of %d point-to-point work items exceeds one launch (%d)", comm->rank,
         np2p, WEFT_DEV_MAX_WORKS);
    res = ncclInvalidUsage;
    goto out;
  }
  /* Collectives in call order, cut where the kernel changes or a launch is full; the
   * point-to-point works join the first launch when they fit, else go first on their own. */
  int n = 0, kernel = -1, p2p_done = 0;
  for (int i = 0; i < nworks; i++) {
    weft_work* w = &works[i];
    if (is_p2p(w->op->func)) continue;
    int k = kernel_of(w->op);
    int extra = p2p_done ? 0 : np2p;
    if (n > 0 && ((k >= 0 && kernel >= 0 && k != kernel) || n + extra >= WEFT_DEV_MAX_WORKS)) {
      if (!p2p_done && n + np2p <= WEFT_DEV_MAX_WORKS) {
        memcpy(run + n, p2p, sizeof *p2p * (size_t)np2p);
        n += np2p;
        p2p_done = 1;
      } else if (!p2p_done) {
        WEFT_CHECK_GOTO(launch_one(comm, d, p2p, np2p, -1, stream, capturing), res, out);
        p2p_done = 1;
      }
      WEFT_CHECK_GOTO(launch_one(comm, d, run, n, kernel, stream, capturing), res, out);
      n = 0;
      kernel = -1;
    }
    if (k >= 0) kernel = k;
    run[n++] = w;
  }
  if (!p2p_done) {
    if (n + np2p <= WEFT_DEV_MAX_WORKS) {
      memcpy(run + n, p2p, sizeof *p2p * (size_t)np2p);
      n += np2p;
    } else {
      WEFT_CHECK_GOTO(launch_one(comm, d, p2p, np2p, -1, stream, capturing), res, out);
    }
  }
  WEFT_CHECK_GOTO(launch_one(comm, d, run, n, kernel, stream, capturing), res, out);

  if (!capturing) {
    CUDA_TRY(comm, cudaEventRecord(d->last, stream), "cudaEventRecord");
    d->have_last = 1;
    d->last_stream = stream;
  }
  for (const weft_op* op = ops->next; op; op = op->next) {
    if (op->stream == ops->stream) continue;
    CUDA_TRY(comm, cudaEventRecord(d->join, stream), "cudaEventRecord");
    CUDA_TRY(comm, cudaStreamWaitEvent((cudaStream_t)op->stream, d->join, 0),
             "cudaStreamWaitEvent");
  }
out:
  guard_leave(&g);
  return res;
}
