/* The proxy GIN type of one communicator (gin_comm.h): backend, shared memory, proxy, windows.
 *
 * Create, on every rank: open the backend (a loaded RMA plugin, else the built-in socket net's
 * RMA table: init, devices > 0) and listen on its device 0; allgather {usable, CUDA pointers,
 * backend name, listen handle}; every rank must have the same backend, else every rank fails
 * naming the odd one. connect the group with every handle, createContext with the device
 * communicator's context count, allocate the memory, create the proxy (collective
 * registrations, in the same order everywhere), register every symmetric window in comm->regs'
 * order, start the proxy thread, and allgather each rank's result so that no rank's kernel puts
 * before every rank has registered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "gin/gin_comm.h"
#include "gin/gin_proxy.h"
#include "plugin/kind.h"
#include "plugin/net.h"
#include "util/check.h"
#include "util/log.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

/* The queue size of every context and peer: NCCL's default for a one-request backend
 * (NCCL_NET_MAX_REQUESTS). */
#define GIN_COMM_QUEUE_SIZE 32u

typedef struct {
  weft_mem_reg* reg;
  uint64_t handle;
  void* mh; /* direct mode: the backend's registration */
} gin_win;

struct weft_gin {
  struct ncclComm* comm;
  weft_kind_plugin* plugin; /* a loaded RMA plugin, or NULL: the built-in table */
  const ncclRma_v15_t* rma;
  void* init_ctx; /* the built-in table's init context */
  void* listen;
  void* coll;
  void* ctx;
  int staged;
  gin_proxy_config cfg;
  gin_proxy* proxy;
  /* mapped host memory (host views; the device views are cudaHostGetDevicePointer's) */
  void *queues, *cis, *counters, *signals;
  void* signals_mh;
  void* dev; /* one device allocation: ctx array, pis, get indices, signal offsets, shadows */
  cudaStream_t stream; /* staged copies */
  gin_win* wins;
  int nwins, cap_wins;
};

typedef struct {
  int usable, cuda_ptrs;
  char backend[32];
  _Alignas(16) char handle[NCCL_NET_HANDLE_MAXSIZE];
} gin_hello;

static ncclResult_t cuda_fail(struct ncclComm* comm, const char* what, cudaError_t e) {
  WARN("GIN: rank %d: %s: %s", comm->rank, what, cudaGetErrorString(e));
  return ncclUnhandledCudaError;
}

int gin_comm_possible(const struct ncclComm* comm) {
  return comm->mode == WEFT_MODE_DEVICE && net_builtin_rma() != NULL;
}

int gin_comm_active(const struct ncclComm* comm) { return comm->gin != NULL; }

/* Staged mode's copies, on the proxy thread: a stream of the proxy's own that waits for no
 * other (kernels of this process spin on the legacy stream while the proxy serves them). */
static ncclResult_t copy(struct weft_gin* g, void* dst, const void* src, size_t n,
                         enum cudaMemcpyKind kind) {
  cudaError_t e = cudaSetDevice(g->comm->cuda_dev);
  if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, n, kind, g->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
  return e == cudaSuccess ? ncclSuccess : cuda_fail(g->comm, "a staged GIN copy", e);
}

static ncclResult_t copy_in(void* arg, void* window_mem, const void* host, size_t n) {
  return copy(arg, window_mem, host, n, cudaMemcpyHostToDevice);
}

static ncclResult_t copy_out(void* arg, void* host, const void* window_mem, size_t n) {
  return copy(arg, host, window_mem, n, cudaMemcpyDeviceToHost);
}

/* Open the backend and listen on its device 0: 1 when usable (hello filled). */
static int backend_open(struct weft_gin* g, gin_hello* h) {
  struct ncclComm* comm = g->comm;
  char net_lib[PATH_MAX];
  if (!net_external_library(net_lib, sizeof net_lib)) net_lib[0] = '\0';
  weft_kind_plugin* p = NULL;
  if (kind_plugin_open(WEFT_KIND_RMA, net_lib[0] ? net_lib : NULL, comm->comm_hash, &p) ==
          ncclSuccess && p) {
    g->plugin = p;
    g->rma = &p->rma;
    g->init_ctx = p->ctx;
  } else {
    g->rma = net_builtin_rma();
    if (!g->rma) return 0;
    int ndev = 0;
    if (g->rma->init(&g->init_ctx, comm->comm_hash, weft_log) != ncclSuccess) {
      WARN("GIN: rank %d: the built-in RMA table's init failed", comm->rank);
      g->init_ctx = NULL;
      return 0;
    }
    if (g->rma->devices(&ndev) != ncclSuccess || ndev < 1) {
      WARN("GIN: rank %d: the built-in RMA table has no device", comm->rank);
      return 0;
    }
  }
  snprintf(h->backend, sizeof h->backend, "%.31s", g->rma->name ? g->rma->name : "?");
  ncclNetProperties_v12_t props;
  memset(&props, 0, sizeof props);
  if (g->rma->getProperties(0, &props) == ncclSuccess)
    h->cuda_ptrs = (props.ptrSupport & NCCL_PTR_CUDA) != 0;
  ncclResult_t r = g->rma->listen(g->init_ctx, 0, h->handle, &g->listen);
  if (r != ncclSuccess) {
    WARN("GIN: rank %d: backend %s: listen on device 0 failed (%d)", comm->rank, h->backend,
         (int)r);
    g->listen = NULL;
    return 0;
  }
  return 1;
}

