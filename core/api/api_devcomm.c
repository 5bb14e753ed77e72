/* ncclDevCommCreate / ncclDevCommDestroy: the device communicator a kernel receives by value.
 *
 * Create reads the caller's requirements in the layout of the headers it was compiled
 * against (abi/nccl_devcomm.h picks it from their version; api_devlayout.c reads them and
 * writes the device communicator per layout, 2.29 callers getting LSA only), refuses what
 * weft cannot give (multicast: never enabled here; GIN: weft has none, answered as NCCL
 * answers without it; fabric barriers), then lays out the resource buffer as NCCL does —
 * the LSA barriers first, then the caller's resource requirements in list order, each at a
 * multiple of 128 bytes (handle = offset / 128) — allocates it with ncclMemAlloc, zeroes it
 * and registers it as a symmetric window, which maps it flat across the LSA team
 * (transport/transport_lsa.c). The barrier epochs live in that buffer, in GPU memory, so a
 * graph replaying a kernel keeps counting where the last replay stopped. The device
 * communicator is then written in the caller's layout: ranks, LSA team, window table, the
 * resource window (its device window and the inlined copy of its base and stride), the
 * barrier handles, the abort flag; multicast and fabric stay zero.
 *
 * GIN (NCCL 2.30 callers, gin/gin_comm.h): a device communicator asking for it gets the proxy
 * GIN type over one connection to every rank. Signals are numbered as NCCL numbers them: the
 * caller's ginSignalCount first, then the world GIN barriers (nRanks signals each), the rail
 * GIN barriers (rail size each), then each resource requirement's in list order (its
 * outGinSignalStart); counters likewise. gin/ sets up the backend, memory and proxy and
 * registers every symmetric window (their device windows then carry ginWins[0]); the abort
 * word is set and the communicator failed if the proxy fails. Destroy takes it down.
 *
 * Like registration, Create is collective; inside a group the work waits for the outermost
 * ncclGroupEnd (one thread may create the device communicators of several ranks), and
 * *outDevComm is written there. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_devlayout.h"
#include "gin/gin_comm.h"
#include "group/group.h"
#include "lifecycle/lifecycle.h"
#include "nccl_devcomm.h"
#include "transport/transport.h"
#include "util/check.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "device/device_exec.h"
#endif

/* One resource of the buffer: its bytes, alignment and where its handle goes. */
typedef struct {
  size_t bytes, align;
  uint32_t* handle_out;
  int gin_signals, gin_counters;
  uint32_t *signal_out, *counter_out;
} resource;

typedef struct {
  ncclDevCommLayout_t layout;
  uint32_t version;
  int lsa_barriers;
  int gin; /* GIN asked for (and possible) */
  int gin_contexts, gin_signals, gin_counters, world_gin_barriers, rail_gin_barriers;
  int nres;
  resource* res; /* the caller's resource requirements, in list order */
  void* out;     /* the caller's ncclDevComm */
} devcomm_task;

