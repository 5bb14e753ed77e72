/* Profiler plugins in a host-mode run: the reference plugin (ref_profiler.c, one library per
 * ABI version) records what the core reported for every collective and a grouped send/recv on
 * 2 forked ranks, and this checks the tree: counts, parent links (NCCL's, per version), sequence
 * numbers per function, fields, states in order, one stop per event. Broken plugins (no
 * symbol, NULL stopEvent, failing init) and a zero activation mask leave the run correct and
 * the plugin unused or silent.
 * Over a net (PROF_EXPECT_NET), the net plugin's own NetPlugin events are checked too, once the
 * communicator is destroyed (prof_net_check.c), and across the ranks what one side's events
 * sent against what the other side's received.
 * PROF_COUNT sets the elements per operation (default 4096).
 * The trace case only runs the ops (PROF_NRANKS ranks, default 2) for a plugin that is not the
 * reference one (the trace plugin; check_trace.py reads what it wrote).
 *   prof_tree tree|mask0|nullctx|unused|trace PLUGIN.so [NCCL_PROFILER_PLUGIN value] */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nccl.h"
#include "nccl_profiler.h"
#include "prof_net_check.h"
#include "ref_profiler.h"
#include "testutil.h"

static size_t g_count = 4096; /* elements per operation (PROF_COUNT) */
#define NCOLL 6

static const char* g_case;
static const char* g_plugin;

static void summary(ref_summary* s) {
  void* dl = dlopen(g_plugin, RTLD_NOW | RTLD_NOLOAD);
  if (!dl) {
    memset(s, 0, sizeof *s);
    s->version = -1; /* not loaded */
    return;
  }
  ref_profiler_summary_fn fn = (ref_profiler_summary_fn)dlsym(dl, REF_SUMMARY_SYMBOL);
  EXPECT(fn != NULL);
  fn(s);
  dlclose(dl);
}

/* Run the collectives (checking AllReduce's result against a reference) and the grouped p2p. */
static void run_ops(ncclComm_t comm, int rank, int nranks, uint64_t* rng) {
  float* a = malloc(g_count * sizeof(float) * nranks);
  float* b = malloc(g_count * sizeof(float) * nranks);
  EXPECT(a && b);
  for (int it = 0; it < 2; it++) {
    for (size_t i = 0; i < g_count; i++) a[i] = (float)(test_rand(rng) % 1000) + (float)rank;
    EXPECT_OK(ncclAllReduce(a, b, g_count, ncclFloat32, ncclSum, comm, NULL));
    /* every rank drew the same sequence (same seed): the sum is nranks*x + sum of ranks */
    uint64_t r2 = *rng;
    (void)r2;
    for (size_t i = 0; i < g_count; i++) {
      float want = (a[i] - (float)rank) * (float)nranks + (float)(nranks * (nranks - 1) / 2);
      if (fabsf(b[i] - want) > 1e-3f) {
        fprintf(stderr, "rank %d: AllReduce[%zu] = %g, want %g\n", rank, i, b[i], want);
        exit(1);
      }
    }
  }
  EXPECT_OK(ncclBroadcast(a, b, g_count, ncclFloat32, 1, comm, NULL));
  EXPECT_OK(ncclReduce(a, b, g_count, ncclFloat32, ncclSum, 0, comm, NULL));
  EXPECT_OK(ncclAllGather(a, b, g_count, ncclFloat32, comm, NULL));
  EXPECT_OK(ncclReduceScatter(a, b, g_count, ncclFloat32, ncclSum, comm, NULL));
  int peer = rank ^ 1;
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclSend(a, g_count, ncclFloat32, peer, comm, NULL));
  EXPECT_OK(ncclRecv(b, g_count, ncclFloat32, peer, comm, NULL));
  EXPECT_OK(ncclGroupEnd());
  free(a);
  free(b);
}

static int count_type(const ref_summary* s, uint64_t type) {
  int n = 0;
  for (int i = 0; i < s->nevents; i++) n += s->events[i].type == type;
  return n;
}

/* A send's proxy event: ProxyOp, ProxyStep or NetPlugin under a sending ProxyOp. */
static int send_side(const ref_event* e) {
  const ref_event* op = e->type == ncclProfileProxyOp     ? e
                        : e->type == ncclProfileProxyStep ? e->parent
                        : e->type == ncclProfileNetPlugin && e->parent ? e->parent->parent
                                                                        : NULL;
  return op && op->type == ncclProfileProxyOp && op->root;
}

