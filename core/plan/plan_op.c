/* Ops: queued per communicator while a group is open, launched together at its end.
 *
 * Launch, for the communicators of one group:
 *  1. cut every op into work items (one per channel that has data) and list the connections
 *     they need; sends/recvs to self are matched in order and copied directly;
 *  2. prepare each communicator over its bootstrap: WEFT_CHECK_COLLECTIVES, then connect what
 *     is missing. With several communicators (one thread driving several ranks) these run on
 *     one thread each, since each may wait for another's messages;
 *  3. attach the connections, take each work's tickets on them, read device-resident
 *     PreMulSum scalars, wake the proxies and hand the items to the executor;
 *  4. wait until every item has finished; a failure marks its communicator failed (the FIFOs
 *     are no longer in step) and is reported through ncclCommGetAsyncError. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/comm_hang.h"
#include "device/device.h" /* launch limits (plain C, also without CUDA) */
#ifdef WEFT_HAVE_CUDA
#include "device/device_exec.h"
#endif
#include "host/host.h"
#include "plan/plan.h"
#include "proxy/proxy.h"
#include "tune/tune.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/names.h"

static size_t divup(size_t a, size_t b) { return (a + b - 1) / b; }

static int is_coll(int func) { return func >= ncclFuncBroadcast && func <= ncclFuncAllReduce; }
static int is_marker(int func) {
  return func == ncclFuncAlltoAll || func == ncclFuncGather || func == ncclFuncScatter;
}

/* ---- enqueue ---- */

/* Algorithm, protocol and channels: tune/ decides (tune_op). */
static ncclResult_t choose(struct ncclComm* comm, weft_op* op) {
  struct weft_plan* p = comm->plan;
  size_t bytes = op->count * op->elem;
  int p2p = op->func == ncclFuncSend || op->func == ncclFuncRecv;
  if (!p2p && (!is_coll(op->func) || op->count == 0)) {
    op->nchannels = 0;
    return ncclSuccess;
  }
  if (op->func == ncclFuncAllGather || op->func == ncclFuncReduceScatter)
    bytes *= (size_t)comm->nranks;
  weft_op_choice c;
  weft_zc_bufs zc;
  weft_tune_ask zc_ask, op_ask;
  const weft_tune_ask* ask = &p->ask;
  if (op->func == ncclFuncAllReduce && p->collnet) { /* CollNet: the plugin must reduce them */
    op_ask = p->ask;
    op_ask.dtype = (int)op->dtype;
    op_ask.redop = (int)op->user_op;
    ask = &op_ask;
  }
  int in_place = 0, zc_kind = 0;
  if (!p2p && comm->mode == WEFT_MODE_DEVICE && p->zero_copy &&
      (zc_kind = plan_zc_find(comm, op, &zc, &in_place)) != 0) { /* zero copy may run */
    zc_ask = p->ask;
    zc_ask.zero_copy = p->zero_copy;
    /* registered buffers: placement may differ by rank (plan_zc.c), every rank asks alike */
    zc_ask.in_place = zc_kind == WEFT_ZC_REGISTERED ? 0 : in_place;
    ask = &zc_ask;
  }
  WEFT_CHECK(tune_op(comm->tune, ask, op->func, bytes, &c));
  op->algo = c.algo;
  op->proto = c.proto;
  op->nchannels = c.nchannels;
  op->zero_copy = c.zero_copy ? zc_kind : WEFT_ZC_OFF;
  if (c.zero_copy) op->zc = zc;
  return ncclSuccess;
}

/* NCCL_DEBUG=INFO names the algorithm a collective runs the first time it runs it on this
 * communicator (NCCL_DEBUG_SUBSYS=TUNING logs every decision with its table). */
