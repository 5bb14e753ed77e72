/* CollNet AllReduce in host mode (algo/algo_collnet.h for the steps): the group of the hosts'
 * leaders through the net library's CollNet plugin, made lazily by the first operation that
 * uses it, and the net step the host executor calls through weft_netcoll.
 *
 * Connect (plan_op.c's prepare, every rank of the communicator, in the same launch: all ranks
 * chose CollNet for the same op): each leader (rank hP) listens on device 0 and the handles go
 * round in one bootstrap allgather (a non-leader's entry is empty); leader h then connects as
 * rank h of H. A second allgather agrees the outcome, so either every leader has the group or
 * every rank fails the operation alike (ncclSystemError: plan/ then marks the communicator
 * failed, as for any connection setup that failed).
 *
 * A net step registers the step's part of the user's buffer (send) and a scratch buffer the
 * group owns (receive, registered once, grown when a step is larger), calls iallreduce, tests
 * until done and copies the result back: the plugin never writes the buffer it reads. Items
 * take turns on the group in launch and op order (plan_collnet_take_turns), each holding it
 * for all its steps, so every leader issues the same reductions in the same order. */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "plan/plan.h"
#include "plugin/kind.h"
#include "util/check.h"
#include "util/names.h"

struct plan_collnet {
  weft_netcoll nc; /* first: the executors' view */
  struct ncclComm* comm;
  weft_kind_plugin* plugin;
  int ppn, leader, attempted, failed;
  void *listen, *coll;
  char* scratch;
  size_t scratch_bytes;
  void* scratch_mh;
  uint64_t turns;   /* tickets handed out (launching thread) */
  uint64_t serving; /* the ticket whose item holds the group (atomic) */
  uint64_t calls;   /* iallreduce calls made, for the log */
};

static const char* plugin_name(const struct plan_collnet* c) { return c->plugin->name; }

static void warn_call(const struct plan_collnet* c, const char* call, ncclResult_t r) {
  WARN("rank %d: CollNet/Plugin %s (%s): %s returned %s", c->comm->rank, c->plugin->path,
       plugin_name(c), call, weft_result_str(r));
}

/* Scratch of at least bytes, registered with the group. */
static ncclResult_t scratch_fit(struct plan_collnet* c, size_t bytes) {
  if (bytes <= c->scratch_bytes) return ncclSuccess;
  const weft_collnet_view* v = &c->plugin->collnet;
  if (c->scratch_mh) collnet_shim_dereg_mr(v, c->coll, c->scratch_mh);
  c->scratch_mh = NULL;
  free(c->scratch);
  c->scratch_bytes = 0;
  c->scratch = malloc(bytes);
  if (c->scratch == NULL) {
    WARN("rank %d: out of memory for %zu bytes of CollNet scratch", c->comm->rank, bytes);
    return ncclSystemError;
  }
  ncclResult_t r = collnet_shim_reg_mr(v, c->coll, c->scratch, bytes, NCCL_PTR_HOST,
                                       &c->scratch_mh);
  if (r != ncclSuccess) {
    warn_call(c, "regMr (scratch)", r);
    free(c->scratch);
    c->scratch = NULL;
    return r;
  }
  c->scratch_bytes = bytes;
  return ncclSuccess;
}

/* The item's turn is over: the next one may start. */
static void pass_turn(struct plan_collnet* c) {
  __atomic_add_fetch(&c->serving, 1, __ATOMIC_RELEASE);
}

static int net_fail(struct plan_collnet* c, weft_work* w, const char* call, ncclResult_t r,
                    ncclResult_t* res) {
  warn_call(c, call, r);
  if (w->net_mh) collnet_shim_dereg_mr(&c->plugin->collnet, c->coll, w->net_mh);
  w->net_mh = w->net_req = NULL;
  pass_turn(c);
  *res = r == ncclSuccess ? ncclInternalError : r;
  return -1;
}

