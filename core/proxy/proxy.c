/* The proxy thread (see proxy.h). Connections are appended to a fixed-capacity array (the
 * thread reads the count with acquire order, so adding never moves what it iterates); the
 * condition variable only guards sleeping and waking. */
#include "proxy/proxy.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/names.h"

#define PROXY_TAG 0x77

/* Profiler: one operation's share of a connection's steps [first, first + nsteps). */
typedef struct prof_seg {
  struct prof_seg* next;
  uint64_t first, nsteps;
  void* parent; /* the Coll/P2p event */
  void* op;     /* the ProxyOp event, once its first step moved */
  int peer;
} prof_seg;

typedef struct {
  weft_conn* conn;
  void* net_comm;
  void* mhandle;
  uint64_t posted; /* steps handed to the plugin */
  uint64_t done;   /* steps the plugin completed */
  uint64_t budget; /* recv: steps launched operations will consume (atomic, grows) */
  void* reqs[WEFT_NSTEPS];
  int flushing[WEFT_NSTEPS]; /* recv: reqs[slot] is the iflush of a completed receive */
  int got[WEFT_NSTEPS];      /* recv: bytes the receive delivered */
  int flush;                 /* WEFT_NET_FLUSH_* */
  int failed;
  /* profiler (ProxyOp/ProxyStep): segments appended under the proxy lock, consumed here */
  int prof;                  /* a segment was ever appended */
  prof_seg *seg_head, *seg_tail;
  uint64_t prof_assigned;    /* steps handed out in segments so far */
  void* step_ev[WEFT_NSTEPS];
  uint64_t prof_begun;       /* steps below this one had their events started */
  weft_prof_parent parent[WEFT_NSTEPS]; /* the phandle handed to the plugin for each slot */
} proxy_conn;

struct weft_proxy {
  struct ncclComm* comm;
  weft_proxy_fail_fn on_fail;
  weft_net* net;
  pthread_t thread;
  int started;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int stop;
  int active;
  proxy_conn** conns;
  int cap;
  int nconns; /* appended under lock, read by the thread with acquire order */
};

static void conn_fail(weft_proxy* p, proxy_conn* pc, ncclResult_t res, const char* what) {
  __atomic_store_n(&pc->failed, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&pc->conn->error, (int)res, __ATOMIC_RELEASE);
  /* Logged at INFO: the operation that needed this connection WARNs when it fails. */
  INFO(NCCL_NET, "rank %d: net %s: %s %s rank %d (channel %d) failed: %s", p->comm->rank,
       p->net->name,
       what, pc->conn->is_send ? "to" : "from", pc->conn->peer, pc->conn->channel,
       weft_result_str(res));
  /* Kernels do not read conn->error: the communicator fails and its kernels stop instead. */
  if (p->comm->mode == WEFT_MODE_DEVICE) {
    char how[96];
    snprintf(how, sizeof how, "net %s: %s on channel %d", p->net->name, what, pc->conn->channel);
    p->on_fail(p->comm, res, pc->conn->peer, how);
  }
}

/* The segment step s belongs to (popping finished ones is the caller's), or NULL. */
static prof_seg* seg_of(weft_proxy* p, proxy_conn* pc, uint64_t s) {
  pthread_mutex_lock(&p->lock);
  prof_seg* g = pc->seg_head;
  while (g && s >= g->first + g->nsteps) g = g->next;
  if (g && s < g->first) g = NULL;
  pthread_mutex_unlock(&p->lock);
  return g;
}

/* A ProxyStep state with its transSize (NCCL passes the step's bytes with every state). */
static void prof_step_state(weft_prof* pf, void* h, ncclProfilerEventState_t s, size_t bytes) {
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = bytes;
  prof_state(pf, h, s, &a);
}

/* Step s is about to be handed to the plugin: ProxyOp at the segment's first step (in
 * progress at once: weft hands a connection's steps over as they come, there is no queue to
 * wait in), then the ProxyStep (once per step, however often the plugin asks to be retried);
 * bytes: what a send step carries, what a receive step has room for. A send step begins once
 * the executor published its data, so its GPU and peer waits, NCCL's first two states, are
 * reported as over at once. Returns the phandle for the plugin's isend/irecv (NetPlugin
 * events hang off the ProxyStep), or NULL. */
