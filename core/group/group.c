/* Group nesting, deferred inits and queued operations (see group.h). State is per thread: a
 * group belongs to the thread that opened it. Errors are sticky: the first one is what End
 * returns, and a group with an error launches nothing. */
#include "group/group.h"
#include "lifecycle/lifecycle.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "util/check.h"
#include "util/names.h"

typedef struct deferred_init {
  struct ncclComm* comm;
  ncclUniqueId id;
  group_job_fn job; /* NULL: an init of comm with id */
  void* job_arg;
  int owns_arg;       /* job_arg is freed once the job ran or was dropped */
  group_drop_fn drop; /* an after-call's: frees job_arg when it does not run */
  ncclResult_t job_result;
  pthread_t thread;
  int started;
  struct deferred_init* next;
} deferred_init;

static __thread int depth;
static __thread deferred_init* pending;
static __thread deferred_init* pending_jobs;
static __thread deferred_init* pending_after; /* group_defer_after's, in call order */
static __thread ncclResult_t sticky;
/* Communicators with operations queued in the open group, in first-use order. */
static __thread struct ncclComm** op_comms;
static __thread int n_op_comms, cap_op_comms;
/* Communicators with an open GroupApi profiler event in the open group, in first-use order. */
static __thread struct ncclComm** api_comms;
static __thread int n_api_comms, cap_api_comms;

int group_depth(void) { return depth; }

ncclResult_t group_start(void) {
  if (depth == 0) sticky = ncclSuccess;
  depth++;
  return ncclSuccess;
}

ncclResult_t group_defer_init(struct ncclComm* comm, const ncclUniqueId* id) {
  deferred_init* d = calloc(1, sizeof *d);
  if (!d) {
    WARN("rank %d: out of memory queueing an init in a group", comm->rank);
    return ncclSystemError;
  }
  d->comm = comm;
  d->id = *id;
  d->next = pending;
  pending = d;
  return ncclSuccess;
}

static ncclResult_t queue_job(deferred_init** list, struct ncclComm* comm, group_job_fn fn,
                              void* arg, int owns, group_drop_fn drop) {
  deferred_init* d = calloc(1, sizeof *d);
  if (!d) {
    WARN("rank %d: out of memory queueing a call in a group", comm->rank);
    return ncclSystemError;
  }
  d->comm = comm;
  d->job = fn;
  d->job_arg = arg;
  d->owns_arg = owns;
  d->drop = drop;
  deferred_init** tail = list; /* in call order: a comm's jobs run in that order */
  while (*tail) tail = &(*tail)->next;
  *tail = d;
  return ncclSuccess;
}

ncclResult_t group_defer_job(struct ncclComm* comm, group_job_fn fn, void* arg) {
  return queue_job(&pending_jobs, comm, fn, arg, 0, NULL);
}

ncclResult_t group_defer_job_owned(struct ncclComm* comm, group_job_fn fn, void* arg) {
  return queue_job(&pending_jobs, comm, fn, arg, 1, NULL);
}

ncclResult_t group_defer_after(struct ncclComm* comm, group_job_fn fn, void* arg,
                               group_drop_fn drop) {
  return queue_job(&pending_after, comm, fn, arg, 0, drop);
}

static void free_job(deferred_init* d) {
  if (d->owns_arg) free(d->job_arg);
  free(d);
}

/* Free a list of jobs that will not run. */
static void drop_jobs(deferred_init* list) {
  while (list) {
    deferred_init* d = list;
    list = d->next;
    if (d->drop) d->drop(d->job_arg);
    free_job(d);
  }
}

static void* run_init(void* arg) {
  deferred_init* d = arg;
  if (d->job) { /* d is the comm's first job: its jobs, in call order, on this one thread */
    for (deferred_init* j = d; j; j = j->next)
      if (j->comm == d->comm) j->job_result = j->job(j->comm, j->job_arg);
    return NULL;
  }
  comm_init_run(d->comm, &d->id);
  return NULL;
}

