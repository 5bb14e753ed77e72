/* One-sided traffic through a loaded RMA plugin (host mode; rma.h for the semantics).
 *
 * At the first symmetric window (rma_connect, after the FIFOs are up), every rank opens the RMA
 * plugin as NCCL finds one (plugin/kind.h: NCCL_RMA_PLUGIN, libnccl-rma.so, the last GIN
 * library, the net library) and listens on its device 0; the ranks exchange {usable, handle}
 * and, only when every rank has a plugin, connect its group (connect takes every rank's
 * handle), create one context, and register, in the same order everywhere (a plugin may number
 * registrations by order): the signal memory ((nranks + 1) 64-bit words, FORCE_SO, as NCCL's
 * proxy registers its own; the word of source rank s is at s * 8), then every symmetric window
 * (rma_window_add registers the later ones, and api/ then calls rma_window_sync, a barrier); a
 * last allgather of the results makes every rank's registrations precede any put. The peers
 * whose FIFO goes over the net (other hosts, or every peer with shm off) then go through the
 * plugin; the others keep their FIFO. The FIFOs stay connected to every peer: their connection
 * state is what tells a wait that a peer died.
 *
 * A put is one iputSignal (signal op INC on the target's word for this rank, strong) from the
 * source's window (api/ checked that one holds it) into the target's window (its registration
 * here names the peer's, as every symmetric registration does); a bare signal is iputSignal with
 * no data and no registrations. Each request is tested until done before the call returns (the
 * source may then be reused), bounded like every one-sided wait. A wait reads the signal word
 * the plugin wrote (rma_plugin_signals, acquire). The first error of the plugin is logged once
 * with its name, the call, the rank and the peer; the communicator is failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "plugin/kind.h"
#include "plugin/net.h"
#include "plugin/plugin_open.h"
#include "rma/rma_internal.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/clock.h"

struct rma_plug {
  weft_kind_plugin* p;
  void* listen;
  void* coll;
  void* ctx;
  uint64_t* sig; /* nranks + 1 words written by the plugin */
  void* sig_mh;
  int warned; /* atomic: the first error was logged */
};

/* What a rank tells the others at connect. */
typedef struct {
  int usable;
  /* Aligned as malloc'd memory is: plugins read their handle as a struct of 64-bit fields
   * (UBSan's alignment check caught the socket plugin's at offset 4). */
  _Alignas(16) char handle[NCCL_NET_HANDLE_MAXSIZE];
} plug_hello;

/* Log the plugin's first error (once) naming the call and the peer (-1: none), fail the
 * communicator, return res. */
static ncclResult_t plug_fail(struct weft_rma* r, const char* call, int peer, ncclResult_t res) {
  struct rma_plug* g = r->plug;
  if (__atomic_exchange_n(&g->warned, 1, __ATOMIC_ACQ_REL) == 0) {
    char to[32] = "";
    if (peer >= 0) snprintf(to, sizeof to, " to rank %d", peer);
    WARN("rank %d: RMA plugin %s (%s): %s%s returned %s", r->comm->rank, g->p->name, g->p->path,
         call, to, plugin_result_name(res));
  }
  rma_comm_failed(r->comm, res);
  return res;
}

ncclResult_t rma_window_sync(struct ncclComm* comm) {
  struct weft_rma* r = comm->rma;
  if (!r || !r->plug) return ncclSuccess;
  return bootstrap_barrier(comm->bootstrap);
}

uint64_t rma_plugin_signals(const struct weft_rma* r, int p) {
  return r->plug ? __atomic_load_n(&r->plug->sig[p], __ATOMIC_ACQUIRE) : 0;
}

const char* rma_plugin_gone(struct weft_rma* r) {
  struct rma_plug* g = r->plug;
  if (!g || !g->p->rma.queryLastError) return NULL;
  bool bad = false;
  if (g->p->rma.queryLastError(g->ctx, &bad) != ncclSuccess || bad)
    return "the RMA plugin reports an error (queryLastError)";
  return NULL;
}