static void* prof_step_begin(weft_proxy* p, proxy_conn* pc, uint64_t s, size_t bytes) {
  int slot = (int)(s % WEFT_NSTEPS);
  if (s < pc->prof_begun)
    return pc->parent[slot].handle ? &pc->parent[slot] : NULL;
  pc->prof_begun = s + 1;
  pc->step_ev[slot] = NULL;
  pc->parent[slot] = (weft_prof_parent){&p->comm->prof, NULL};
  weft_prof* pf = &p->comm->prof;
  prof_seg* g = seg_of(p, pc, s);
  if (!g) return NULL;
  ncclProfilerEventDescr_v6_t d;
  if (g->op == NULL && PROF_ON(pf, ncclProfileProxyOp | ncclProfileProxyStep)) {
    memset(&d, 0, sizeof d);
    d.type = ncclProfileProxyOp;
    d.parentObj = g->parent;
    d.rank = p->comm->rank;
    d.proxyOp.pid = getpid();
    d.proxyOp.channelId = (uint8_t)pc->conn->channel;
    d.proxyOp.peer = g->peer;
    d.proxyOp.nSteps = (int)g->nsteps;
    d.proxyOp.chunkSize = (int)pc->conn->step_bytes;
    d.proxyOp.isSend = pc->conn->is_send;
    g->op = prof_start(pf, &d);
    prof_state(pf, g->op, ncclProfilerProxyOpInProgress_v4, NULL);
  }
  if (!PROF_ON(pf, ncclProfileProxyStep)) return NULL;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyStep;
  d.parentObj = g->op;
  d.rank = p->comm->rank;
  d.proxyStep.step = (int)(s - g->first);
  void* h = prof_start(pf, &d);
  if (pc->conn->is_send) {
    prof_step_state(pf, h, ncclProfilerProxyStepSendGPUWait, bytes);
    prof_step_state(pf, h, ncclProfilerProxyStepSendPeerWait_v4, bytes);
    prof_step_state(pf, h, ncclProfilerProxyStepSendWait, bytes);
  } else {
    prof_step_state(pf, h, ncclProfilerProxyStepRecvWait, bytes);
  }
  pc->step_ev[slot] = h;
  if (!h || !PROF_ON(pf, ncclProfileNetPlugin)) return NULL;
  pc->parent[slot].handle = h;
  return &pc->parent[slot];
}

/* Step s completed (bytes moved): its ProxyStep ends, and the ProxyOp with its last step. */
static void prof_step_done(weft_proxy* p, proxy_conn* pc, uint64_t s, int bytes) {
  weft_prof* pf = &p->comm->prof;
  int slot = (int)(s % WEFT_NSTEPS);
  if (pc->step_ev[slot]) {
    if (!pc->conn->is_send)
      prof_step_state(pf, pc->step_ev[slot], ncclProfilerProxyStepRecvGPUWait,
                      (size_t)(bytes < 0 ? 0 : bytes));
    prof_stop(pf, pc->step_ev[slot]);
    pc->step_ev[slot] = NULL;
  }
  pc->parent[slot].handle = NULL;
  pthread_mutex_lock(&p->lock);
  prof_seg* g = pc->seg_head;
  int last = g && s + 1 == g->first + g->nsteps;
  if (last) {
    pc->seg_head = g->next;
    if (!pc->seg_head) pc->seg_tail = NULL;
  }
  pthread_mutex_unlock(&p->lock);
  if (last) {
    prof_stop(pf, g->op);
    free(g);
  }
}