/* Mapped host memory, zeroed: *host and its device address. */
static ncclResult_t host_alloc(struct weft_gin* g, size_t bytes, void** host, uintptr_t* dev) {
  *host = NULL;
  *dev = 0;
  if (bytes == 0) return ncclSuccess;
  cudaError_t e = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  void* d = NULL;
  if (e == cudaSuccess) {
    memset(*host, 0, bytes);
    e = cudaHostGetDevicePointer(&d, *host, 0);
  }
  if (e != cudaSuccess) return cuda_fail(g->comm, "allocating mapped host memory for GIN", e);
  *dev = (uintptr_t)d;
  return ncclSuccess;
}

static ncclResult_t win_add(struct weft_gin* g, weft_mem_reg* r, uint64_t* handle) {
  *handle = 0;
  if (g->nwins == g->cap_wins) {
    int cap = g->cap_wins ? 2 * g->cap_wins : 16;
    gin_win* w = realloc(g->wins, (size_t)cap * sizeof *w);
    if (!w) {
      WARN("GIN: rank %d: out of memory for the window list", g->comm->rank);
      return ncclSystemError;
    }
    g->wins = w;
    g->cap_wins = cap;
  }
  gin_win w = {r, 0, NULL};
  if (g->staged) {
    WEFT_CHECK(gin_proxy_window_add(g->proxy, r->buff, r->size, &w.handle));
  } else {
    ncclResult_t res =
        g->plugin ? kind_plugin_reg_window(g->plugin, g->coll, r->buff, r->size, NCCL_PTR_CUDA,
                                           r->win_flags, &w.mh)
                  : g->rma->regMrSym(g->coll, r->buff, r->size, NCCL_PTR_CUDA, 0, &w.mh);
    if (res != ncclSuccess) {
      WARN("GIN: rank %d: registering window %p (%zu bytes) with %s failed (%d)", g->comm->rank,
           r->buff, r->size, g->rma->name ? g->rma->name : "the backend", (int)res);
      return res;
    }
    w.handle = (uint64_t)(uintptr_t)w.mh;
  }
  g->wins[g->nwins++] = w;
  *handle = w.handle;
  return ncclSuccess;
}

static int gin_window_eligible(const weft_mem_reg* r) {
  return r->window && (r->win_flags & NCCL_WIN_COLL_SYMMETRIC) && r->dev_win;
}

static void teardown(struct weft_gin* g) {
  struct ncclComm* comm = g->comm;
  if (g->proxy) gin_proxy_destroy(g->proxy);
  g->proxy = NULL;
  for (int i = 0; i < g->nwins; i++)
    if (g->wins[i].mh && g->rma->deregMrSym(g->coll, g->wins[i].mh) != ncclSuccess)
      WARN("GIN: rank %d: deregistering a window from %s failed", comm->rank, g->rma->name);
  free(g->wins);
  if (g->signals_mh && g->rma->deregMrSym(g->coll, g->signals_mh) != ncclSuccess)
    WARN("GIN: rank %d: deregistering the signals from %s failed", comm->rank, g->rma->name);
  if (g->ctx && g->rma->destroyContext(g->ctx) != ncclSuccess)
    WARN("GIN: rank %d: %s destroyContext failed", comm->rank, g->rma->name);
  if (g->coll && g->rma->closeColl(g->coll) != ncclSuccess)
    WARN("GIN: rank %d: %s closeColl failed", comm->rank, g->rma->name);
  if (g->listen) (void)g->rma->closeListen(g->listen);
  if (g->plugin) kind_plugin_close(g->plugin);
  else if (g->init_ctx && g->rma->finalize) (void)g->rma->finalize(g->init_ctx);
  int saved = 0;
  if (cudaGetDevice(&saved) == cudaSuccess && cudaSetDevice(comm->cuda_dev) == cudaSuccess) {
    if (g->stream) cudaStreamDestroy(g->stream);
    if (g->dev) cudaFree(g->dev);
    void* host[4] = {g->queues, g->cis, g->counters, g->signals};
    for (int i = 0; i < 4; i++)
      if (host[i]) cudaFreeHost(host[i]);
    (void)cudaSetDevice(saved);
  }
  free(g);
}

