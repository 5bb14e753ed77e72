/* Group nesting and deferred inits (see group.h). State is per thread: a group belongs to the
 * thread that opened it. Errors are sticky: the first one is what End returns. */
#include "group/group.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

ncclResult_t group_end(void) {
  if (depth == 0) {
    WARN("ncclGroupEnd: no matching ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--depth > 0) return ncclSuccess;
  ncclResult_t res = run_deferred();
  if (sticky != ncclSuccess) res = sticky;
  sticky = ncclSuccess;
  return res;
}