static void name_first_use(struct ncclComm* comm, const weft_op* op) {
  struct weft_plan* p = comm->plan;
  if (!is_coll(op->func) || op->nchannels == 0 || op->algo < 0 || op->algo >= 32) return;
  unsigned bit = 1u << op->algo;
  if (p->algo_named[op->func] & bit) return;
  p->algo_named[op->func] |= bit;
  INFO(NCCL_INIT, "rank %d: %s runs %s/%s%s (first used at %zu bytes on this communicator; "
       "NCCL_DEBUG_SUBSYS=TUNING logs every decision)",
       comm->rank, weft_func_name(op->func), tune_algo_name_for(op->func, op->algo),
       tune_proto_name(op->proto), op->zero_copy ? " zero copy" : "", op->count * op->elem);
}

ncclResult_t plan_enqueue(struct ncclComm* comm, const weft_op* in, int* queued) {
  struct weft_plan* p = comm->plan;
  *queued = 0;
  if (p == NULL) {
    WARN("%s: the device data path is not available yet in weft %s", weft_func_name(in->func),
         WEFT_VERSION_STRING);
    return ncclInvalidUsage;
  }
  if (comm->mode == WEFT_MODE_DEVICE && in->redop.kind == WEFT_RED_CUSTOM &&
      (in->func == ncclFuncAllReduce || in->func == ncclFuncReduce ||
       in->func == ncclFuncReduceScatter)) {
    WARN("rank %d: %s: a custom (host function) reduction cannot run in GPU kernels; use it on "
         "a host-mode communicator",
         comm->rank, weft_func_name(in->func));
    return ncclInvalidArgument;
  }
  if (plan_local_applies(comm, in)) {
    weft_op local = *in;
    local.elem = dtype_size(local.dtype);
    local.seq = ++p->coll_seq;
    return plan_local_run(comm, &local);
  }
  weft_op* op = malloc(sizeof *op);
  if (!op) {
    WARN("rank %d: out of memory queueing %s", comm->rank, weft_func_name(in->func));
    return ncclSystemError;
  }
  *op = *in;
  op->next = NULL;
  op->elem = dtype_size(op->dtype);
  op->seq = (is_coll(op->func) || is_marker(op->func)) ? ++p->coll_seq : 0;
  ncclResult_t res = choose(comm, op);
  if (res != ncclSuccess) {
    free(op);
    return res;
  }
  name_first_use(comm, op);
  if (p->pending_tail)
    p->pending_tail->next = op;
  else
    p->pending_head = op;
  p->pending_tail = op;
  p->npending++;
  *queued = 1;
  return ncclSuccess;
}

int plan_wait_idle(struct ncclComm* comm, int timeout_ms) {
  if (!comm->plan) return 1;
  uint64_t deadline = clock_ms() + (uint64_t)timeout_ms;
  weft_backoff bo = {0};
  while (__atomic_load_n(&comm->plan->inflight, __ATOMIC_SEQ_CST) > 0) {
    if (clock_ms() > deadline) return 0;
    backoff_wait(&bo);
  }
  return 1;
}

int plan_close(struct ncclComm* comm) {
  struct weft_plan* p = comm->plan;
  if (!p) return 1;
  __atomic_store_n(&p->closing, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->inflight, __ATOMIC_SEQ_CST) == 0) return 1;
  __atomic_store_n(&p->closing, 0, __ATOMIC_SEQ_CST);
  return 0;
}

/* Counts a launch on comms[0..n) in (plan_close's other side); ncclInvalidUsage, with nothing
 * left counted, when one of them is being destroyed by another thread. */