/* The queued jobs: one thread per communicator runs its jobs in call order. */
static ncclResult_t run_jobs(deferred_init** pending_list) {
  ncclResult_t res = ncclSuccess;
  deferred_init* list = *pending_list;
  *pending_list = NULL;
  for (deferred_init* d = list; d; d = d->next) {
    int first = 1;
    for (deferred_init* e = list; e != d; e = e->next)
      if (e->comm == d->comm) first = 0;
    if (!first) continue; /* run by its comm's first job's thread */
    int rc = pthread_create(&d->thread, NULL, run_init, d);
    if (rc != 0) {
      WARN("rank %d: cannot start a group thread: %s", d->comm->rank, strerror(rc));
      for (deferred_init* e = d; e; e = e->next)
        if (e->comm == d->comm) {
          e->job_result = ncclSystemError;
          if (e->drop) e->drop(e->job_arg);
        }
      continue;
    }
    d->started = 1; /* owns the thread */
  }
  for (deferred_init* d = list; d; d = d->next)
    if (d->started == 1) pthread_join(d->thread, NULL);
  while (list) {
    deferred_init* d = list;
    list = d->next;
    if (res == ncclSuccess && d->job_result != ncclSuccess) res = d->job_result;
    free_job(d);
  }
  return res;
}

/* All deferred inits run at once: each blocks until its peers arrive, and the peers may be
 * other inits of this very group. */
static ncclResult_t run_deferred(void) {
  ncclResult_t res = ncclSuccess;
  deferred_init* list = pending;
  pending = NULL;
  for (deferred_init* d = list; d; d = d->next) {
    int rc = pthread_create(&d->thread, NULL, run_init, d);
    if (rc != 0) {
      WARN("rank %d: cannot start an init thread: %s", d->comm->rank, strerror(rc));
      __atomic_store_n(&d->comm->state, WEFT_COMM_FAILED, __ATOMIC_RELEASE);
      __atomic_store_n(&d->comm->async_error, ncclSystemError, __ATOMIC_RELEASE);
      res = ncclSystemError;
    } else {
      d->started = 1;
    }
  }
  while (list) {
    deferred_init* d = list;
    list = d->next;
    if (d->started) pthread_join(d->thread, NULL);
    ncclResult_t r = (ncclResult_t)__atomic_load_n(&d->comm->async_error, __ATOMIC_ACQUIRE);
    if (res == ncclSuccess && r != ncclSuccess) res = r;
    free(d);
  }
  return res;
}

static ncclResult_t remember_comm(struct ncclComm* comm) {
  if (comm->plan->in_group) return ncclSuccess;
  if (n_op_comms == cap_op_comms) {
    int cap = cap_op_comms ? 2 * cap_op_comms : 8;
    struct ncclComm** grown = realloc(op_comms, (size_t)cap * sizeof *grown);
    if (!grown) {
      WARN("rank %d: out of memory adding a communicator to a group", comm->rank);
      return ncclSystemError;
    }
    op_comms = grown;
    cap_op_comms = cap;
  }
  op_comms[n_op_comms++] = comm;
  comm->plan->in_group = 1;
  return ncclSuccess;
}

/* Queue op inside the open group (or run it, plan_local.c). */
static ncclResult_t enqueue_op(struct ncclComm* comm, const weft_op* op) {
  int queued = 0;
  ncclResult_t res = plan_enqueue(comm, op, &queued);
  if (res == ncclSuccess && queued) res = remember_comm(comm);
  /* An invalid argument has no effect on the group; anything else poisons it. */
  if (res != ncclSuccess && res != ncclInvalidArgument && sticky == ncclSuccess) sticky = res;
  return res;
}

/* The profiler asks for API events: GroupApi at the communicator's first op in the group (as
 * NCCL: GroupStartApiStop right away), the call's CollApi/P2pApi around its enqueue, and the
 * Coll event of a one-rank collective that runs at once. */