/* The part that runs after every rank agreed on the backend. */
static ncclResult_t setup(struct weft_gin* g, const gin_comm_req* req, gin_hello* all,
                          gin_comm_dev* out) {
  struct ncclComm* comm = g->comm;
  int n = comm->nranks, nx = req->ncontexts;
  void** handles = calloc((size_t)n, sizeof *handles);
  if (!handles) return ncclSystemError;
  for (int i = 0; i < n; i++) handles[i] = all[i].handle;
  ncclResult_t res = g->rma->connect(g->init_ctx, handles, n, comm->rank, g->listen, &g->coll);
  free(handles);
  if (res != ncclSuccess) {
    WARN("GIN: rank %d: %s connect failed (%d)", comm->rank, g->rma->name, (int)res);
    return res;
  }
  (void)g->rma->closeListen(g->listen);
  g->listen = NULL;
  ncclRmaConfig_v15_t config = {.nContexts = nx, .trafficClass = comm->config.trafficClass,
                                .rankStride = 1};
  if (config.trafficClass < 0) config.trafficClass = 0;
  res = g->rma->createContext(g->coll, &config, &g->ctx);
  if (res != ncclSuccess) {
    WARN("GIN: rank %d: %s createContext (%d contexts) failed (%d)", comm->rank, g->rma->name, nx,
         (int)res);
    g->ctx = NULL;
    return res;
  }
  uint32_t qs = GIN_COMM_QUEUE_SIZE;
  size_t nsig = (size_t)nx * (size_t)req->nsignals, ncnt = (size_t)nx * (size_t)req->ncounters;
  size_t idx = (size_t)nx * (size_t)n * sizeof(uint32_t);
  gin_proxy_kernel_addrs a;
  memset(&a, 0, sizeof a);
  WEFT_CHECK(host_alloc(g, gin_proxy_queues_bytes(nx, n, qs), &g->queues, &a.queues));
  WEFT_CHECK(host_alloc(g, gin_proxy_cis_bytes(nx, n), &g->cis, &a.cis));
  WEFT_CHECK(host_alloc(g, ncnt * sizeof(uint64_t), &g->counters, &a.counters));
  WEFT_CHECK(host_alloc(g, nsig * sizeof(uint64_t), &g->signals, &a.signals));
  /* Device: [ctx array][pis][last issued get][last visible get][signal offsets][shadows]. */
  size_t ctx_bytes = (size_t)nx * sizeof(ncclGinProxyGpuCtx_v2_30_t);
  size_t off_pis = (ctx_bytes + 255) / 256 * 256, off_lig = off_pis + idx, off_lvg = off_lig + idx;
  size_t off_so = (off_lvg + idx + 7) / 8 * 8, off_sh = off_so + nsig * sizeof(uint64_t);
  size_t dev_bytes = off_sh + nsig * sizeof(uint64_t);
  cudaError_t e = cudaMalloc(&g->dev, dev_bytes);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMemsetAsync(g->dev, 0, dev_bytes, g->stream);
  uintptr_t d = (uintptr_t)g->dev;
  a.pis = d + off_pis;
  a.last_issued_get = d + off_lig;
  a.last_visible_get = d + off_lvg;
  a.signal_offsets = d + off_so;
  ncclGinProxyGpuCtx_v2_30_t* ctxs = calloc((size_t)nx, sizeof *ctxs);
  if (!ctxs) return ncclSystemError;
  gin_proxy_fill_gpu_ctx(ctxs, nx, n, qs, req->nsignals, req->ncounters, &a);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(g->dev, ctxs, ctx_bytes, cudaMemcpyHostToDevice, g->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
  free(ctxs);
  if (e != cudaSuccess) return cuda_fail(comm, "allocating the GIN proxy's device memory", e);
  g->staged = 0;
  for (int i = 0; i < n; i++)
    if (!all[i].cuda_ptrs) g->staged = 1;
  if (!g->staged && nsig > 0) {
    res = g->plugin ? kind_plugin_reg_window(g->plugin, g->coll, g->signals,
                                             nsig * sizeof(uint64_t), NCCL_PTR_HOST,
                                             NCCL_WIN_STRICT_ORDERING, &g->signals_mh)
                    : g->rma->regMrSym(g->coll, g->signals, nsig * sizeof(uint64_t),
                                       NCCL_PTR_HOST, NCCL_NET_MR_FLAG_FORCE_SO, &g->signals_mh);
    if (res != ncclSuccess) {
      WARN("GIN: rank %d: registering the signals with %s failed (%d)", comm->rank,
           g->rma->name, (int)res);
      g->signals_mh = NULL;
      return res;
    }
  }
  g->cfg = (gin_proxy_config){
      .rank = comm->rank, .nranks = n, .ncontexts = nx, .nsignals = req->nsignals,
      .ncounters = req->ncounters, .queue_size = qs, .rma = g->rma, .coll = g->coll,
      .ctx = g->ctx, .signals_mh = g->signals_mh, .queues = g->queues, .cis = g->cis,
      .counters = g->counters, .on_error = req->on_error, .on_error_arg = req->on_error_arg,
      .staged = g->staged, .copy_in = copy_in, .copy_out = copy_out, .copy_arg = g,
      .signals_host = g->signals};
  WEFT_CHECK(gin_proxy_create(&g->cfg, &g->proxy));
  pthread_mutex_lock(&comm->lock);
  int nregs = 0;
  for (weft_mem_reg* r = comm->regs; r; r = r->next) nregs += gin_window_eligible(r);
  weft_mem_reg** regs = calloc((size_t)(nregs ? nregs : 1), sizeof *regs);
  int k = 0;
  for (weft_mem_reg* r = comm->regs; regs && r; r = r->next)
    if (gin_window_eligible(r)) regs[k++] = r;
  pthread_mutex_unlock(&comm->lock);
  if (!regs) return ncclSystemError;
  /* comm->regs lists windows newest first; every rank registered the same symmetric windows
   * in the same order, so the reverse walk is the same everywhere. */
  for (int i = k - 1; i >= 0 && res == ncclSuccess; i--) {
    uint64_t h;
    res = win_add(g, regs[i], &h);
  }
  free(regs);
  WEFT_CHECK(res);
  WEFT_CHECK(gin_proxy_start(g->proxy));
  out->handle = d;
  out->shadows = d + off_sh;
  out->queue_size = qs;
  out->staged = g->staged;
  return ncclSuccess;
}

ncclResult_t gin_comm_create(struct ncclComm* comm, const gin_comm_req* req, gin_comm_dev* out) {
  memset(out, 0, sizeof *out);
  if (comm->gin) {
    WARN("GIN: rank %d: this communicator already has a device communicator with GIN; weft "
         "serves one at a time (destroy it first)", comm->rank);
    return ncclInvalidUsage;
  }
  if (req->ncontexts < 1 || req->nsignals < 0 || req->ncounters < 0) {
    WARN("GIN: rank %d: %d contexts, %d signals, %d counters: bad counts", comm->rank,
         req->ncontexts, req->nsignals, req->ncounters);
    return ncclInvalidArgument;
  }
  struct weft_gin* g = calloc(1, sizeof *g);
  gin_hello* all = calloc((size_t)comm->nranks, sizeof *all);
  if (!g || !all) {
    free(g);
    free(all);
    WARN("GIN: rank %d: out of memory", comm->rank);
    return ncclSystemError;
  }
  g->comm = comm;
  int saved = 0;
  cudaError_t ce = cudaGetDevice(&saved);
  if (ce == cudaSuccess) ce = cudaSetDevice(comm->cuda_dev);
  if (ce != cudaSuccess) {
    free(all);
    free(g);
    return cuda_fail(comm, "selecting the device", ce);
  }
  gin_hello* mine = &all[comm->rank];
  mine->usable = backend_open(g, mine);
  ncclResult_t res = bootstrap_allgather(comm->bootstrap, all, sizeof *all);
  for (int i = 0; i < comm->nranks && res == ncclSuccess; i++) {
    if (!all[i].usable) {
      WARN("GIN: rank %d: rank %d has no usable one-sided backend for the GIN proxy", comm->rank,
           i);
      res = ncclInvalidUsage;
    } else if (strncmp(all[i].backend, all[0].backend, sizeof all[i].backend) != 0) {
      WARN("GIN: rank %d: rank %d's GIN backend is %.31s, rank 0's %.31s: every rank needs the "
           "same (NCCL_RMA_PLUGIN)", comm->rank, i, all[i].backend, all[0].backend);
      res = ncclInvalidUsage;
    }
  }
  if (res == ncclSuccess) res = setup(g, req, all, out);
  /* Every rank's registrations are in place before any kernel puts. */
  int* oks = (int*)all;
  oks[comm->rank] = (int)res;
  ncclResult_t ag = bootstrap_allgather(comm->bootstrap, oks, sizeof *oks);
  for (int i = 0; i < comm->nranks && ag == ncclSuccess && res == ncclSuccess; i++)
    if (oks[i] != ncclSuccess) {
      WARN("GIN: rank %d: rank %d could not set up GIN (%d)", comm->rank, i, oks[i]);
      res = ncclRemoteError;
    }
  if (res == ncclSuccess) res = ag;
  free(all);
  if (res != ncclSuccess) {
    teardown(g);
    (void)cudaSetDevice(saved);
    memset(out, 0, sizeof *out);
    return res;
  }
  (void)cudaSetDevice(saved);
  comm->gin = g;
  INFO(NCCL_INIT | NCCL_NET, "GIN: rank %d: proxy GIN over %s%s: %d context(s), %d signals and "
       "%d counters each, %d window(s)", comm->rank, g->rma->name ? g->rma->name : "?",
       g->staged ? " (staged through host memory)" : "", req->ncontexts, req->nsignals,
       req->ncounters, g->nwins);
  return ncclSuccess;
}

ncclResult_t gin_comm_window_add(struct ncclComm* comm, weft_mem_reg* r, uint64_t* handle) {
  *handle = 0;
  struct weft_gin* g = comm->gin;
  if (!g || !gin_window_eligible(r)) return ncclSuccess;
  return win_add(g, r, handle);
}

uint64_t gin_comm_window_handle(const struct ncclComm* comm, const weft_mem_reg* r) {
  const struct weft_gin* g = comm->gin;
  for (int i = 0; g && i < g->nwins; i++)
    if (g->wins[i].reg == r) return g->wins[i].handle;
  return 0;
}

void gin_comm_window_remove(struct ncclComm* comm, weft_mem_reg* r) {
  struct weft_gin* g = comm->gin;
  for (int i = 0; g && i < g->nwins; i++) {
    if (g->wins[i].reg != r) continue;
    /* Staged: the proxy's window entry stays (handles are positions); it is never reached
     * once no kernel holds the window. */
    if (g->wins[i].mh && g->rma->deregMrSym(g->coll, g->wins[i].mh) != ncclSuccess)
      WARN("GIN: rank %d: deregistering window %p from %s failed", comm->rank, r->buff,
           g->rma->name);
    g->wins[i] = g->wins[--g->nwins];
    return;
  }
}

void gin_comm_stop(struct ncclComm* comm) {
  struct weft_gin* g = comm->gin;
  if (!g || !g->proxy) return;
  gin_proxy_destroy(g->proxy);
  g->proxy = NULL;
}

void gin_comm_destroy(struct ncclComm* comm) {
  struct weft_gin* g = comm->gin;
  if (!g) return;
  comm->gin = NULL;
  teardown(g);
}

#else /* !WEFT_HAVE_CUDA: device-API kernels need CUDA; nothing to set up. */

int gin_comm_possible(const struct ncclComm* comm) {
  (void)comm;
  return 0;
}

int gin_comm_active(const struct ncclComm* comm) { return comm->gin != NULL; }

ncclResult_t gin_comm_create(struct ncclComm* comm, const gin_comm_req* req, gin_comm_dev* out) {
  (void)req;
  memset(out, 0, sizeof *out);
  WARN("GIN: rank %d: weft was built without CUDA: no device-API GIN", comm->rank);
  return ncclInvalidUsage;
}

ncclResult_t gin_comm_window_add(struct ncclComm* comm, weft_mem_reg* r, uint64_t* handle) {
  (void)comm, (void)r;
  *handle = 0;
  return ncclSuccess;
}

uint64_t gin_comm_window_handle(const struct ncclComm* comm, const weft_mem_reg* r) {
  (void)comm, (void)r;
  return 0;
}

void gin_comm_window_remove(struct ncclComm* comm, weft_mem_reg* r) { (void)comm, (void)r; }
void gin_comm_stop(struct ncclComm* comm) { (void)comm; }
void gin_comm_destroy(struct ncclComm* comm) { (void)comm; }
#endif