static ncclResult_t enter_launch(struct ncclComm** comms, int n) {
  for (int i = 0; i < n; i++) __atomic_add_fetch(&comms[i]->plan->inflight, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < n; i++) {
    if (!__atomic_load_n(&comms[i]->plan->closing, __ATOMIC_SEQ_CST)) continue;
    WARN("rank %d: comm %p is being destroyed by another thread: its operations are not run",
         comms[i]->rank, (void*)comms[i]);
    for (int k = 0; k < n; k++) plan_discard(comms[k]);
    /* The last touch: the destroy waits in plan_wait_idle for these. */
    for (int k = 0; k < n; k++) __atomic_sub_fetch(&comms[k]->plan->inflight, 1, __ATOMIC_SEQ_CST);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

void plan_discard(struct ncclComm* comm) {
  struct weft_plan* p = comm->plan;
  if (!p) return;
  while (p->pending_head) {
    weft_op* op = p->pending_head;
    p->pending_head = op->next;
    free(op);
  }
  p->pending_tail = NULL;
  p->npending = 0;
}

/* ncclGroupSimulateEnd: the cost model's time for the ops queued on comm, which are then
 * dropped as if never called (the collective sequence goes back, so the next real group's
 * collectives number alike on every rank, whether or not a rank simulated). */
double plan_simulate(struct ncclComm* comm) {
  struct weft_plan* p = comm->plan;
  if (!p) return 0;
  double us = 0;
  uint64_t seqs = 0;
  for (const weft_op* op = p->pending_head; op; op = op->next) {
    if (op->seq) seqs++;
    if (!is_coll(op->func) || op->nchannels == 0) continue;
    size_t bytes = op->count * op->elem;
    if (op->func == ncclFuncAllGather || op->func == ncclFuncReduceScatter)
      bytes *= (size_t)comm->nranks;
    us += tune_estimate_us(comm->tune, &p->mask, op->func, bytes, op->algo, op->proto,
                           op->nchannels);
  }
  plan_discard(comm);
  p->coll_seq -= seqs;
  return us;
}

/* ---- launch ---- */

typedef struct {
  struct ncclComm* comm;
  weft_op* ops; /* list taken from the plan */
  const weft_op** colls;
  int ncoll;
  weft_work* works;
  int nworks;
  weft_conn_key* keys;
  weft_conn_why* whys; /* what needs each key */
  int setup_failed;    /* transport_connect failed */
  int nkeys;
  int needs_prep;
  int uses_net;
  ncclResult_t res;
  pthread_t thread;
  int thread_live;
  void* prof_group; /* the profiler's Group event of this launch */
  int prof_live;    /* plan_prof_begin ran: its events are to be stopped */
} comm_launch;

void plan_work_done(weft_work* w, ncclResult_t res) {
  if (w->prof_ch) plan_prof_channel_stop(w);
  weft_launch* L = w->launch;
  w->result = res;
  pthread_mutex_lock(&L->lock);
  if (res != ncclSuccess && L->result == ncclSuccess) L->result = res;
  if (--L->remaining == 0) pthread_cond_broadcast(&L->cond);
  pthread_mutex_unlock(&L->lock);
}

/* Channel c's share of count elements over nch channels, cache-line aligned. */
static void channel_part(size_t count, size_t elem, int nch, int c, size_t* off, size_t* cnt) {
  size_t a = elem >= 64 ? 1 : 64 / elem;
  size_t q = divup(divup(count, (size_t)nch), a) * a;
  *off = (size_t)c * q;
  *cnt = *off < count ? (count - *off < q ? count - *off : q) : 0;
}

/* Sends to self and receives from self of one comm, matched in order, copied now. */
static ncclResult_t self_copies(struct ncclComm* comm, weft_op* ops) {
  weft_op* recv = ops;
  for (weft_op* s = ops; s; s = s->next) {
    if (s->func != ncclFuncSend || s->root != comm->rank) continue;
    while (recv && !(recv->func == ncclFuncRecv && recv->root == comm->rank)) recv = recv->next;
    if (!recv) {
      WARN("rank %d: ncclSend to self (%zu bytes) has no matching ncclRecv from self in the "
           "group",
           comm->rank, s->count * s->elem);
      return ncclInvalidUsage;
    }
    size_t sb = s->count * s->elem, rb = recv->count * recv->elem;
    if (sb != rb) {
      WARN("rank %d: ncclSend to self of %zu bytes meets ncclRecv from self of %zu bytes",
           comm->rank, sb, rb);
      return ncclInvalidUsage;
    }
    if (sb && recv->recvbuff != s->sendbuff) {
#ifdef WEFT_HAVE_CUDA
      if (comm->mode == WEFT_MODE_DEVICE)
        WEFT_CHECK(device_exec_copy(comm, recv->recvbuff, s->sendbuff, sb, recv->stream));
      else
#endif
        memmove(recv->recvbuff, s->sendbuff, sb);
    }
    recv->nchannels = 0; /* done */
    recv = recv->next;
  }
  for (; recv; recv = recv->next) {
    if (recv->func == ncclFuncRecv && recv->root == comm->rank && recv->nchannels > 0) {
      WARN("rank %d: ncclRecv from self has no matching ncclSend to self in the group",
           comm->rank);
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

/* NCCL_DEBUG_SUBSYS=TUNING: what an op's work items run, read from the work itself (the
 * generator its first item runs and the FIFOs it uses), so a test can see that a decision
 * reached the executor. */
static void log_run(const struct ncclComm* comm, const weft_op* op, const weft_work* w, int n) {
  if (!is_coll(op->func) || n == 0 || !weft_log_enabled(NCCL_LOG_INFO, NCCL_TUNING)) return;
  unsigned roles = 0;
  int proto = -1;
  for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++) {
    if (w->keys[k].peer < 0) continue;
    roles |= 1u << k;
    proto = w->keys[k].proto;
  }
  if (roles == 0) return;
  INFO(NCCL_TUNING, "rank %d: %s seq %llu runs %s/%s on %d channel(s) (%d work item(s))",
       comm->rank, weft_func_name(op->func), (unsigned long long)op->seq,
       tune_algo_name_for(op->func, w->alg.algo), tune_proto_name(proto), op->nchannels, n);
}

static int uses_collnet(const comm_launch* cl) {
  for (const weft_op* op = cl->ops; op; op = op->next)
    if (op->algo == WEFT_ALGO_COLLNET_CHAIN_ID && op->nchannels > 0 &&
        op->func == ncclFuncAllReduce)
      return 1;
  return 0;
}

static ncclResult_t build(comm_launch* cl, weft_launch* L) {
  struct ncclComm* comm = cl->comm;
  struct weft_plan* p = comm->plan;
  cl->ops = p->pending_head;
  p->pending_head = p->pending_tail = NULL;
  int nops = p->npending;
  p->npending = 0;
  WEFT_CHECK(self_copies(comm, cl->ops));
  int nworks = 0;
  for (weft_op* op = cl->ops; op; op = op->next) {
    if ((op->func == ncclFuncSend || op->func == ncclFuncRecv) && op->root == comm->rank) {
      op->nchannels = 0;
      continue;
    }
    nworks += op->nchannels;
  }
  cl->colls = calloc((size_t)nops + 1, sizeof *cl->colls);
  cl->works = calloc((size_t)nworks + 1, sizeof *cl->works);
  cl->keys = calloc((size_t)nworks * WEFT_WORK_MAX_CONNS * 2 + 1, sizeof *cl->keys);
  cl->whys = calloc((size_t)nworks * WEFT_WORK_MAX_CONNS * 2 + 1, sizeof *cl->whys);
  if (!cl->colls || !cl->works || !cl->keys || !cl->whys) {
    WARN("rank %d: out of memory launching %d ops", comm->rank, nops);
    return ncclSystemError;
  }
  for (weft_op* op = cl->ops; op; op = op->next) {
    if (is_coll(op->func) || is_marker(op->func)) cl->colls[cl->ncoll++] = op;
    int first_work = cl->nworks;
    for (int c = 0; c < op->nchannels; c++) {
      weft_work* w = &cl->works[cl->nworks];
      w->op = op;
      w->comm = comm;
      w->launch = L;
      w->channel = c;
      channel_part(op->count, op->elem, op->nchannels, c, &w->part_off, &w->part_count);
      if (w->part_count == 0) continue;
      WEFT_CHECK(plan_work_setup(w));
      cl->nworks++;
      weft_conn_why why = {.func = op->func, .dtype = (int32_t)op->dtype, .root = op->root,
                           .peer = op->func == ncclFuncSend || op->func == ncclFuncRecv ? op->root
                                                                                       : -1,
                           .count = (uint64_t)op->count, .seq = op->seq};
      for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++) {
        if (w->keys[k].peer < 0) continue;
        cl->whys[cl->nkeys] = why;
        cl->keys[cl->nkeys++] = w->keys[k];
        if (transport_find(comm, &w->keys[k]) == NULL) cl->needs_prep = 1;
        /* A pair's point-to-point FIFOs are set up both ways at once: two ranks that each send
         * to the other first, in separate groups, then meet in the same setup. */
        if (w->keys[k].kind == WEFT_CONN_P2P) {
          weft_conn_key mirror = w->keys[k];
          mirror.send = !mirror.send;
          cl->whys[cl->nkeys] = why;
          cl->keys[cl->nkeys++] = mirror;
          if (transport_find(comm, &mirror) == NULL) cl->needs_prep = 1;
        }
      }
    }
    log_run(comm, op, &cl->works[first_work], cl->nworks - first_work);
  }
  if (p->check_colls && cl->ncoll > 0) cl->needs_prep = 1;
  if (uses_collnet(cl) && plan_collnet_needs_connect(comm)) cl->needs_prep = 1;
  return ncclSuccess;
}

static ncclResult_t prepare(comm_launch* cl) {
  struct ncclComm* comm = cl->comm;
  if (comm->plan->check_colls && cl->ncoll > 0) {
    ncclResult_t res = plan_check_collectives(comm, cl->colls, cl->ncoll);
    if (res != ncclSuccess) {
      /* Nothing ran: every rank takes its collectives back, so that the sequence numbers
       * agree again for the next launch. */
      comm->plan->coll_seq -= (uint64_t)cl->ncoll;
      return res;
    }
  }
  /* The CollNet group first: its allgathers run on every rank, whatever transport_connect
   * does on each. */
  if (uses_collnet(cl) && plan_collnet_needs_connect(comm)) {
    ncclResult_t res = plan_collnet_connect(comm);
    if (res != ncclSuccess) return res;
  }
  ncclResult_t res = transport_connect(comm, cl->keys, cl->whys, cl->nkeys);
  /* Connections half made, details of others queued: unlike a refused check, not retryable. */
  cl->setup_failed = res != ncclSuccess;
  return res;
}

static void* prepare_thread(void* arg) {
  comm_launch* cl = arg;
  weft_log_set_thread_rank(cl->comm->rank, cl->comm->cuda_dev);
  cl->res = prepare(cl);
  return NULL;
}

/* Connections of every work item; nothing is taken yet, so a failure here leaves no trace. */
static ncclResult_t attach(comm_launch* cl) {
  struct ncclComm* comm = cl->comm;
  for (int i = 0; i < cl->nworks; i++) {
    weft_work* w = &cl->works[i];
    for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++) {
      if (w->keys[k].peer < 0) continue;
      w->conns[k] = transport_find(comm, &w->keys[k]);
      if (!w->conns[k]) {
        WARN("rank %d: connection to rank %d (channel %d) missing after setup", comm->rank,
             w->keys[k].peer, w->keys[k].channel);
        return ncclInternalError;
      }
      if (transport_kind_of(comm, &w->keys[k]) == WEFT_TRANSPORT_NET) cl->uses_net = 1;
    }
  }
  return ncclSuccess;
}

/* Commit: tickets (each taken one must be served, so only once the launch cannot fail any
 * more), net receive budgets, device-resident scalars. */
static void commit(comm_launch* cl) {
  struct ncclComm* comm = cl->comm;
  for (int i = 0; i < cl->nworks; i++) {
    weft_work* w = &cl->works[i];
    for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++)
      if (w->conns[k]) w->tickets[k] = w->conns[k]->ticket_next++;
  }
  plan_collnet_take_turns(cl->works, cl->nworks);
  /* Tell the proxy how many steps each net receive connection will carry. */
  if (cl->uses_net && comm->proxy) {
    for (int i = 0; i < cl->nworks; i++) {
      weft_work* w = &cl->works[i];
      uint64_t steps[WEFT_WORK_MAX_CONNS] = {0};
      int any = 0;
      for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++)
        if (w->conns[k] && !w->conns[k]->is_send &&
            transport_kind_of(comm, &w->keys[k]) == WEFT_TRANSPORT_NET)
          any = 1;
      if (!any) continue;
      for (int s = 0; s < w->nstreams; s++) {
        weft_prim p;
        for (uint64_t pc = 0; work_prim(w, s, pc, &p); pc++)
          for (int r = 0; r < p.nrecv; r++) steps[p.recv[r]]++;
      }
      for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++)
        if (steps[k] && transport_kind_of(comm, &w->keys[k]) == WEFT_TRANSPORT_NET)
          proxy_expect_recvs(comm->proxy, w->conns[k], steps[k]);
    }
  }
  /* Device kernels read a device scalar themselves, when they run. */
  if (comm->mode == WEFT_MODE_HOST)
    for (weft_op* op = cl->ops; op; op = op->next)
      if (op->scalar_ptr) memcpy(op->redop.scalar, op->scalar_ptr, op->elem);
}

