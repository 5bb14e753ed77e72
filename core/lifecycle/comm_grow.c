/* ncclCommGetUniqueId and the existing ranks' side of ncclCommGrow. One existing rank (the
 * root) makes an id for the grow; the application hands it to the new processes, which join
 * with an ordinary init of the larger size (api/api_init.c). The existing ranks gather, over
 * the parent's bootstrap, who holds the id and the size each asked for; exactly one rank must
 * hold it and every size must agree, else every rank fails with ncclInvalidUsage naming the
 * ranks. They then init the larger communicator with their parent rank numbers. An id is
 * single-use: the root's grow consumes it, and a second id is refused while one is live. */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "plugin/net.h"
#include "util/check.h"

ncclResult_t comm_grow_unique_id(struct ncclComm* comm, ncclUniqueId* out) {
  pthread_mutex_lock(&comm->lock);
  if (comm->grow_id_live) {
    pthread_mutex_unlock(&comm->lock);
    WARN("ncclCommGetUniqueId: comm %p (rank %d) already holds an id that no ncclCommGrow has "
         "used; grow with it first", (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  ncclResult_t res = bootstrap_get_unique_id(&comm->grow_id);
  if (res == ncclSuccess) {
    comm->grow_id_live = 1;
    *out = comm->grow_id;
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

typedef struct {
  int has_id;
  int nranks;
  ncclUniqueId id;
} grow_entry;

ncclResult_t comm_grow(struct ncclComm* parent, int nranks, const ncclUniqueId* id,
                       const ncclConfig_t* config, struct ncclComm** out) {
  if (id != NULL) {
    pthread_mutex_lock(&parent->lock);
    int ok = parent->grow_id_live && memcmp(id, &parent->grow_id, sizeof *id) == 0;
    if (ok) parent->grow_id_live = 0; /* consumed from here on, whatever follows */
    pthread_mutex_unlock(&parent->lock);
    if (!ok) {
      WARN("ncclCommGrow: rank %d: uniqueId is not an unused id from ncclCommGetUniqueId on "
           "this communicator (each id serves one grow)", parent->rank);
      return ncclInvalidArgument;
    }
  }
  int n = parent->nranks;
  grow_entry* all = calloc((size_t)n, sizeof *all);
  if (!all) {
    WARN("rank %d: out of memory growing a %d-rank communicator", parent->rank, n);
    return ncclSystemError;
  }
  ncclResult_t res = ncclSuccess;
  all[parent->rank].has_id = id != NULL;
  all[parent->rank].nranks = nranks;
  if (id) all[parent->rank].id = *id;
  WEFT_CHECK_GOTO(bootstrap_allgather(parent->bootstrap, all, sizeof *all), res, done);
  int root = -1;
  for (int r = 0; r < n; r++) {
    if (all[r].nranks != nranks) {
      WARN("rank %d: ncclCommGrow: nRanks differs: this rank asked for %d, rank %d for %d",
           parent->rank, nranks, r, all[r].nranks);
      res = ncclInvalidUsage;
      goto done;
    }
    if (!all[r].has_id) continue;
    if (root >= 0) {
      WARN("rank %d: ncclCommGrow: ranks %d and %d both passed a uniqueId; only the rank that "
           "called ncclCommGetUniqueId passes it, the others pass NULL", parent->rank, root, r);
      res = ncclInvalidUsage;
      goto done;
    }
    root = r;
  }
  if (root < 0) {
    WARN("rank %d: ncclCommGrow: no existing rank passed a uniqueId (the rank that called "
         "ncclCommGetUniqueId must)", parent->rank);
    res = ncclInvalidUsage;
    goto done;
  }
  struct ncclComm* child = NULL;
  WEFT_CHECK_GOTO(comm_alloc(nranks, parent->rank, config, parent->cuda_dev, &child), res, done);
  if (parent->net) {
    net_retain(parent->net);
    child->net = parent->net;
  }
  res = comm_init_start(child, &all[root].id);
  if (res != ncclSuccess && res != ncclInProgress) {
    comm_free(child);
    goto done;
  }
  INFO(NCCL_INIT, "comm %p rank %d grow %d -> %d ranks (id from rank %d) -> comm %p",
       (void*)parent, parent->rank, n, nranks, root, (void*)child);
  *out = child;
done:
  free(all);
  return res;
}