static void check_tree(const ref_summary* s, int rank) {
  int v = s->version;
  static const char* const want_func[NCOLL] = {"AllReduce", "AllReduce",     "Broadcast",
                                               "Reduce",    "AllGather", "ReduceScatter"};
  static const int want_seq[NCOLL] = {0, 1, 0, 0, 0, 0};
  EXPECT_EQ_INT(s->inits, 1);
  EXPECT_EQ_INT(count_type(s, ncclProfileColl), NCOLL);
  EXPECT_EQ_INT(count_type(s, ncclProfileGroup), NCOLL + 1);
  EXPECT_EQ_INT(count_type(s, ncclProfileP2p), 2);
  EXPECT_EQ_INT(count_type(s, ncclProfileGroupApi), v >= 5 ? NCOLL + 1 : 0);
  EXPECT_EQ_INT(count_type(s, ncclProfileCollApi), v >= 5 ? NCOLL : 0);
  EXPECT_EQ_INT(count_type(s, ncclProfileP2pApi), v >= 5 ? 2 : 0);
  EXPECT_EQ_INT(count_type(s, ncclProfileKernelLaunch), v >= 5 ? NCOLL + 1 : 0);
  if (v < 3) EXPECT_EQ_INT(count_type(s, ncclProfileKernelCh), 0);
  if (v >= 4) {
    EXPECT_EQ_INT(s->nranks, 2);
    EXPECT_EQ_INT(s->rank, rank);
    EXPECT_EQ_INT(s->nnodes, 1);
  }
  int ncoll = 0, np2p = 0;
  const ref_event* p2p_group = NULL;
  for (int i = 0; i < s->nevents; i++) {
    const ref_event* e = &s->events[i];
    /* The proxy thread's last ProxyCtrl ends when the communicator is destroyed; a send's
     * proxy events may end after its operation returned (the peer has the bytes; the sender's
     * net completion can come later, as IB's and libfabric's do). Every event is stopped by
     * the destroy (checked after it). */
    if (e->type != ncclProfileProxyCtrl && !send_side(e)) EXPECT_EQ_INT(e->stopped, 1);
    EXPECT_EQ_INT(e->after_stop_state, 0);
    EXPECT_EQ_INT(e->rank, rank);
    const ref_event* grp = v >= 5 ? e->group : e->parent;
    switch (e->type) {
      case ncclProfileColl: {
        EXPECT(ncoll < NCOLL);
        if (strcmp(e->func, want_func[ncoll]) != 0) {
          fprintf(stderr, "Coll #%d is %s, want %s\n", ncoll, e->func, want_func[ncoll]);
          exit(1);
        }
        EXPECT_EQ_INT(e->seq, want_seq[ncoll]);
        EXPECT_EQ_INT(e->count, g_count);
        if (ncoll == 2) EXPECT_EQ_INT(e->root, 1);
        if (ncoll == 3) EXPECT_EQ_INT(e->root, 0);
        EXPECT(e->nchannels >= 1);
        EXPECT(strcmp(e->algo, "RING") == 0 || strcmp(e->algo, "TREE") == 0 ||
               strcmp(e->algo, "RECDOUBLING") == 0 || strcmp(e->algo, "RABENSEIFNER") == 0 ||
               strcmp(e->algo, "BINOMIAL") == 0 || strcmp(e->algo, "PAT") == 0);
        EXPECT(strcmp(e->proto, "LL") == 0 || strcmp(e->proto, "LL128") == 0 ||
               strcmp(e->proto, "SIMPLE") == 0);
        EXPECT(strcmp(e->dtype, v == 1 ? "7" : "ncclFloat32") == 0);
        EXPECT(e->depth == 0); /* v1..v3: no name or hash, as NCCL */
        EXPECT(grp != NULL && grp->type == ncclProfileGroup);
        if (v >= 5) {
          EXPECT(e->parent != NULL && e->parent->type == ncclProfileCollApi);
          EXPECT(strcmp(e->parent->func, e->func) == 0);
          EXPECT_EQ_INT(e->parent->count, g_count);
        }
        ncoll++;
        break;
      }
      case ncclProfileP2p:
        EXPECT(strcmp(e->func, np2p == 0 ? "Send" : "Recv") == 0);
        EXPECT_EQ_INT(e->peer, rank ^ 1);
        EXPECT_EQ_INT(e->count, g_count);
        EXPECT(grp != NULL && grp->type == ncclProfileGroup);
        if (np2p == 1) EXPECT(grp == p2p_group); /* one group launched both */
        p2p_group = grp;
        if (v >= 5) EXPECT(e->parent != NULL && e->parent->type == ncclProfileP2pApi);
        np2p++;
        break;
      case ncclProfileKernelCh: {
        const ref_event* t = e->parent;
        EXPECT(t != NULL && (t->type == ncclProfileColl || t->type == ncclProfileP2p));
        /* v3's P2p has no channel count */
        EXPECT(e->channel >= 0 &&
               (e->channel < t->nchannels || (v < 4 && t->type == ncclProfileP2p)));
        if (v >= 4) {
          EXPECT_EQ_INT(e->nstates, 1);
          EXPECT_EQ_INT(e->states[0], ncclProfilerKernelChStop);
          EXPECT(e->ptimer_start > 0 && e->ptimer_stop >= e->ptimer_start);
        } else {
          EXPECT_EQ_INT(e->nstates, 0);
        }
        break;
      }
      case ncclProfileGroupApi:
        EXPECT_EQ_INT(e->depth, 1);
        EXPECT_EQ_INT(e->nstates, 2);
        EXPECT_EQ_INT(e->states[0], ncclProfilerGroupStartApiStop);
        EXPECT_EQ_INT(e->states[1], ncclProfilerGroupEndApiStart);
        break;
      case ncclProfileCollApi:
      case ncclProfileP2pApi:
      case ncclProfileKernelLaunch:
        EXPECT(e->parent != NULL && e->parent->type == ncclProfileGroupApi);
        break;
      case ncclProfileGroup: EXPECT(e->parent == NULL); break;
      case ncclProfileProxyCtrl:
        EXPECT(e->nstates >= 2);
        EXPECT_EQ_INT(e->states[0], ncclProfilerProxyCtrlWakeup);
        EXPECT_EQ_INT(e->states[1], ncclProfilerProxyCtrlActive);
        if (e->stopped)
          EXPECT(e->states[e->nstates - 1] == ncclProfilerProxyCtrlSleep ||
                 e->states[e->nstates - 1] == ncclProfilerProxyCtrlIdle);
        break;
      default: break;
    }
  }
  EXPECT_EQ_INT(np2p, 2);
  /* Over the socket net the proxy thread runs: its wake periods are reported, and every
   * operation's net steps as ProxyOps (parent: the Coll/P2p; v4+: state InProgress) of
   * ProxySteps 0..nSteps-1 whose states come in NCCL's order, each with its bytes (v4+: send
   * SendGPUWait, SendPeerWait, SendWait; receive RecvWait, RecvFlushWait, RecvGPUWait; v1..v3
   * never see the v4 states). NVIDIA's example profiler times each phase from these. */
  if (getenv("PROF_EXPECT_PROXY")) {
    EXPECT(count_type(s, ncclProfileProxyCtrl) >= 1);
    EXPECT(count_type(s, ncclProfileProxyOp) >= NCOLL);
    int sends = 0, recvs = 0;
    for (int i = 0; i < s->nevents; i++) {
      const ref_event* op = &s->events[i];
      if (op->type != ncclProfileProxyOp) continue;
      EXPECT(op->parent &&
             (op->parent->type == ncclProfileColl || op->parent->type == ncclProfileP2p));
      EXPECT(op->peer >= 0 && op->peer < 2 && op->peer != rank);
      EXPECT(op->count >= 1);
      if (op->root) sends++; else recvs++;
      if (v >= 4) {
        EXPECT_EQ_INT(op->nstates, 1);
        EXPECT_EQ_INT(op->states[0], ncclProfilerProxyOpInProgress_v4);
      } else {
        EXPECT_EQ_INT(op->nstates, 0);
      }
      size_t nsteps = 0, op_bytes = 0;
      for (int k = 0; k < s->nevents; k++) {
        const ref_event* st = &s->events[k];
        if (st->type != ncclProfileProxyStep || st->parent != op) continue;
        EXPECT_EQ_INT(st->seq, nsteps); /* steps in order, numbered from 0 */
        nsteps++;
        if (op->root) {
          int k0 = 0;
          EXPECT_EQ_INT(st->nstates, v >= 4 ? 3 : 2);
          EXPECT_EQ_INT(st->states[k0++], ncclProfilerProxyStepSendGPUWait);
          if (v >= 4) EXPECT_EQ_INT(st->states[k0++], ncclProfilerProxyStepSendPeerWait_v4);
          EXPECT_EQ_INT(st->states[k0], ncclProfilerProxyStepSendWait);
        } else {
          EXPECT_EQ_INT(st->nstates, 3);
          EXPECT_EQ_INT(st->states[0], ncclProfilerProxyStepRecvWait);
          EXPECT_EQ_INT(st->states[1], ncclProfilerProxyStepRecvFlushWait);
          EXPECT_EQ_INT(st->states[2], ncclProfilerProxyStepRecvGPUWait);
        }
        /* v4+ carry transSize: at most the chunk (a step may carry nothing, as in NCCL) */
        if (v >= 4) EXPECT(st->trans_size <= op->chunk);
        op_bytes += st->trans_size;
      }
      EXPECT_EQ_INT(nsteps, op->count);
      if (v >= 4) EXPECT(op_bytes > 0); /* what the example profiler adds up per ProxyOp */
    }
    EXPECT(sends >= 1 && recvs >= 1);
  }
  /* Every channel share of every op was reported (v3+): each Coll/P2p has >= 1 KernelCh. */
  if (v >= 3) {
    for (int i = 0; i < s->nevents; i++) {
      const ref_event* t = &s->events[i];
      if (t->type != ncclProfileColl && t->type != ncclProfileP2p) continue;
      int n = 0;
      for (int k = 0; k < s->nevents; k++)
        n += s->events[k].type == ncclProfileKernelCh && s->events[k].parent == t;
      EXPECT(n >= 1 && (n <= t->nchannels || (v < 4 && t->type == ncclProfileP2p)));
    }
  }
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  prof_net_totals* net = arg;
  uint64_t rng = test_seed(0x5eed);
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  if (strcmp(g_case, "trace") == 0) {
    run_ops(comm, rank, nranks, &rng);
    EXPECT_OK(ncclCommDestroy(comm));
    return 0;
  }
  if (strcmp(g_case, "trace_exit") == 0) { /* never finalized: the file is written at exit */
    run_ops(comm, rank, nranks, &rng);
    exit(0); /* not a return: the fork harness ends a child with _exit, which runs no destructor */
  }
  ref_summary s;
  summary(&s);
  if (strcmp(g_case, "unused") == 0) EXPECT_EQ_INT(s.version, -1);
  run_ops(comm, rank, nranks, &rng);
  summary(&s);
  if (strcmp(g_case, "tree") == 0) {
    EXPECT(s.version >= 1); /* the tree is checked once the comm is gone, below */
  } else if (strcmp(g_case, "mask0") == 0 || strcmp(g_case, "nullctx") == 0) {
    EXPECT_EQ_INT(s.inits, 1);
    EXPECT_EQ_INT(s.last_mask, 0);
    EXPECT_EQ_INT(s.nevents, 0);
  } else {
    EXPECT_EQ_INT(s.version, -1);
  }
  /* Read the record after destroy: the proxy thread, which goes on recording its wake-ups
   * while the comm lives, is gone then. */
  void* keep = dlopen(g_plugin, RTLD_NOW | RTLD_NOLOAD);
  EXPECT(keep != NULL || strcmp(g_case, "tree") != 0);
  EXPECT_OK(ncclCommDestroy(comm));
  if (keep) {
    ref_summary t;
    ref_profiler_summary_fn fn = (ref_profiler_summary_fn)dlsym(keep, REF_SUMMARY_SYMBOL);
    fn(&t);
    if (strcmp(g_case, "tree") == 0) check_tree(&t, rank);
    /* NCCL finalizes only a context init left non-NULL */
    EXPECT_EQ_INT(t.finalizes, strcmp(g_case, "nullctx") == 0 ? 0 : 1);
    for (int i = 0; i < t.nevents; i++) EXPECT_EQ_INT(t.events[i].stopped, 1);
    if (strcmp(g_case, "tree") == 0) prof_net_check(&t, rank, net);
    dlclose(keep);
  }
  summary(&s);
  EXPECT_EQ_INT(s.version, -1); /* the last communicator unloaded it */
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s tree|mask0|unused|trace|trace_exit PLUGIN.so [NCCL_PROFILER_PLUGIN value]\n",
            argv[0]);
    return 2;
  }
  g_case = argv[1];
  g_plugin = argv[2];
  setenv("NCCL_PROFILER_PLUGIN", argc > 3 ? argv[3] : argv[2], 1);
  test_require_weft_lib();
  const char* cnt = getenv("PROF_COUNT");
  if (cnt && atol(cnt) > 0) g_count = (size_t)atol(cnt);
  const char* nr = getenv("PROF_NRANKS");
  int nranks = nr ? atoi(nr) : 2;
  prof_net_totals* net = mmap(NULL, sizeof *net, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT(net != MAP_FAILED);
  memset(net, 0, sizeof *net);
  int rc = test_fork_ranks(nranks, rank_main, net, 60);
  const char* want_net = getenv("PROF_EXPECT_NET");
  if (rc == 0 && want_net && strcmp(want_net, "none") != 0 && strcmp(g_case, "tree") == 0) {
    for (int r = 0; r < nranks && r < PROF_NET_MAX_RANKS; r++)
      if (net->nevents[r] == 0) {
        fprintf(stderr, "rank %d reported no NetPlugin event\n", r);
        rc = 1;
      }
    if (rc == 0) rc = prof_net_check_totals(net, nranks);
  }
  if (rc == 0) printf("PROFILER-TEST-OK %s\n", g_case);
  return rc;
}