static ncclResult_t enqueue_profiled(struct ncclComm* comm, const weft_op* op) {
  weft_prof* pf = &comm->prof;
  if (pf->group_api == NULL) {
    if (n_api_comms == cap_api_comms) {
      int cap = cap_api_comms ? 2 * cap_api_comms : 8;
      struct ncclComm** grown = realloc(api_comms, (size_t)cap * sizeof *grown);
      if (grown) {
        api_comms = grown;
        cap_api_comms = cap;
      }
    }
    if (n_api_comms < cap_api_comms) {
      ncclProfilerEventDescr_v6_t d;
      memset(&d, 0, sizeof d);
      d.type = ncclProfileGroupApi;
      d.rank = comm->rank;
      d.groupApi.groupDepth = depth;
      pf->group_api = prof_start(pf, &d);
      if (pf->group_api) {
        api_comms[n_api_comms++] = comm;
        prof_state(pf, pf->group_api, ncclProfilerGroupStartApiStop, NULL);
      }
    }
  }
  weft_op o = *op;
  int p2p = op->func == ncclFuncSend || op->func == ncclFuncRecv;
  if (PROF_ON(pf, p2p ? WEFT_PROF_P2P_TREE : WEFT_PROF_COLL_TREE)) {
    ncclProfilerEventDescr_v6_t d;
    memset(&d, 0, sizeof d);
    d.type = p2p ? ncclProfileP2pApi : ncclProfileCollApi;
    d.parentObj = pf->group_api;
    d.rank = comm->rank;
    if (p2p) {
      d.p2pApi.func = prof_func_name(op->func);
      d.p2pApi.count = op->count;
      d.p2pApi.datatype = prof_dtype_name(op->dtype);
      d.p2pApi.stream = op->stream;
    } else {
      d.collApi.func = prof_func_name(op->func);
      d.collApi.count = op->count;
      d.collApi.datatype = prof_dtype_name(op->dtype);
      d.collApi.root = op->root;
      d.collApi.stream = op->stream;
    }
    o.prof_api = prof_start(pf, &d);
  }
  void* local = comm->plan && plan_local_applies(comm, &o) ? plan_prof_local_coll(comm, &o) : NULL;
  ncclResult_t res = enqueue_op(comm, &o);
  prof_stop(pf, local);
  prof_stop(pf, o.prof_api);
  return res;
}

ncclResult_t group_add_op(struct ncclComm* comm, const weft_op* op) {
  int implicit = depth == 0;
  if (implicit) group_start();
  ncclResult_t res = PROF_ON(&comm->prof, WEFT_PROF_ALL) ? enqueue_profiled(comm, op)
                                                         : enqueue_op(comm, op);
  if (!implicit) return res;
  ncclResult_t end = group_end();
  return res != ncclSuccess ? res : end;
}

/* Drop comm from the GroupApi list (its event stopped by the caller or the launch). */
static void forget_api_comm(struct ncclComm* comm) {
  for (int i = 0; i < n_api_comms; i++) {
    if (api_comms[i] != comm) continue;
    memmove(&api_comms[i], &api_comms[i + 1], (size_t)(n_api_comms - i - 1) * sizeof *api_comms);
    n_api_comms--;
    return;
  }
}

void group_forget_comm(struct ncclComm* comm, const char* fn) {
  forget_api_comm(comm);
  prof_group_api_stop(&comm->prof);
  for (deferred_init** d = &pending; *d; d = &(*d)->next) {
    if ((*d)->comm != comm) continue;
    deferred_init* gone = *d;
    *d = gone->next;
    free(gone);
    WARN("%s: rank %d: the communicator's init was still queued in the open group; it is "
         "dropped",
         fn, comm->rank);
    break;
  }
  for (deferred_init** d = &pending_jobs; *d;) {
    if ((*d)->comm != comm) {
      d = &(*d)->next;
      continue;
    }
    deferred_init* gone = *d;
    *d = gone->next;
    free_job(gone);
    WARN("%s: rank %d: a call queued in the open group (a window registration or a split) is "
         "dropped",
         fn, comm->rank);
  }
  for (deferred_init** d = &pending_after; *d;) {
    if ((*d)->comm != comm) {
      d = &(*d)->next;
      continue;
    }
    deferred_init* gone = *d;
    *d = gone->next;
    gone->next = NULL;
    drop_jobs(gone);
    WARN("%s: rank %d: a one-sided call queued in the open group is dropped", fn, comm->rank);
  }
  for (int i = 0; i < n_op_comms; i++) {
    if (op_comms[i] != comm) continue;
    int nops = comm->plan ? comm->plan->npending : 0;
    if (nops > 0)
      WARN("%s: rank %d: %d operation(s) queued on this communicator in the open group are "
           "dropped; the group's other communicators still launch at ncclGroupEnd",
           fn, comm->rank, nops);
    plan_discard(comm);
    comm->plan->in_group = 0;
    memmove(&op_comms[i], &op_comms[i + 1], (size_t)(n_op_comms - i - 1) * sizeof *op_comms);
    n_op_comms--;
    break;
  }
}