static ncclResult_t plug_reg(struct weft_rma* r, void* data, size_t size, int win_flags,
                             void** mh) {
  struct rma_plug* g = r->plug;
  ncclResult_t res = kind_plugin_reg_window(g->p, g->coll, data, size, NCCL_PTR_HOST, win_flags,
                                            mh);
  if (res != ncclSuccess) { /* kind_plugin_reg_window logged it */
    __atomic_store_n(&g->warned, 1, __ATOMIC_RELEASE);
    *mh = NULL;
  }
  return res;
}

ncclResult_t rma_plugin_reg_window(struct weft_rma* r, rma_window* w) {
  if (!r->plug || w->mh || !w->reg) return ncclSuccess;
  return plug_reg(r, w->buff, w->size, w->reg->win_flags, &w->mh);
}

void rma_plugin_dereg_window(struct weft_rma* r, rma_window* w) {
  struct rma_plug* g = r->plug;
  if (!g || !w->mh) return;
  ncclResult_t res = g->p->rma.deregMrSym(g->coll, w->mh);
  if (res != ncclSuccess) plug_fail(r, "deregMrSym", -1, res);
  w->mh = NULL;
}

/* Test req until done, bounded like every one-sided wait; a peer known gone fails it. */
static ncclResult_t plug_complete(struct weft_rma* r, const char* fn, int peer, void* req) {
  struct rma_plug* g = r->plug;
  weft_backoff bo = {0};
  uint64_t start = clock_ms(), next_check = start;
  for (;;) {
    int done = 0;
    ncclResult_t res = g->p->rma.test(g->coll, req, &done);
    if (res != ncclSuccess) return plug_fail(r, "test", peer, res);
    if (done) return ncclSuccess;
    if (g->p->rma.rmaProgress && (res = g->p->rma.rmaProgress(g->ctx)) != ncclSuccess)
      return plug_fail(r, "rmaProgress", peer, res);
    WEFT_CHECK(rma_call_check(r, fn, peer, r->peers[peer].send,
                              "the RMA plugin to complete its request", start, &next_check));
    backoff_wait(&bo);
  }
}

/* The registration and offset of [src, src + bytes) inside a registered window, if any. */
static void* src_window(struct weft_rma* r, const void* src, size_t bytes, uint64_t* off) {
  void* mh = NULL;
  const char* s = src;
  pthread_rwlock_rdlock(&r->windows_lock);
  for (uint64_t i = 0; i < r->nwindows && !mh; i++) {
    const rma_window* w = &r->windows[i];
    if (w->mh && w->reg && s >= w->buff && (size_t)(s - w->buff) <= w->size &&
        bytes <= w->size - (size_t)(s - w->buff)) {
      mh = w->mh;
      *off = (uint64_t)(s - w->buff);
    }
  }
  pthread_rwlock_unlock(&r->windows_lock);
  return mh;
}

ncclResult_t rma_plugin_put(struct weft_rma* r, const char* fn, const void* src, size_t bytes,
                            int peer, uint64_t number, size_t offset) {
  struct rma_plug* g = r->plug;
  const ncclRma_v15_t* t = &g->p->rma;
  uint64_t sig_off = (uint64_t)r->comm->rank * sizeof(uint64_t);
  void* req = NULL;
  ncclResult_t res;
  if (bytes == 0) {
    res = t->iputSignal(g->ctx, 0, 0, NULL, 0, 0, NULL, (uint32_t)peer, sig_off, g->sig_mh, 1,
                        NCCL_GIN_SIGNAL_OP_INC, true, 0, &req);
    if (res != ncclSuccess) return plug_fail(r, "iputSignal", peer, res);
    return plug_complete(r, fn, peer, req);
  }
  pthread_rwlock_rdlock(&r->windows_lock);
  void* dst_mh = number < r->nwindows ? r->windows[number].mh : NULL;
  pthread_rwlock_unlock(&r->windows_lock);
  if (!dst_mh) {
    WARN("rank %d: %s to rank %d: one-sided window %llu is not registered with the RMA plugin",
         r->comm->rank, fn, peer, (unsigned long long)number);
    return ncclInternalError;
  }
  uint64_t src_off = 0;
  void* src_mh = src_window(r, src, bytes, &src_off);
  if (!src_mh) { /* api/ checked that a symmetric window holds it */
    WARN("rank %d: %s to rank %d: the source %p (%zu bytes) is in no window registered with the "
         "RMA plugin", r->comm->rank, fn, peer, src, bytes);
    return ncclInternalError;
  }
  res = t->iputSignal(g->ctx, 0, src_off, src_mh, bytes, offset, dst_mh, (uint32_t)peer, sig_off,
                      g->sig_mh, 1, NCCL_GIN_SIGNAL_OP_INC, true, 0, &req);
  if (res != ncclSuccess) return plug_fail(r, "iputSignal", peer, res);
  return plug_complete(r, fn, peer, req);
}