/* Returns 1 when something moved. */
static int progress_send(weft_proxy* p, proxy_conn* pc) {
  const ncclNet_v12_t* api = p->net->api;
  weft_conn* c = pc->conn;
  int moved = 0;
  uint64_t tail = __atomic_load_n(&c->ctrl->tail, __ATOMIC_ACQUIRE);
  while (pc->posted < tail && pc->posted < pc->done + WEFT_NSTEPS) {
    int slot = (int)(pc->posted % WEFT_NSTEPS);
    size_t size = (size_t)__atomic_load_n(&c->ctrl->sizes[slot], __ATOMIC_RELAXED);
    void* req = NULL;
    void* ph = __atomic_load_n(&pc->prof, __ATOMIC_RELAXED)
                   ? prof_step_begin(p, pc, pc->posted, size)
                   : NULL;
    ncclResult_t res = api->isend(pc->net_comm, conn_slot(c, pc->posted), size, PROXY_TAG,
                                  pc->mhandle, ph, &req);
    if (res != ncclSuccess) {
      conn_fail(p, pc, res, "isend");
      return 1;
    }
    if (req == NULL) break; /* the plugin is full: retry later */
    pc->reqs[slot] = req;
    pc->posted++;
    moved = 1;
  }
  while (pc->done < pc->posted) {
    int slot = (int)(pc->done % WEFT_NSTEPS), done = 0, size = 0;
    ncclResult_t res = api->test(pc->reqs[slot], &done, &size);
    if (res != ncclSuccess) {
      conn_fail(p, pc, res, "send");
      return 1;
    }
    if (!done) break;
    pc->reqs[slot] = NULL;
    if (__atomic_load_n(&pc->prof, __ATOMIC_RELAXED)) prof_step_done(p, pc, pc->done, size);
    __atomic_store_n(&pc->done, pc->done + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->ctrl->head, pc->done, __ATOMIC_RELEASE);
    moved = 1;
  }
  return moved;
}

static int progress_recv(weft_proxy* p, proxy_conn* pc) {
  const ncclNet_v12_t* api = p->net->api;
  weft_conn* c = pc->conn;
  int moved = 0;
  /* Only receives an operation will consume are posted: a receive left posted when the peer
   * closes its end would fail for nothing. */
  uint64_t head = __atomic_load_n(&c->ctrl->head, __ATOMIC_ACQUIRE);
  uint64_t budget = __atomic_load_n(&pc->budget, __ATOMIC_ACQUIRE);
  while (pc->posted < head + WEFT_NSTEPS && pc->posted < budget) {
    int slot = (int)(pc->posted % WEFT_NSTEPS);
    void* data = conn_slot(c, pc->posted);
    size_t size = c->step_bytes;
    int tag = PROXY_TAG;
    void* mh = pc->mhandle;
    void* ph = __atomic_load_n(&pc->prof, __ATOMIC_RELAXED)
                   ? prof_step_begin(p, pc, pc->posted, size)
                   : NULL;
    void* req = NULL;
    ncclResult_t res = api->irecv(pc->net_comm, 1, &data, &size, &tag, &mh, &ph, &req);
    if (res != ncclSuccess) {
      conn_fail(p, pc, res, "irecv");
      return 1;
    }
    if (req == NULL) break;
    pc->reqs[slot] = req;
    pc->posted++;
    moved = 1;
  }
  while (pc->done < pc->posted) {
    int slot = (int)(pc->done % WEFT_NSTEPS), done = 0, size = 0;
    int flushing = pc->flushing[slot];
    ncclResult_t res = api->test(pc->reqs[slot], &done, &size);
    if (res != ncclSuccess) {
      conn_fail(p, pc, res, flushing ? "flush of a receive" : "receive");
      return 1;
    }
    if (!done) break;
    pc->reqs[slot] = NULL;
    if (!flushing && __atomic_load_n(&pc->prof, __ATOMIC_RELAXED) && pc->step_ev[slot])
      prof_step_state(&p->comm->prof, pc->step_ev[slot], ncclProfilerProxyStepRecvFlushWait,
                      (size_t)(size < 0 ? 0 : size));
    if (flushing) {
      pc->flushing[slot] = 0;
      size = pc->got[slot];
    } else if (pc->flush == WEFT_NET_FLUSH_ALWAYS ||
               (pc->flush == WEFT_NET_FLUSH_DATA && size > 0)) {
      /* GPU memory: the NIC's writes are visible to the kernel once the flush completes. */
      void* data = conn_slot(c, pc->done);
      void* mh = pc->mhandle;
      void* freq = NULL;
      res = api->iflush(pc->net_comm, 1, &data, &size, &mh, &freq);
      if (res != ncclSuccess) {
        conn_fail(p, pc, res, "iflush of a receive");
        return 1;
      }
      if (freq) { /* NULL: nothing to wait for */
        pc->reqs[slot] = freq;
        pc->flushing[slot] = 1;
        pc->got[slot] = size;
        moved = 1;
        continue;
      }
    }
    __atomic_store_n(&c->ctrl->sizes[slot], (int64_t)size, __ATOMIC_RELAXED);
    if (__atomic_load_n(&pc->prof, __ATOMIC_RELAXED)) prof_step_done(p, pc, pc->done, size);
    __atomic_store_n(&pc->done, pc->done + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->ctrl->tail, pc->done, __ATOMIC_RELEASE);
    moved = 1;
  }
  return moved;
}

