/* Group nesting, deferred inits and queued operations (see group.h). State is per thread: a
 * group belongs to the thread that opened it. Errors are sticky: the first one is what End
 * returns, and a group with an error launches nothing. */
#include "group/group.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "util/check.h"

typedef struct deferred_init {
  struct ncclComm* comm;
  ncclUniqueId id;
  pthread_t thread;
  int started;
  struct deferred_init* next;
} deferred_init;

static __thread int depth;
static __thread deferred_init* pending;
static __thread ncclResult_t sticky;
/* Communicators with operations queued in the open group, in first-use order. */
static __thread struct ncclComm** op_comms;
static __thread int n_op_comms, cap_op_comms;

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

static void* run_init(void* arg) {
  deferred_init* d = arg;
  comm_init_run(d->comm, &d->id);
  return NULL;
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

ncclResult_t group_add_op(struct ncclComm* comm, const weft_op* op) {
  int implicit = depth == 0;
  if (implicit) group_start();
  int queued = 0;
  ncclResult_t res = plan_enqueue(comm, op, &queued);
  if (res == ncclSuccess && queued) res = remember_comm(comm);
  /* An invalid argument has no effect on the group; anything else poisons it. */
  if (res != ncclSuccess && res != ncclInvalidArgument && sticky == ncclSuccess) sticky = res;
  if (!implicit) return res;
  ncclResult_t end = group_end();
  return res != ncclSuccess ? res : end;
}

void group_forget_comm(struct ncclComm* comm, const char* fn) {
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

ncclResult_t group_end(void) {
  if (depth == 0) {
    WARN("ncclGroupEnd: no matching ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--depth > 0) return ncclSuccess;
  ncclResult_t res = run_deferred();
  if (sticky != ncclSuccess) res = sticky;
  ncclResult_t ops = run_ops(res);
  if (res == ncclSuccess) res = ops;
  sticky = ncclSuccess;
  return res;
}