/* Open the plugin and listen: 1 when this rank has one ready (hello filled), 0 when not. */
static int plug_open(struct weft_rma* r, plug_hello* hello) {
  struct ncclComm* comm = r->comm;
  char net_lib[PATH_MAX];
  if (!net_external_library(net_lib, sizeof net_lib)) net_lib[0] = '\0';
  weft_kind_plugin* p = NULL;
  if (kind_plugin_open(WEFT_KIND_RMA, net_lib[0] ? net_lib : NULL, comm->comm_hash, &p) !=
          ncclSuccess ||
      !p)
    return 0;
  struct rma_plug* g = calloc(1, sizeof *g);
  if (!g) {
    kind_plugin_close(p);
    return 0;
  }
  g->p = p;
  r->plug = g;
  ncclResult_t res = p->rma.listen(p->ctx, 0, hello->handle, &g->listen);
  if (res != ncclSuccess) { /* not fatal: every rank stays on the FIFOs */
    WARN("rank %d: RMA plugin %s (%s): listen on device 0 returned %s; one-sided traffic stays "
         "on the FIFOs", comm->rank, p->name, p->path, plugin_result_name(res));
    g->listen = NULL;
    return 0;
  }
  return 1;
}

/* Connect the group, create the context, register the signal, staging and window memory. */
static ncclResult_t plug_setup(struct weft_rma* r, plug_hello* all) {
  struct ncclComm* comm = r->comm;
  struct rma_plug* g = r->plug;
  const ncclRma_v15_t* t = &g->p->rma;
  int n = comm->nranks;
  void** handles = calloc((size_t)n, sizeof *handles);
  g->sig = calloc((size_t)n + 1, sizeof *g->sig);
  if (!handles || !g->sig) {
    free(handles);
    WARN("rank %d: out of memory for the RMA plugin's state (%d ranks)", comm->rank, n);
    return ncclSystemError;
  }
  for (int i = 0; i < n; i++) handles[i] = all[i].handle;
  ncclResult_t res = t->connect(g->p->ctx, handles, n, comm->rank, g->listen, &g->coll);
  free(handles);
  if (res != ncclSuccess) return plug_fail(r, "connect", -1, res);
  res = t->closeListen(g->listen); /* NCCL closes it once connected */
  g->listen = NULL;
  if (res != ncclSuccess) return plug_fail(r, "closeListen", -1, res);
  ncclRmaConfig_v15_t config = {.nContexts = 1, .trafficClass = comm->config.trafficClass,
                                .rankStride = 1};
  if (config.trafficClass < 0) config.trafficClass = 0;
  res = t->createContext(g->coll, &config, &g->ctx);
  if (res != ncclSuccess) return plug_fail(r, "createContext", -1, res);
  WEFT_CHECK(plug_reg(r, g->sig, ((size_t)n + 1) * sizeof *g->sig, NCCL_WIN_STRICT_ORDERING,
                      &g->sig_mh));
  pthread_rwlock_wrlock(&r->windows_lock);
  for (uint64_t i = 0; i < r->nwindows && res == ncclSuccess; i++)
    res = rma_plugin_reg_window(r, &r->windows[i]);
  pthread_rwlock_unlock(&r->windows_lock);
  return res;
}