static void version_text(uint32_t v, char* buf, size_t len) {
  snprintf(buf, len, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
}

/* ncclGinConnectionType_t's values (nccl_device.h; not in nccl.h). */
enum { GIN_CONNECTION_FULL = 1, GIN_CONNECTION_RAIL = 2 };

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* What weft refuses, each with the WARN NCCL gives or one saying why. */
static ncclResult_t check_reqs(const char* fn, struct ncclComm* comm, ncclDevCommLayout_t layout,
                               uint32_t version, const devlayout_reqs* v) {
  if (v->lsa_multimem) {
    WARN("%s: rank %d: reqs->lsaMultimem is set, but multicast (NVLink SHARP) is never enabled "
         "in weft", fn, comm->rank);
    return ncclInvalidUsage;
  }
  for (const ncclTeamRequirements_v2_30_t* t = v->teams; t; t = t->next)
    if (t->multimem) {
      WARN("%s: rank %d: a team requirement asks for multimem, but multicast is never enabled "
           "in weft", fn, comm->rank);
      return ncclInvalidUsage;
    }
  if (v->lsa_barriers < 0 || v->barriers < 0) {
    WARN("%s: lsaBarrierCount = %d, barrierCount = %d: counts must not be negative", fn,
         v->lsa_barriers, v->barriers);
    return ncclInvalidArgument;
  }
  /* GIN: the proxy type for 2.30 callers (gin/gin_comm.h); otherwise as NCCL answers on a
   * communicator without it. */
  int gin_resources = v->gin_signals > 0 || v->gin_counters > 0 || v->barriers > 0 ||
                      v->rail_gin_barriers > 0 || v->world_gin_barriers > 0;
  for (const ncclDevResourceRequirements_v2_30_t* r = v->list; r && !gin_resources; r = r->next)
    gin_resources = r->ginSignalCount > 0 || r->ginCounterCount > 0;
  int gin_asked = v->gin_force || v->gin_connection != 0;
  if (gin_resources && !gin_asked) {
    WARN("%s: rank %d: GIN resources were requested (signals, counters or GIN/hybrid barriers) "
         "but GIN was not", fn, comm->rank);
    return ncclInvalidArgument;
  }
  if (gin_asked && !gin_comm_possible(comm)) {
    WARN("%s: rank %d: GIN was requested, but no rank of this communicator supports GIN (weft "
         "gives the proxy GIN type in device mode, built with CUDA)", fn, comm->rank);
    return ncclInvalidArgument;
  }
  if (gin_asked && layout != NCCL_DEVCOMM_LAYOUT_V2_30) {
    WARN("%s: rank %d: GIN was requested by a caller built against NCCL %u.%u.%u headers; weft's "
         "proxy GIN speaks NCCL 2.30's descriptors only (2.32 writes another version): rebuild "
         "the kernels against NCCL 2.30 headers", fn, comm->rank, version / 10000,
         version / 100 % 100, version % 100);
    return ncclInvalidUsage;
  }
  if (gin_asked && v->gin_connection == GIN_CONNECTION_RAIL) {
    WARN("%s: rank %d: ginConnectionType = NCCL_GIN_CONNECTION_RAIL: weft connects GIN to every "
         "rank only (NCCL_GIN_CONNECTION_FULL)", fn, comm->rank);
    return ncclInvalidUsage;
  }
  if (gin_asked && v->gin_connection != GIN_CONNECTION_RAIL &&
      v->gin_connection != GIN_CONNECTION_FULL && v->gin_connection != 0) {
    WARN("%s: rank %d: ginConnectionType = %d is not an ncclGinConnectionType_t", fn, comm->rank,
         v->gin_connection);
    return ncclInvalidArgument;
  }
  if (gin_asked && v->barriers > 0) {
    WARN("%s: rank %d: barrierCount = %d with GIN asks for hybrid (LSA + GIN) barriers, which "
         "weft does not lay out yet; use lsaBarrierCount and worldGinBarrierCount / "
         "railGinBarrierCount", fn, comm->rank, v->barriers);
    return ncclInvalidUsage;
  }
  if (gin_asked && (v->gin_signals < 0 || v->gin_counters < 0 || v->rail_gin_barriers < 0 ||
                    v->world_gin_barriers < 0 || v->gin_contexts < 0)) {
    WARN("%s: rank %d: negative GIN counts (ginSignalCount %d, ginCounterCount %d, "
         "ginContextCount %d, worldGinBarrierCount %d, railGinBarrierCount %d)", fn, comm->rank,
         v->gin_signals, v->gin_counters, v->gin_contexts, v->world_gin_barriers,
         v->rail_gin_barriers);
    return ncclInvalidArgument;
  }
  if (v->cft_barriers > 0 || v->cft_caps != 0) {
    WARN("%s: rank %d: fabric (CFT) resources were requested (cftBarrierCount = %d, cftCaps = "
         "0x%x); weft has no fabric support", fn, comm->rank, v->cft_barriers, v->cft_caps);
    return ncclInvalidUsage;
  }
  for (const ncclDevResourceRequirements_v2_30_t* r = v->list; r; r = r->next)
    if (r->bufferAlign & (r->bufferAlign - 1)) {
      WARN("%s: a resource requirement's bufferAlign = %zu is not a power of two", fn,
           r->bufferAlign);
      return ncclInvalidArgument;
    }
  return ncclSuccess;
}

static void fill_devcomm(void* out, ncclDevCommLayout_t layout, uint32_t version,
                         struct ncclComm* comm, int lsa_size, int lsa_rank, void* table,
                         const weft_mem_reg* rw, uint32_t lsa_handle, int lsa_barriers,
                         uint32_t hybrid_handle, const devlayout_fill* gin) {
  devlayout_fill f = *gin; /* its GIN fields; the rest below */
  f.version = version;
  f.rank = comm->rank;
  f.nranks = comm->nranks;
  f.lsa_rank = lsa_rank;
  f.lsa_size = lsa_size;
  f.window_table = (uintptr_t)table;
  f.lsa_handle = lsa_handle;
  f.lsa_barriers = lsa_barriers;
  f.hybrid_handle = hybrid_handle;
#ifdef WEFT_HAVE_CUDA
  /* The device executor's abort word: set on ncclCommAbort, revoke and a failed connection, so
   * the waits of device-API kernels (barriers, GIN waits poll abortFlag) end with the
   * communicator's collectives. */
  f.abort_flag = (uintptr_t)device_exec_abort_word(comm->device);
#endif
  if (rw) {
    f.resource_window = (uintptr_t)rw->dev_win;
    f.flat = rw->lsa ? (uintptr_t)transport_window_lsa_base(rw->lsa) : (uintptr_t)rw->buff;
    f.stride4g = rw->lsa ? (uint32_t)(transport_window_lsa_stride(rw->lsa) / NCCL_DEVCOMM_4G) : 0;
  }
  devlayout_write(layout, &f, out);
}

/* The proxy failed: the communicator fails and device-API kernels' waits end (abort word). */
static void gin_failed(void* arg, ncclResult_t why) {
  comm_datapath_broken(arg, why, -1, "the GIN proxy");
}

/* Number the GIN signals and counters as NCCL does (file comment); *gin gets the totals and
 * the barriers' first signals. */
static void gin_number(struct ncclComm* comm, const devcomm_task* t, int lsa_size,
                       devlayout_fill* gin) {
  uint32_t sig = (uint32_t)t->gin_signals, cnt = (uint32_t)t->gin_counters;
  gin->world_gin_signal0 = sig;
  sig += (uint32_t)t->world_gin_barriers * (uint32_t)comm->nranks;
  gin->rail_gin_signal0 = sig;
  sig += (uint32_t)t->rail_gin_barriers * (uint32_t)(comm->nranks / lsa_size);
  for (int i = 0; i < t->nres; i++) {
    if (t->res[i].signal_out) *t->res[i].signal_out = sig;
    if (t->res[i].counter_out) *t->res[i].counter_out = cnt;
    sig += (uint32_t)t->res[i].gin_signals;
    cnt += (uint32_t)t->res[i].gin_counters;
  }
  gin->gin_signals = (int)sig;
  gin->gin_counters = (int)cnt;
  gin->gin_contexts = t->gin_contexts;
}

/* Set up the proxy GIN type (collective) and rewrite every device window with its GIN handle. */
static ncclResult_t gin_setup(struct ncclComm* comm, devlayout_fill* gin) {
  gin_comm_req req = {.ncontexts = gin->gin_contexts, .nsignals = gin->gin_signals,
                      .ncounters = gin->gin_counters, .on_error = gin_failed,
                      .on_error_arg = comm};
  gin_comm_dev dev;
  WEFT_CHECK(gin_comm_create(comm, &req, &dev));
  gin->gin_handle = dev.handle;
  gin->gin_shadows = dev.shadows;
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  int n = 0;
  for (weft_mem_reg* r = comm->regs; r; r = r->next) n += gin_comm_window_handle(comm, r) != 0;
  weft_mem_reg** regs = calloc((size_t)(n ? n : 1), sizeof *regs);
  int k = 0;
  for (weft_mem_reg* r = comm->regs; regs && r; r = r->next)
    if (gin_comm_window_handle(comm, r) != 0) regs[k++] = r;
  pthread_mutex_unlock(&comm->lock);
  if (!regs) res = ncclSystemError;
  for (int i = 0; i < k && res == ncclSuccess; i++) res = api_devwin_fill(comm, regs[i]);
  free(regs);
  if (res != ncclSuccess) gin_comm_destroy(comm);
  return res;
}

/* The collective part (now, or at the outermost ncclGroupEnd). */
static ncclResult_t devcomm_job(struct ncclComm* comm, void* arg) {
  const char* fn = "ncclDevCommCreate";
  devcomm_task* t = arg;
  int lsa_size, lsa_rank;
  transport_lsa_team(comm, &lsa_size, &lsa_rank);
  devlayout_fill gin;
  memset(&gin, 0, sizeof gin);
  if (t->gin && gin_comm_active(comm)) {
    WARN("%s: rank %d: this communicator already has a device communicator with GIN; weft "
         "serves one at a time (ncclDevCommDestroy it first)", fn, comm->rank);
    free(t->res);
    free(t);
    return ncclInvalidUsage;
  }
  if (t->gin) gin_number(comm, t, lsa_size, &gin);
  /* NCCL's order: the (empty) GIN barriers, the LSA barriers, the hybrid barriers (the LSA one
   * empty: barrierCount needs GIN), then the caller's requirements. */
  const uint32_t lsa_handle = 0; /* first in the buffer */
  size_t total = NCCL_LSA_BARRIER_BYTES(t->lsa_barriers, lsa_size);
  total = align_up(total, NCCL_DEVCOMM_RESOURCE_UNIT);
  uint32_t hybrid_handle = (uint32_t)(total / NCCL_DEVCOMM_RESOURCE_UNIT);
  for (int i = 0; i < t->nres; i++) {
    size_t a = t->res[i].align > NCCL_DEVCOMM_RESOURCE_UNIT ? t->res[i].align
                                                            : NCCL_DEVCOMM_RESOURCE_UNIT;
    total = align_up(total, a);
    if (t->res[i].handle_out) *t->res[i].handle_out = (uint32_t)(total / NCCL_DEVCOMM_RESOURCE_UNIT);
    total += t->res[i].bytes;
  }
  total = align_up(total, NCCL_DEVCOMM_RESOURCE_UNIT);
  ncclResult_t res = ncclSuccess;
  void* buf = NULL;
  weft_mem_reg* rw = NULL;
  void* table = NULL;
  if (total > 0) {
    WEFT_CHECK_GOTO(pncclMemAlloc(&buf, total), res, done);
#ifdef WEFT_HAVE_CUDA
    /* Zeroed before the registration's gathers: no peer reaches it before that. */
    int saved = 0;
    cudaStream_t s = NULL;
    cudaError_t e = cudaGetDevice(&saved);
    if (e == cudaSuccess) e = cudaSetDevice(comm->cuda_dev);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMemsetAsync(buf, 0, total, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (s) cudaStreamDestroy(s);
    (void)cudaSetDevice(saved);
    if (e != cudaSuccess) {
      WARN("%s: rank %d: zeroing the resource buffer: %s", fn, comm->rank, cudaGetErrorString(e));
      res = ncclUnhandledCudaError;
      goto free_buf;
    }
#endif
    WEFT_CHECK_GOTO(api_window_register_now(comm, fn, buf, total, &rw), res, free_buf);
    if (lsa_size > 1 && !rw->lsa) {
      WARN("%s: rank %d: the resource buffer could not be mapped on every LSA peer "
           "(NCCL_DEBUG_SUBSYS=REG says why)", fn, comm->rank);
      res = ncclSystemError;
      goto release;
    }
  }
  WEFT_CHECK_GOTO(api_devwin_table(comm, &table), res, release);
  if (t->gin) WEFT_CHECK_GOTO(gin_setup(comm, &gin), res, release);
  fill_devcomm(t->out, t->layout, t->version, comm, lsa_size, lsa_rank, table, rw, lsa_handle,
               t->lsa_barriers, hybrid_handle, &gin);
  INFO(NCCL_INIT, "%s: rank %d: device communicator: LSA team %d, %d LSA barriers, %zu bytes "
       "of resources%s", fn, comm->rank, lsa_size, t->lsa_barriers, total,
       t->gin ? ", GIN (proxy)" : "");
  goto done;
release:
  if (rw) api_window_release(comm, fn, rw->dev_win ? rw->dev_win : (void*)rw);
free_buf:
  if (buf) pncclMemFree(buf);
done:
  free(t->res);
  free(t);
  return res;
}

WEFT_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
         ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                               ncclDevComm_t* outDevComm) {
  const char* fn = "ncclDevCommCreate";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, reqs);
  WEFT_ARG_NONNULL(fn, outDevComm);
  ncclDevVersionedHead_t h;
  memcpy(&h, reqs, sizeof h);
  if (h.magic != NCCL_API_MAGIC) {
    WARN("%s: reqs->magic = 0x%x is not NCCL_API_MAGIC: initialize reqs with "
         "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER", fn, h.magic);
    return ncclInvalidUsage;
  }
  ncclDevCommLayout_t layout = ncclDevCommLayoutOf(h.version);
  if (layout == NCCL_DEVCOMM_LAYOUT_UNKNOWN) {
    char theirs[24], ours[24];
    version_text(h.version, theirs, sizeof theirs);
    version_text(NCCL_VERSION_CODE, ours, sizeof ours);
    WARN("%s: reqs comes from NCCL %s headers; weft %s (NCCL %s) fills the device communicator "
         "of NCCL 2.29.2, 2.29.3, 2.29.5 - 2.29.7, 2.30.x and 2.32.6 headers only", fn, theirs,
         WEFT_VERSION_STRING, ours);
    return ncclInvalidUsage;
  }
  if (h.size < ncclDevCommRequirementsSizeOf(layout)) {
    WARN("%s: reqs->size = %zu is smaller than NCCL's ncclDevCommRequirements of version %u "
         "(%zu)", fn, h.size, h.version, ncclDevCommRequirementsSizeOf(layout));
    return ncclInvalidArgument;
  }
  if (comm->mode != WEFT_MODE_DEVICE) {
    WARN("%s: comm %p rank %d runs in host mode (no GPU, or WEFT_DEVICE=host): the device API "
         "needs a device communicator", fn, (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  devlayout_reqs v;
  WEFT_CHECK(devlayout_reqs_read(fn, comm->rank, layout, reqs, &v));
  WEFT_CHECK(check_reqs(fn, comm, layout, h.version, &v));
  devcomm_task* t = calloc(1, sizeof *t);
  int n = 0;
  for (const ncclDevResourceRequirements_v2_30_t* r = v.list; r; r = r->next) n++;
  if (t) t->res = calloc((size_t)(n ? n : 1), sizeof *t->res);
  if (!t || !t->res) {
    free(t);
    WARN("%s: out of memory", fn);
    return ncclSystemError;
  }
  t->layout = layout;
  t->version = h.version;
  t->lsa_barriers = v.lsa_barriers;
  t->gin = v.gin_force || v.gin_connection != 0; /* check_reqs refused what weft cannot give */
  t->gin_contexts = v.gin_contexts > 0 ? v.gin_contexts : 1;
  t->gin_signals = v.gin_signals;
  t->gin_counters = v.gin_counters;
  t->world_gin_barriers = v.world_gin_barriers;
  t->rail_gin_barriers = v.rail_gin_barriers;
  t->out = outDevComm;
  t->nres = n;
  int i = 0;
  for (const ncclDevResourceRequirements_v2_30_t* r = v.list; r; r = r->next, i++)
    t->res[i] = (resource){r->bufferSize,       r->bufferAlign,      r->outBufferHandle,
                           r->ginSignalCount,   r->ginCounterCount,  r->outGinSignalStart,
                           r->outGinCounterStart};
  return group_depth() > 0 ? group_defer_job(comm, devcomm_job, t) : devcomm_job(comm, t);
}

WEFT_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm) {
  const char* fn = "ncclDevCommDestroy";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, devComm);
  ncclDevCommHead_t h;
  memcpy(&h, devComm, sizeof h);
  /* A versioned device communicator names its layout; 2.29's has none and starts with the
   * rank and nRanks, which must then be this communicator's. */
  ncclDevCommLayout_t layout = ncclDevCommLayoutOfDevComm(&h);
  int rank = -1, nranks = -1;
  uintptr_t rwin = 0;
  devlayout_read(layout, devComm, &rank, &nranks, &rwin);
  if (layout == NCCL_DEVCOMM_LAYOUT_UNKNOWN) {
    WARN("%s: devComm %p (magic 0x%x, version %u) was not made by ncclDevCommCreate", fn,
         (const void*)devComm, h.magic, h.version);
    return ncclInvalidArgument;
  }
  if (rank != comm->rank || nranks != comm->nranks) {
    WARN("%s: devComm %p (%s, rank %d of %d) was not made by ncclDevCommCreate for comm %p "
         "(rank %d of %d)", fn, (const void*)devComm,
         ncclDevCommLayoutVersioned(layout) ? "versioned" : "unversioned: NCCL 2.29 headers",
         rank, nranks, (void*)comm, comm->rank, comm->nranks);
    return ncclInvalidArgument;
  }
  /* GIN first: the proxy reaches the windows. */
  if (devlayout_gin_contexts(layout, devComm) > 0) gin_comm_destroy(comm);
  if (!rwin) return ncclSuccess; /* no resources were asked for: nothing to free */
  struct ncclComm* owner;
  void* buff;
  size_t size;
  weft_window_lsa* lsa;
  WEFT_CHECK(api_window_find(fn, (ncclWindow_t)rwin, &owner, &buff, &size, &lsa));
  if (owner != comm) {
    WARN("%s: devComm %p belongs to comm %p, not to comm %p", fn, (const void*)devComm,
         (void*)owner, (void*)comm);
    return ncclInvalidArgument;
  }
  WEFT_CHECK(api_window_release(comm, fn, (const void*)rwin));
  return pncclMemFree(buff);
}
