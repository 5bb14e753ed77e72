/* ncclCommShrink: a new communicator of the parent's ranks minus the excluded ones, renumbered
 * in parent order. Only the survivors take part, and nothing waits for an excluded rank: the
 * lowest surviving parent rank makes a fresh unique id and sends it, with a hash of the
 * excluded list, to each other survivor over the parent's bootstrap (point to point; no
 * collective of the parent, which would wait for a dead rank). A survivor whose list differs
 * gets ncclInvalidUsage naming both hashes. The new communicator's own init then involves the
 * survivors alone. NCCL_SHRINK_ABORT revokes the parent first (comm_revoke.c), so its work in
 * flight stops. */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "plugin/net.h"
#include "util/check.h"

/* Bootstrap tags of shrink messages; the counter is the one split uses, so consecutive splits
 * and shrinks cannot mix. */
#define SHRINK_TAG_BASE 0x53480000

typedef struct {
  ncclUniqueId id;
  uint64_t list_hash;
} shrink_msg;

/* The excluded set as a bitmap hash: independent of the list's order. */
static uint64_t hash_excluded(const unsigned char* excluded, int n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int r = 0; r < n; r++) h = (h ^ (uint64_t)(excluded[r] ? r + 1 : 0)) * 0x100000001b3ull;
  return h;
}

ncclResult_t comm_shrink(struct ncclComm* parent, const int* exclude, int nexclude,
                         const ncclConfig_t* config, int abort_first, struct ncclComm** out) {
  int n = parent->nranks;
  unsigned char* excluded = calloc((size_t)n, 1);
  if (!excluded) {
    WARN("rank %d: out of memory shrinking a %d-rank communicator", parent->rank, n);
    return ncclSystemError;
  }
  for (int i = 0; i < nexclude; i++) excluded[exclude[i]] = 1;
  ncclResult_t res = ncclSuccess;
  if (abort_first && !__atomic_load_n(&parent->revoked, __ATOMIC_ACQUIRE)) {
    /* Waited for here whatever the parent's config: the new comm needs the bootstrap back. */
    res = comm_revoke(parent, 1);
    if (res != ncclSuccess) goto done;
  }
  int m = 0, my_new_rank = -1, leader = -1;
  for (int r = 0; r < n; r++) {
    if (excluded[r]) continue;
    if (leader < 0) leader = r;
    if (r == parent->rank) my_new_rank = m;
    m++;
  }
  uint64_t hash = hash_excluded(excluded, n);
  int tag = SHRINK_TAG_BASE + (parent->split_count++ & 0xfffff);
  shrink_msg msg = {.list_hash = hash};
  if (parent->rank == leader) {
    WEFT_CHECK_GOTO(bootstrap_get_unique_id(&msg.id), res, done);
    for (int r = leader + 1; r < n; r++)
      if (!excluded[r])
        WEFT_CHECK_GOTO(bootstrap_send(parent->bootstrap, r, tag, &msg, sizeof msg), res, done);
  } else {
    WEFT_CHECK_GOTO(bootstrap_recv(parent->bootstrap, leader, tag, &msg, sizeof msg), res, done);
    if (msg.list_hash != hash) {
      WARN("rank %d: ncclCommShrink: excludeRanksList differs from rank %d's (hash 0x%llx, "
           "rank %d's 0x%llx); every surviving rank must pass the same ranks",
           parent->rank, leader, (unsigned long long)hash, leader,
           (unsigned long long)msg.list_hash);
      res = ncclInvalidUsage;
      goto done;
    }
  }

  struct ncclComm* child = NULL;
  WEFT_CHECK_GOTO(comm_alloc(m, my_new_rank, config, parent->cuda_dev, &child), res, done);
  if (parent->net) { /* the net plugin context is shared, as split shares it */
    net_retain(parent->net);
    child->net = parent->net;
  }
  res = comm_init_start(child, &msg.id);
  if (res != ncclSuccess && res != ncclInProgress) {
    comm_free(child);
    goto done;
  }
  INFO(NCCL_INIT, "comm %p rank %d shrink excluding %d ranks -> comm %p rank %d of %d%s",
       (void*)parent, parent->rank, nexclude, (void*)child, my_new_rank, m,
       abort_first ? " (parent revoked first)" : "");
  *out = child;
done:
  free(excluded);
  return res;
}
