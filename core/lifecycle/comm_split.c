/* ncclCommSplit: ranks with the same color form a new communicator, ordered by key, ties
 * broken by parent rank; NCCL_SPLIT_NOCOLOR ranks take part in the exchange and get NULL.
 * The lowest parent rank of each color makes the new unique id and sends it to the others
 * over the parent's bootstrap. */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "plugin/net.h"
#include "util/check.h"

typedef struct {
  int color, key, rank;
} split_entry;

static int by_key_then_rank(const void* a, const void* b) {
  const split_entry *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : (x->rank > y->rank);
}

/* Bootstrap tags of split messages: distinct per split so consecutive splits cannot mix. */
#define SPLIT_TAG_BASE 0x53500000

ncclResult_t comm_split(struct ncclComm* parent, int color, int key, const ncclConfig_t* config,
                        struct ncclComm** out) {
  ncclResult_t res = ncclSuccess;
  int n = parent->nranks;
  split_entry* all = calloc((size_t)n, sizeof *all);
  split_entry* members = calloc((size_t)n, sizeof *members);
  if (!all || !members) {
    WARN("rank %d: out of memory splitting a %d-rank communicator", parent->rank, n);
    res = ncclSystemError;
    goto done;
  }
  all[parent->rank] = (split_entry){color, key, parent->rank};
  WEFT_CHECK_GOTO(bootstrap_allgather(parent->bootstrap, all, sizeof *all), res, done);
  int tag = SPLIT_TAG_BASE + (parent->split_count++ & 0xfffff);
  if (color == NCCL_SPLIT_NOCOLOR) {
    *out = NULL;
    goto done;
  }
  int m = 0;
  for (int r = 0; r < n; r++)
    if (all[r].color == color) members[m++] = all[r];
  qsort(members, (size_t)m, sizeof *members, by_key_then_rank);
  int my_new_rank = -1, leader = n;
  for (int i = 0; i < m; i++) {
    if (members[i].rank == parent->rank) my_new_rank = i;
    if (members[i].rank < leader) leader = members[i].rank;
  }

  ncclUniqueId id;
  if (parent->rank == leader) {
    WEFT_CHECK_GOTO(bootstrap_get_unique_id(&id), res, done);
    for (int i = 0; i < m; i++)
      if (members[i].rank != leader)
        WEFT_CHECK_GOTO(bootstrap_send(parent->bootstrap, members[i].rank, tag, &id, sizeof id),
                        res, done);
  } else {
    WEFT_CHECK_GOTO(bootstrap_recv(parent->bootstrap, leader, tag, &id, sizeof id), res, done);
  }

  struct ncclComm* child = NULL;
  WEFT_CHECK_GOTO(comm_alloc(m, my_new_rank, config, parent->cuda_dev, &child), res, done);
  child->split_child = 1;
  if (parent->net) { /* the child uses its parent's net context (as NCCL does) */
    net_retain(parent->net);
    child->net = parent->net;
  }
  res = comm_init_start(child, &id);
  if (res != ncclSuccess && res != ncclInProgress) {
    comm_free(child);
    goto done;
  }
  INFO(NCCL_INIT, "comm %p rank %d split color %d key %d -> comm %p rank %d of %d",
       (void*)parent, parent->rank, color, key, (void*)child, my_new_rank, m);
  *out = child;
done:
  free(all);
  free(members);
  return res;
}