/* Launch (or, after an error, drop) the operations queued in the group. */
static ncclResult_t run_ops(ncclResult_t res) {
  if (n_op_comms == 0) return ncclSuccess;
  struct ncclComm** comms = op_comms;
  int n = n_op_comms;
  op_comms = NULL;
  n_op_comms = cap_op_comms = 0;
  /* Nothing touches a comm after its launch returns (an abort may be freeing it then). */
  for (int i = 0; i < n; i++) comms[i]->plan->in_group = 0;
  ncclResult_t r = ncclSuccess;
  if (res == ncclSuccess) {
    r = plan_launch(comms, n);
  } else {
    for (int i = 0; i < n; i++) plan_discard(comms[i]);
  }
  free(comms);
  return r;
}

/* The outermost End begins: GroupEndApiStart on every GroupApi event; those of communicators
 * that launch are stopped by the launch (plan/), the others (nothing queued, an error or a
 * simulation: nothing launches) here and now. */
static void api_comms_end(int launches) {
  for (int i = 0; i < n_api_comms; i++) {
    struct ncclComm* c = api_comms[i];
    prof_state(&c->prof, c->prof.group_api, ncclProfilerGroupEndApiStart, NULL);
    if (!launches || !c->plan || !c->plan->in_group) prof_group_api_stop(&c->prof);
  }
  n_api_comms = 0;
}

/* A simulation: every communicator's queued ops are priced and dropped. The group takes as
 * long as its slowest communicator (their launches run side by side). */
static double simulate_ops(void) {
  double worst = 0;
  for (int i = 0; i < n_op_comms; i++) {
    struct ncclComm* c = op_comms[i];
    c->plan->in_group = 0;
    double us = plan_simulate(c);
    if (us > worst) worst = us;
  }
  free(op_comms);
  op_comms = NULL;
  n_op_comms = cap_op_comms = 0;
  return worst;
}

/* The outermost End, real (sim_us NULL) or simulated. res: an error found before (a bad
 * ncclSimInfo_t), which launches nothing, as a sticky error does. Deferred inits and jobs run
 * either way; the group is closed whatever happens. The calls deferred to after the operations
 * (one-sided) run only after a real End whose operations succeeded; else they are dropped. */
static ncclResult_t close_group(ncclResult_t res, double* sim_us) {
  ncclResult_t r = run_deferred();
  ncclResult_t jobs = run_jobs(&pending_jobs);
  if (r == ncclSuccess) r = jobs;
  if (sticky != ncclSuccess) r = sticky;
  if (res == ncclSuccess) res = r;
  if (n_api_comms) api_comms_end(res == ncclSuccess && sim_us == NULL);
  int run_after = 0;
  if (sim_us && res == ncclSuccess) {
    *sim_us = simulate_ops();
  } else {
    ncclResult_t ops = run_ops(res);
    if (res == ncclSuccess) res = ops;
    run_after = sim_us == NULL && res == ncclSuccess;
  }
  if (run_after) {
    res = run_jobs(&pending_after);
  } else {
    deferred_init* list = pending_after;
    pending_after = NULL;
    drop_jobs(list);
  }
  sticky = ncclSuccess;
  return res;
}

static ncclResult_t end(const char* fn, ncclResult_t res, double* sim_us) {
  if (depth == 0) {
    WARN("%s: no matching ncclGroupStart", fn);
    return res != ncclSuccess ? res : ncclInvalidUsage; /* a bad argument is named first */
  }
  if (--depth > 0) return res;
  return close_group(res, sim_us);
}

ncclResult_t group_end(void) { return end("ncclGroupEnd", ncclSuccess, NULL); }

ncclResult_t group_end_simulated(ncclResult_t res, double* us) {
  *us = -1; /* an inner End estimates nothing */
  return end("ncclGroupSimulateEnd", res, us);
}
