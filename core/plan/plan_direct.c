/* Direct (OneShot, TwoShot) setup of a work item: the connections to every peer of its channel
 * that the algorithm uses, by role (algo.h); the steps are algo_direct.h's, shared with the
 * kernels. */
#include "comm/comm.h"
#include "plan/plan.h"

static void set_key(weft_work* w, int role, int peer, int send) {
  weft_conn_key* k = &w->keys[role];
  k->kind = WEFT_CONN_COLL;
  k->channel = w->channel;
  k->peer = peer;
  k->send = send;
  k->proto = w->op->proto;
}

void plan_direct_setup(weft_work* w) {
  const weft_op* op = w->op;
  int n = w->nranks, r = w->rank, root = op->root;
  /* Which directions this rank uses: Broadcast only sends from the root, Reduce only into it. */
  int recv_all = 1, send_all = 1;
  if (op->func == ncclFuncBroadcast) recv_all = 0, send_all = r == root;
  if (op->func == ncclFuncReduce) recv_all = r == root, send_all = 0;
  for (int d = 1; d < n; d++) {
    int q = (r + d) % n;
    if (recv_all || (op->func == ncclFuncBroadcast && q == root)) set_key(w, d - 1, q, 0);
    if (send_all || (op->func == ncclFuncReduce && q == root))
      set_key(w, WEFT_DIRECT_SEND_ROLE0 + d - 1, q, 1);
  }
  if (op->func == ncclFuncAllReduce && op->algo == WEFT_ALGO_ONESHOT_ID) {
    w->nstreams = 2;     /* push, reduce */
    w->down_after_up = 1; /* in place, the reduce of chunk i overwrites what the push sends */
  }
}
