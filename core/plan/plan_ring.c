/* Ring setup of a work item: the ring of its channel and the connections it needs. The steps
 * themselves are algo.h's, shared with the kernels. */
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

void plan_ring_setup(weft_work* w) {
  const weft_op* op = w->op;
  int n = w->nranks;
  graph_ring(n, w->rank, w->channel, &w->ring);
  w->alg.ring_index = w->ring.index;
  w->alg.ring_prev = w->ring.prev;
  w->alg.ring_next = w->ring.next;
  if (n == 1) return;
  int recv = 1, send = 1;
  if (op->func == ncclFuncBroadcast) {
    recv = w->rank != op->root;
    send = w->ring.next != op->root;
  } else if (op->func == ncclFuncReduce) {
    recv = w->ring.prev != op->root;
    send = w->rank != op->root;
  }
  if (recv) set_key(w, 0, w->ring.prev, 0);
  if (send) set_key(w, 1, w->ring.next, 1);
}