static int collnet_step(weft_netcoll* nc, weft_work* w, char* buf, size_t nelem,
                        ncclResult_t* res) {
  struct plan_collnet* c = (struct plan_collnet*)nc;
  const weft_collnet_view* v = &c->plugin->collnet;
  const weft_op* op = w->op;
  size_t bytes = nelem * op->elem;
  if (w->net_req == NULL) {
    if (__atomic_load_n(&c->serving, __ATOMIC_ACQUIRE) != w->net_ticket) return 0;
    if (c->coll == NULL) return net_fail(c, w, "the group (not connected)", ncclInternalError, res);
    ncclResult_t r = scratch_fit(c, bytes);
    if (r != ncclSuccess) return net_fail(c, w, "the scratch buffer", r, res);
    r = collnet_shim_reg_mr(v, c->coll, buf, bytes, NCCL_PTR_HOST, &w->net_mh);
    if (r != ncclSuccess) return net_fail(c, w, "regMr", r, res);
    void* req = NULL;
    r = collnet_shim_iallreduce(v, c->coll, buf, c->scratch, nelem, op->dtype, op->user_op,
                                w->net_mh, c->scratch_mh, &req);
    if (r != ncclSuccess) return net_fail(c, w, "iallreduce", r, res);
    if (req == NULL) { /* the plugin asks to be called again */
      collnet_shim_dereg_mr(v, c->coll, w->net_mh);
      w->net_mh = NULL;
      return 0;
    }
    w->net_req = req;
    __atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
  }
  int done = 0, size = 0;
  ncclResult_t r = collnet_shim_test(v, w->net_req, &done, &size);
  if (r != ncclSuccess) return net_fail(c, w, "test", r, res);
  if (!done) return 0;
  w->net_req = NULL;
  if ((size_t)size != bytes) {
    WARN("rank %d: CollNet/Plugin %s: iallreduce of %zu %s reported %d bytes received, not %zu",
         w->rank, plugin_name(c), nelem, dtype_name(op->dtype), size, bytes);
    return net_fail(c, w, "test", ncclSystemError, res);
  }
  memcpy(buf, c->scratch, bytes);
  collnet_shim_dereg_mr(v, c->coll, w->net_mh);
  w->net_mh = NULL;
  if (++w->net_steps == algo_divup(w->alg.part_count, w->alg.chunk)) pass_turn(c);
  return 1;
}

ncclResult_t plan_collnet_init(struct ncclComm* comm) {
  if (comm->collnet == NULL || comm->mode != WEFT_MODE_HOST) return ncclSuccess;
  struct plan_collnet* c = calloc(1, sizeof *c);
  if (c == NULL) {
    WARN("rank %d: out of memory for the CollNet state", comm->rank);
    return ncclSystemError;
  }
  c->nc.step = collnet_step;
  c->comm = comm;
  c->plugin = comm->collnet;
  c->ppn = comm_host_major_ppn(comm->peers, comm->nranks);
  c->leader = c->ppn > 0 && comm->rank % c->ppn == 0;
  comm->plan->collnet = c;
  return ncclSuccess;
}

void plan_collnet_fini(struct ncclComm* comm) {
  struct plan_collnet* c = comm->plan->collnet;
  if (c == NULL) return;
  const weft_collnet_view* v = &c->plugin->collnet;
  if (c->scratch_mh) collnet_shim_dereg_mr(v, c->coll, c->scratch_mh);
  if (c->coll && collnet_shim_close_coll(v, c->coll) != ncclSuccess)
    WARN("rank %d: CollNet/Plugin %s: closeColl failed", comm->rank, plugin_name(c));
  if (c->listen && collnet_shim_close_listen(v, c->listen) != ncclSuccess)
    WARN("rank %d: CollNet/Plugin %s: closeListen failed", comm->rank, plugin_name(c));
  if (c->calls)
    INFO(NCCL_NET | NCCL_COLL, "rank %d: CollNet/Plugin %s: %llu iallreduce call(s)", comm->rank,
         plugin_name(c), (unsigned long long)c->calls);
  free(c->scratch);
  free(c);
  comm->plan->collnet = NULL;
}

int plan_collnet_needs_connect(const struct ncclComm* comm) {
  const struct plan_collnet* c = comm->plan->collnet;
  return c != NULL && !c->attempted;
}