/* A send step published by the executor has not completed in the plugin yet. */
static int sends_pending(weft_proxy* p) {
  int n = __atomic_load_n(&p->nconns, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    proxy_conn* pc = p->conns[i];
    if (!pc->conn->is_send || __atomic_load_n(&pc->failed, __ATOMIC_RELAXED)) continue;
    if (__atomic_load_n(&pc->done, __ATOMIC_RELAXED) <
        __atomic_load_n(&pc->conn->ctrl->tail, __ATOMIC_ACQUIRE))
      return 1;
  }
  return 0;
}

/* Profiler: the thread woke for work (ProxyCtrl: Wakeup, then Active until it sleeps). */
static void* proxy_prof_wake(weft_proxy* p) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyCtrl;
  d.rank = p->comm->rank;
  void* h = prof_start(&p->comm->prof, &d);
  prof_state(&p->comm->prof, h, ncclProfilerProxyCtrlWakeup, NULL);
  prof_state(&p->comm->prof, h, ncclProfilerProxyCtrlActive, NULL);
  return h;
}

static void* proxy_main(void* arg) {
  weft_proxy* p = arg;
  weft_log_set_thread_rank(p->comm->rank, p->comm->cuda_dev);
  weft_backoff bo = {0};
  weft_prof* pf = &p->comm->prof;
  void* ctrl = NULL; /* profiler: the ProxyCtrl event of this wake period */
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->stop && p->active == 0 && !sends_pending(p)) {
      if (ctrl) {
        prof_state(pf, ctrl, ncclProfilerProxyCtrlSleep, NULL);
        prof_stop(pf, ctrl);
        ctrl = NULL;
      }
      pthread_cond_wait(&p->cond, &p->lock);
      bo.polls = 0;
    }
    if (p->stop) break;
    if (ctrl == NULL && PROF_ON(pf, ncclProfileProxyCtrl)) ctrl = proxy_prof_wake(p);
    pthread_mutex_unlock(&p->lock);
    int moved = 0;
    int n = __atomic_load_n(&p->nconns, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
      proxy_conn* pc = p->conns[i];
      if (pc->failed) continue;
      moved |= pc->conn->is_send ? progress_send(p, pc) : progress_recv(p, pc);
    }
    if (moved)
      bo.polls = 0;
    else
      backoff_wait(&bo);
    pthread_mutex_lock(&p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  if (ctrl) {
    prof_state(pf, ctrl, ncclProfilerProxyCtrlIdle, NULL);
    prof_stop(pf, ctrl);
  }
  return NULL;
}

ncclResult_t proxy_create(struct ncclComm* comm, weft_net* net, int max_conns,
                          weft_proxy_fail_fn on_fail, weft_proxy** out) {
  weft_proxy* p = calloc(1, sizeof *p);
  if (!p) {
    WARN("rank %d: out of memory for the proxy", comm->rank);
    return ncclSystemError;
  }
  p->comm = comm;
  p->on_fail = on_fail;
  p->net = net;
  /* Every connection the table can hold, so that appending never reallocates. */
  p->cap = max_conns;
  p->conns = calloc((size_t)p->cap, sizeof *p->conns);
  if (!p->conns) {
    free(p);
    WARN("rank %d: out of memory for the proxy's connection list", comm->rank);
    return ncclSystemError;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  int rc = pthread_create(&p->thread, NULL, proxy_main, p);
  if (rc != 0) {
    WARN("rank %d: cannot start the proxy thread: %s", comm->rank, strerror(rc));
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p->conns);
    free(p);
    return ncclSystemError;
  }
  p->started = 1;
  *out = p;
  return ncclSuccess;
}