ncclResult_t rma_plugin_connect(struct weft_rma* r) {
  struct ncclComm* comm = r->comm;
  int n = comm->nranks;
  plug_hello* all = calloc((size_t)n, sizeof *all);
  if (!all) {
    WARN("rank %d: out of memory for %d RMA plugin handles", comm->rank, n);
    return ncclSystemError;
  }
  int net_peers = 0;
  for (int p = 0; p < n; p++) {
    weft_conn_key key = {WEFT_CONN_RMA, 0, p, 1, NCCL_PROTO_SIMPLE};
    if (p != comm->rank && transport_kind_of(comm, &key) == WEFT_TRANSPORT_NET) net_peers++;
  }
  /* Without a peer over the net (one host, shm) no plugin is opened here. */
  all[comm->rank].usable = net_peers > 0 && plug_open(r, &all[comm->rank]);
  ncclResult_t res = bootstrap_allgather(comm->bootstrap, all, sizeof *all);
  int every = res == ncclSuccess;
  for (int i = 0; i < n && every; i++) every = all[i].usable;
  if (every) {
    /* Every rank's registrations are in place before any rank returns (and puts): a plugin
     * drops a put into memory its target has not registered yet. */
    res = plug_setup(r, all);
    int* oks = (int*)all; /* the handles are used: reuse the room for each rank's result */
    oks[comm->rank] = (int)res;
    ncclResult_t ag = bootstrap_allgather(comm->bootstrap, oks, sizeof *oks);
    for (int i = 0; i < n && ag == ncclSuccess && res == ncclSuccess; i++)
      if (oks[i] != ncclSuccess) {
        WARN("rank %d: rank %d could not set up the RMA plugin (%s)", comm->rank, i,
             plugin_result_name((ncclResult_t)oks[i]));
        res = ncclRemoteError;
      }
    if (res == ncclSuccess) res = ag;
  } else if (res == ncclSuccess && r->plug) {
    INFO(NCCL_INIT | NCCL_NET, "rank %d: not every rank has a usable RMA plugin: one-sided "
         "traffic stays on the FIFOs", comm->rank);
  }
  free(all);
  if (!every || res != ncclSuccess) {
    rma_plugin_fini(r);
    return res;
  }
  for (int p = 0; p < n; p++) {
    rma_peer* pp = &r->peers[p];
    if (p == comm->rank || !pp->send) continue;
    weft_conn_key key = {WEFT_CONN_RMA, 0, p, 1, NCCL_PROTO_SIMPLE};
    pp->via_plugin = transport_kind_of(comm, &key) == WEFT_TRANSPORT_NET;
    if (pp->via_plugin)
      INFO(NCCL_INIT | NCCL_NET, "rank %d: one-sided puts to rank %d go through RMA plugin %s "
           "(v%d, %s)", comm->rank, p, r->plug->p->name, r->plug->p->version, r->plug->p->path);
    else
      INFO(NCCL_INIT, "rank %d: one-sided puts to rank %d go through its FIFO (same host)",
           comm->rank, p);
  }
  return ncclSuccess;
}

void rma_plugin_fini(struct weft_rma* r) {
  struct rma_plug* g = r->plug;
  if (!g) return;
  const ncclRma_v15_t* t = &g->p->rma;
  pthread_rwlock_wrlock(&r->windows_lock);
  for (uint64_t i = 0; i < r->nwindows; i++) rma_plugin_dereg_window(r, &r->windows[i]);
  pthread_rwlock_unlock(&r->windows_lock);
  struct {
    const char* call;
    ncclResult_t res;
  } steps[4] = {{"deregMrSym", ncclSuccess}, {"destroyContext", ncclSuccess},
                {"closeColl", ncclSuccess}, {"closeListen", ncclSuccess}};
  if (g->sig_mh) steps[0].res = t->deregMrSym(g->coll, g->sig_mh);
  if (g->ctx) steps[1].res = t->destroyContext(g->ctx);
  if (g->coll) steps[2].res = t->closeColl(g->coll);
  if (g->listen) steps[3].res = t->closeListen(g->listen);
  for (int i = 0; i < 4; i++)
    if (steps[i].res != ncclSuccess) plug_fail(r, steps[i].call, -1, steps[i].res);
  for (int p = 0; p < r->comm->nranks; p++) r->peers[p].via_plugin = 0;
  kind_plugin_close(g->p);
  free(g->sig);
  free(g);
  r->plug = NULL;
}