ncclResult_t plan_collnet_connect(struct ncclComm* comm) {
  struct plan_collnet* c = comm->plan->collnet;
  if (c == NULL || c->ppn == 0) {
    WARN("rank %d: CollNet chosen without a CollNet group (ranks not host-major)", comm->rank);
    return ncclInternalError;
  }
  if (c->attempted) return c->failed ? ncclSystemError : ncclSuccess;
  c->attempted = 1;
  const weft_collnet_view* v = &c->plugin->collnet;
  int n = comm->nranks, H = n / c->ppn;
  ncclResult_t res = ncclSuccess, r = ncclSuccess;
  char* handles = calloc((size_t)n, NCCL_NET_HANDLE_MAXSIZE);
  void** hp = calloc((size_t)H, sizeof *hp);
  int32_t* ok = calloc((size_t)n, sizeof *ok);
  if (!handles || !hp || !ok) {
    WARN("rank %d: out of memory connecting CollNet", comm->rank);
    res = ncclSystemError;
    goto out;
  }
  if (c->leader) {
    char* mine = handles + (size_t)comm->rank * NCCL_NET_HANDLE_MAXSIZE;
    r = collnet_shim_listen(v, c->plugin->ctx, 0, mine, &c->listen);
    if (r != ncclSuccess) warn_call(c, "listen", r);
  }
  /* Everyone takes part in both exchanges, whatever happened locally: no rank waits alone. */
  WEFT_CHECK_GOTO(bootstrap_allgather(comm->bootstrap, handles, NCCL_NET_HANDLE_MAXSIZE), res,
                  out);
  if (c->leader && r == ncclSuccess) {
    for (int h = 0; h < H; h++) hp[h] = handles + (size_t)h * c->ppn * NCCL_NET_HANDLE_MAXSIZE;
    r = collnet_shim_connect(v, hp, H, comm->rank / c->ppn, c->listen, &c->coll);
    if (r != ncclSuccess) warn_call(c, "connect", r);
  }
  ok[comm->rank] = r == ncclSuccess;
  WEFT_CHECK_GOTO(bootstrap_allgather(comm->bootstrap, ok, sizeof *ok), res, out);
  for (int q = 0; q < n; q++) {
    if (ok[q]) continue;
    if (comm->rank == 0 || q == comm->rank)
      WARN("rank %d: CollNet group of %d hosts not made: leader rank %d failed to listen or "
           "connect through %s",
           comm->rank, H, q, plugin_name(c));
    res = ncclSystemError;
    break;
  }
  if (res == ncclSuccess)
    INFO(NCCL_INIT | NCCL_NET, "rank %d: CollNet group of %d hosts x %d rank(s) through %s%s",
         comm->rank, H, c->ppn, plugin_name(c), c->leader ? " (leader)" : "");
out:
  c->failed = res != ncclSuccess;
  free(handles);
  free(hp);
  free(ok);
  return res;
}

ncclResult_t plan_collnet_setup(weft_work* w) {
  struct plan_collnet* c = w->comm->plan->collnet;
  weft_algo* a = &w->alg;
  if (c == NULL || c->ppn == 0 || w->op->func != ncclFuncAllReduce) {
    WARN("rank %d: CollNet cannot run %s here (no CollNet group, or ranks not host-major)",
         w->rank, weft_func_name(w->op->func));
    return ncclInternalError;
  }
  a->log_ppn = c->ppn;
  algo_count_steps(a);
  WEFT_CHECK(plan_role_keys(w, algo_collnet_steps_per_loop(a), algo_collnet_peer, "CollNet"));
  w->netcoll = c->leader ? &c->nc : NULL;
  return ncclSuccess;
}

void plan_collnet_take_turns(weft_work* works, int n) {
  for (int i = 0; i < n; i++) {
    weft_work* w = &works[i];
    if (w->netcoll == NULL) continue;
    struct plan_collnet* c = (struct plan_collnet*)w->netcoll;
    w->net_ticket = c->turns++;
  }
}