void proxy_prof_expect(weft_proxy* p, weft_conn* conn, uint64_t nsteps, void* parent, int peer) {
  if (nsteps == 0) return;
  int n = __atomic_load_n(&p->nconns, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    proxy_conn* pc = p->conns[i];
    if (pc->conn != conn) continue;
    prof_seg* g = calloc(1, sizeof *g);
    if (!g) return; /* the events are lost, nothing else */
    g->nsteps = nsteps;
    g->parent = parent;
    g->peer = peer;
    pthread_mutex_lock(&p->lock);
    /* Called before the launch raises the receive budget: a receive's steps start at the
     * budget (exact even after unprofiled launches) or after this launch's earlier segments;
     * a send's after the steps handed out in segments so far. */
    uint64_t budget = __atomic_load_n(&pc->budget, __ATOMIC_ACQUIRE);
    g->first = conn->is_send || pc->prof_assigned > budget ? pc->prof_assigned : budget;
    pc->prof_assigned = g->first + nsteps;
    if (pc->seg_tail)
      pc->seg_tail->next = g;
    else
      pc->seg_head = g;
    pc->seg_tail = g;
    __atomic_store_n(&pc->prof, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&p->lock);
    return;
  }
}

void proxy_expect_recvs(weft_proxy* p, weft_conn* conn, uint64_t nsteps) {
  int n = __atomic_load_n(&p->nconns, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++)
    if (p->conns[i]->conn == conn) {
      __atomic_add_fetch(&p->conns[i]->budget, nsteps, __ATOMIC_RELEASE);
      return;
    }
}

ncclResult_t proxy_add_conn(weft_proxy* p, weft_conn* conn, void* net_comm, void* mhandle,
                            int flush) {
  pthread_mutex_lock(&p->lock);
  if (p->nconns >= p->cap) {
    pthread_mutex_unlock(&p->lock);
    WARN("rank %d: proxy connection list full (%d)", p->comm->rank, p->cap);
    return ncclInternalError;
  }
  proxy_conn* pc = calloc(1, sizeof *pc);
  if (!pc) {
    pthread_mutex_unlock(&p->lock);
    WARN("rank %d: out of memory adding a connection to the proxy", p->comm->rank);
    return ncclSystemError;
  }
  p->conns[p->nconns] = pc;
  pc->conn = conn;
  pc->net_comm = net_comm;
  pc->mhandle = mhandle;
  pc->flush = conn->is_send ? WEFT_NET_FLUSH_NONE : flush;
  __atomic_store_n(&p->nconns, p->nconns + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&p->lock);
  return ncclSuccess;
}

void proxy_activate(weft_proxy* p) {
  pthread_mutex_lock(&p->lock);
  p->active++;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
}

void proxy_deactivate(weft_proxy* p) {
  pthread_mutex_lock(&p->lock);
  p->active--;
  pthread_cond_signal(&p->cond); /* sleeps again once the sends are flushed */
  pthread_mutex_unlock(&p->lock);
}

ncclResult_t proxy_drain(weft_proxy* p, int timeout_ms) {
  uint64_t deadline = clock_ms() + (uint64_t)timeout_ms;
  weft_backoff bo = {0};
  pthread_mutex_lock(&p->lock);
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
  while (sends_pending(p)) {
    if (__atomic_load_n(&p->comm->abort_flag, __ATOMIC_ACQUIRE) || clock_ms() > deadline) {
      INFO(NCCL_NET, "rank %d: net sends not flushed after %d ms", p->comm->rank, timeout_ms);
      return ncclRemoteError;
    }
    backoff_wait(&bo);
  }
  int n = __atomic_load_n(&p->nconns, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    int e = __atomic_load_n(&p->conns[i]->conn->error, __ATOMIC_ACQUIRE);
    if (e != ncclSuccess) return (ncclResult_t)e;
  }
  return ncclSuccess;
}

void proxy_stop(weft_proxy* p) {
  if (!p || !p->started) return;
  pthread_mutex_lock(&p->lock);
  p->stop = 1;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  p->started = 0;
}

void proxy_destroy(weft_proxy* p) {
  if (!p) return;
  proxy_stop(p);
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  for (int i = 0; i < p->nconns; i++) {
    for (int k = 0; k < WEFT_NSTEPS; k++) /* steps begun that never completed (abort) */
      prof_stop(&p->comm->prof, p->conns[i]->step_ev[k]);
    while (p->conns[i]->seg_head) { /* steps that never moved (abort) */
      prof_seg* g = p->conns[i]->seg_head;
      p->conns[i]->seg_head = g->next;
      prof_stop(&p->comm->prof, g->op);
      free(g);
    }
    free(p->conns[i]);
  }
  free(p->conns);
  free(p);
}