/* A failure that leaves connections out of step breaks the communicator. */
static void mark_failed(struct ncclComm* comm, ncclResult_t res) {
  int ok = ncclSuccess;
  __atomic_compare_exchange_n(&comm->async_error, &ok, (int)res, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_RELAXED);
  __atomic_store_n(&comm->state, WEFT_COMM_FAILED, __ATOMIC_RELEASE);
}

static void free_launch(comm_launch* cl) {
  while (cl->ops) {
    weft_op* op = cl->ops;
    cl->ops = op->next;
    free(op);
  }
  free(cl->colls);
  free(cl->works);
  free(cl->keys);
  free(cl->whys);
}

/* A one-rank communicator alone in its group: only sends/receives to self reach here (its
 * collectives ran at enqueue), so there is nothing but copies to do. */
static ncclResult_t launch_one_rank(struct ncclComm* comm) {
  struct weft_plan* p = comm->plan;
  WEFT_CHECK(enter_launch(&comm, 1));
  weft_op* ops = p->pending_head;
  p->pending_head = p->pending_tail = NULL;
  p->npending = 0;
  int prof = PROF_ON(&comm->prof, WEFT_PROF_GROUP_TREE);
  void* group = prof ? plan_prof_begin(comm, ops) : NULL;
  ncclResult_t res = self_copies(comm, ops);
  if (prof) plan_prof_end(comm, ops, group);
  prof_group_api_stop(&comm->prof);
  while (ops) {
    weft_op* op = ops;
    ops = op->next;
    free(op);
  }
  __atomic_sub_fetch(&p->inflight, 1, __ATOMIC_ACQ_REL);
  return res;
}

