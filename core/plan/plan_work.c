/* A work item's shape: which algorithm generates its steps (algo.h), how big a step is, and the
 * connections it needs (a Send is a chain of sends through the FIFO to the peer, a Recv the
 * matching chain of receives). */
#include <string.h>

#include "comm/comm.h"
#include "plan/plan.h"
#include "util/check.h"
#include "weft.h"
#include "util/names.h"

_Static_assert((int)WEFT_FN_SEND == (int)ncclFuncSend && (int)WEFT_FN_RECV == (int)ncclFuncRecv &&
                   (int)WEFT_FN_ALLREDUCE == (int)ncclFuncAllReduce &&
                   (int)WEFT_FN_BROADCAST == (int)ncclFuncBroadcast,
               "algo.h repeats ncclFunc_t");
_Static_assert(WEFT_ALGO_RING_ID == NCCL_ALGO_RING && WEFT_ALGO_TREE_ID == NCCL_ALGO_TREE &&
                   WEFT_ALGO_COLLNET_CHAIN_ID == NCCL_ALGO_COLLNET_CHAIN,
               "algo.h repeats the algorithm ids");
_Static_assert(WEFT_ALGO_ONESHOT_ID >= NCCL_NUM_ALGORITHMS && WEFT_NUM_ALGORITHMS <= 32,
               "weft's algorithms follow NCCL's and fit a mask");
_Static_assert(WEFT_ALGO_ONESHOT == WEFT_ALGO_ONESHOT_ID &&
                   WEFT_ALGO_TWOSHOT == WEFT_ALGO_TWOSHOT_ID,
               "weft.h and algo.h agree on the ids");
_Static_assert(WEFT_ALGO_RECDOUBLING == WEFT_ALGO_RECDOUBLING_ID &&
                   WEFT_ALGO_RABENSEIFNER == WEFT_ALGO_RABENSEIFNER_ID &&
                   WEFT_ALGO_BINOMIAL == WEFT_ALGO_BINOMIAL_ID && WEFT_ALGO_PAT_ID == NCCL_ALGO_PAT,
               "weft.h, nccl.h and algo.h agree on the log algorithms' ids");

ncclResult_t plan_work_setup(weft_work* w) {
  const weft_op* op = w->op;
  struct ncclComm* comm = w->comm;
  for (int i = 0; i < WEFT_WORK_MAX_CONNS; i++) w->keys[i].peer = -1;
  w->nranks = comm->nranks;
  w->rank = comm->rank;
  w->src = op->sendbuff;
  w->dst = op->recvbuff;
  size_t step = comm->nranks > 1 ? transport_step_bytes(comm, op->proto) : (size_t)1 << 19;
  w->chunk = tune_chunk_bytes(op->proto, step, comm->mode == WEFT_MODE_HOST) / op->elem;
  if (w->chunk == 0) {
    WARN("rank %d: a %s step of %zu bytes cannot hold one %zu-byte element", comm->rank,
         tune_proto_name(op->proto), step, op->elem);
    return ncclInternalError;
  }
  w->nstreams = 1;
  weft_algo* a = &w->alg;
  memset(a, 0, sizeof *a);
  a->func = op->func;
  a->algo = op->algo;
  a->nranks = w->nranks;
  a->rank = w->rank;
  a->channel = w->channel;
  a->root = op->root;
  a->tree_up = -1;
  a->elem = op->elem;
  a->count = op->count;
  a->part_off = w->part_off;
  a->part_count = w->part_count;
  a->chunk = w->chunk;
  a->src = w->src;
  a->dst = w->dst;
  switch (op->func) {
    case ncclFuncSend:
    case ncclFuncRecv: {
      int send = op->func == ncclFuncSend;
      weft_conn_key* k = &w->keys[send ? 1 : 0];
      k->kind = WEFT_CONN_P2P;
      k->channel = w->channel;
      k->peer = op->root;
      k->send = send;
      k->proto = op->proto;
      break;
    }
    case ncclFuncAllReduce:
      if (op->algo == NCCL_ALGO_TREE) {
        plan_tree_setup(w);
        break;
      }
      if (op->algo == WEFT_ALGO_COLLNET_CHAIN_ID && comm->nranks > 1) {
        WEFT_CHECK(plan_collnet_setup(w));
        break;
      }
      /* fall through */
    default:
      if ((op->algo == WEFT_ALGO_ONESHOT_ID || op->algo == WEFT_ALGO_TWOSHOT_ID) &&
          comm->nranks > 1) {
        if (comm->nranks > WEFT_DIRECT_MAX_RANKS ||
            (op->algo == WEFT_ALGO_TWOSHOT_ID && op->func != ncclFuncAllReduce)) {
          WARN("rank %d: %s cannot run %s on %d ranks", comm->rank, tune_algo_name(op->algo),
               weft_func_name(op->func), comm->nranks);
          return ncclInternalError;
        }
        plan_direct_setup(w);
        break;
      }
      if (algo_is_log(op->algo) && comm->nranks > 1) {
        if (!plan_log_fits(op->algo, op->func, comm->nranks)) {
          WARN("rank %d: %s cannot run %s on %d ranks", comm->rank,
               tune_algo_name_for(op->func, op->algo), weft_func_name(op->func), comm->nranks);
          return ncclInternalError;
        }
        WEFT_CHECK(plan_log_setup(w));
        break;
      }
      a->algo = NCCL_ALGO_RING;
      plan_ring_setup(w);
      break;
  }
  if (op->zero_copy) {
    /* Set last: zc shares its bytes with the ring and tree fields. Windows: nothing passes
     * through a FIFO slot, so a channel's part is one step per block (algo_direct.h).
     * Registered buffers keep the slots' steps: a sender copies to a peer that cannot read
     * its buffer in place. */
    a->zero_copy = op->zero_copy;
    a->zc = op->zc;
    if (op->zero_copy == WEFT_ZC_WINDOWS) w->chunk = a->chunk = w->part_count ? w->part_count : 1;
  }
  algo_count_steps(a);
  w->npc[0] = a->npc[0];
  w->npc[1] = a->npc[1];
  return ncclSuccess;
}