/* The hang board's view of a launch's ops: the first collective (else the first op), how many,
 * the last collective sequence number. 0 for no ops. */
static int hang_summary(const weft_op* ops, weft_hang_launch* l) {
  if (!ops) return 0;
  const weft_op* first = ops;
  int nops = 0;
  uint64_t last_seq = 0;
  for (const weft_op* op = ops; op; op = op->next) {
    nops++;
    if (op->seq && !first->seq) first = op;
    if (op->seq) last_seq = op->seq;
  }
  *l = (weft_hang_launch){.func = first->func, .dtype = (int)first->dtype, .root = first->root,
                          .nops = nops, .count = (uint64_t)first->count, .seq = first->seq,
                          .last_seq = last_seq};
  return 1;
}

ncclResult_t plan_launch(struct ncclComm** comms, int n) {
  if (n == 1 && comms[0]->nranks == 1) return launch_one_rank(comms[0]);
  ncclResult_t res = ncclSuccess;
  comm_launch* cls = calloc((size_t)n, sizeof *cls);
  if (!cls) {
    WARN("out of memory launching a group of %d communicators", n);
    for (int i = 0; i < n; i++) plan_discard(comms[i]);
    return ncclSystemError;
  }
  res = enter_launch(comms, n);
  if (res != ncclSuccess) {
    free(cls);
    return res;
  }
  weft_launch L;
  pthread_mutex_init(&L.lock, NULL);
  pthread_cond_init(&L.cond, NULL);
  L.remaining = 0;
  L.result = ncclSuccess;

  /* enter_launch counted this launch in flight first: a revoke either sees it and waits for it
   * (its abort flag fails the items), or this launch sees the revoke (lifecycle/comm_revoke.c);
   * a suspend likewise refuses itself or is seen here (lifecycle/comm_suspend.c). */
  for (int i = 0; i < n; i++) {
    cls[i].comm = comms[i];
    int revoked = __atomic_load_n(&comms[i]->revoked, __ATOMIC_SEQ_CST);
    if (revoked || __atomic_load_n(&comms[i]->suspended, __ATOMIC_SEQ_CST)) {
      WARN("rank %d: comm %p %s; its queued operations are dropped", comms[i]->rank,
           (void*)comms[i], revoked ? "was revoked" : "is suspended (ncclCommSuspend)");
      res = ncclInvalidUsage;
    }
  }
  if (res != ncclSuccess) {
    for (int i = 0; i < n; i++) plan_discard(comms[i]);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    cls[i].res = build(&cls[i], &L);
    if (cls[i].res != ncclSuccess && res == ncclSuccess) res = cls[i].res;
  }
  if (res != ncclSuccess) goto done;
  for (int i = 0; i < n; i++) {
    weft_hang_launch hl;
    if (hang_summary(cls[i].ops, &hl)) comm_hang_note_launch(comms[i], &hl, cls[i].needs_prep);
  }

  int nprep = 0;
  for (int i = 0; i < n; i++) nprep += cls[i].needs_prep;
  for (int i = 0; i < n; i++) {
    if (!cls[i].needs_prep) continue;
    if (nprep > 1 && pthread_create(&cls[i].thread, NULL, prepare_thread, &cls[i]) == 0)
      cls[i].thread_live = 1;
    else
      cls[i].res = prepare(&cls[i]);
  }
  for (int i = 0; i < n; i++) {
    if (cls[i].thread_live) pthread_join(cls[i].thread, NULL);
    if (cls[i].res != ncclSuccess) {
      if (res == ncclSuccess) res = cls[i].res;
      if (cls[i].res != ncclInvalidUsage || cls[i].setup_failed)
        mark_failed(cls[i].comm, cls[i].res);
    }
  }
  if (res != ncclSuccess) goto done;
  for (int i = 0; i < n; i++) {
    cls[i].res = attach(&cls[i]);
    if (cls[i].res != ncclSuccess) {
      res = cls[i].res;
      goto done;
    }
  }
  /* From here on the launch cannot fail before it runs: the profiler's events start (the
   * proxy learns its ops' steps before commit raises the receive budgets). */
  for (int i = 0; i < n; i++)
    if (PROF_ON(&cls[i].comm->prof, WEFT_PROF_GROUP_TREE)) {
      cls[i].prof_group = plan_prof_begin(cls[i].comm, cls[i].ops);
      cls[i].prof_live = 1;
      if (cls[i].uses_net && PROF_ON(&cls[i].comm->prof, ncclProfileProxyOp | ncclProfileProxyStep))
        plan_prof_proxy_ops(cls[i].comm, cls[i].works, cls[i].nworks);
    }
  for (int i = 0; i < n; i++) commit(&cls[i]);
  for (int i = 0; i < n; i++) comm_hang_note_run(comms[i]);

#ifdef WEFT_HAVE_CUDA
  if (comms[0]->mode == WEFT_MODE_DEVICE) {
    /* Enqueued on the callers' streams; nothing waits here. The proxy of a comm that uses the
     * net stays active from its first such launch until destroy. */
    for (int i = 0; i < n && res == ncclSuccess; i++) {
      if (cls[i].uses_net && cls[i].comm->proxy && !cls[i].comm->proxy_always_on) {
        proxy_activate(cls[i].comm->proxy);
        cls[i].comm->proxy_always_on = 1;
      }
      void* kl = plan_prof_kernel_launch(cls[i].comm, cls[i].ops ? cls[i].ops->stream : NULL);
      res = device_exec_launch(cls[i].comm, cls[i].ops, cls[i].works, cls[i].nworks);
      prof_stop(&cls[i].comm->prof, kl);
      if (res != ncclSuccess && res != ncclInvalidUsage) mark_failed(cls[i].comm, res);
    }
    goto done;
  }
#endif
  for (int i = 0; i < n; i++) L.remaining += cls[i].nworks;
  for (int i = 0; i < n; i++)
    if (cls[i].uses_net && cls[i].comm->proxy) proxy_activate(cls[i].comm->proxy);
  /* One communicator: this thread runs channel 0's items itself instead of sleeping while a
   * worker does (WEFT_HOST_CALLER_RUNS). A group over several communicators hands every item
   * to the workers, so that the communicators progress side by side. */
  int here = n == 1 && host_exec_caller_runs(cls[0].comm->host);
  for (int i = 0; i < n; i++) {
    weft_prof* pf = &cls[i].comm->prof;
    void* kl = PROF_ON(pf, ncclProfileKernelLaunch) ? plan_prof_kernel_launch(cls[i].comm, NULL)
                                                    : NULL;
    for (int k = 0; k < cls[i].nworks; k++) {
      if (PROF_ON(pf, ncclProfileKernelCh)) plan_prof_channel_start(&cls[i].works[k]);
      if (!here || cls[i].works[k].channel != 0)
        host_exec_submit(cls[i].comm->host, &cls[i].works[k]);
    }
    prof_stop(pf, kl);
  }
  if (here) host_exec_run_here(cls[0].comm->host, cls[0].works, cls[0].nworks);
  pthread_mutex_lock(&L.lock);
  while (L.remaining > 0) pthread_cond_wait(&L.cond, &L.lock);
  pthread_mutex_unlock(&L.lock);
  for (int i = 0; i < n; i++)
    if (cls[i].uses_net && cls[i].comm->proxy) proxy_deactivate(cls[i].comm->proxy);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < cls[i].nworks; k++) {
      ncclResult_t r = cls[i].works[k].result;
      if (r == ncclSuccess) continue;
      if (res == ncclSuccess) res = r;
      mark_failed(cls[i].comm, r);
    }
  }
done:
  for (int i = 0; i < n; i++) comm_hang_note_done(comms[i], res);
  for (int i = 0; i < n; i++) {
    if (cls[i].prof_live) plan_prof_end(cls[i].comm, cls[i].ops, cls[i].prof_group);
    prof_group_api_stop(&comms[i]->prof);
    free_launch(&cls[i]);
  }
  /* The last touch of each comm: an abort waiting in plan_wait_idle may free it next. */
  for (int i = 0; i < n; i++) __atomic_sub_fetch(&comms[i]->plan->inflight, 1, __ATOMIC_ACQ_REL);
  free(cls);
  pthread_cond_destroy(&L.cond);
  pthread_mutex_destroy(&L.lock);
  return res;
}
