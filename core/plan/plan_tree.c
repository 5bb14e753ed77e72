/* Tree AllReduce over one channel's tree (graph/: channel c uses tree c % 2 of the double
 * binary tree). Two streams of one step per chunk each:
 *   up:   leaf send(pre) · interior recvReduceSend(children + pre(src)) · root
 *         recvReduceCopy(children + pre(src) → dst, post);
 *   down: root copySend(dst → children) · interior recvCopySend(up → dst, children) · leaf
 *         recv(up → dst).
 * They run concurrently; only the root's down step i waits for its up step i (it sends the
 * result computed there). Elsewhere the down data comes from the parent, which already holds
 * this rank's contribution. Connection roles: [0] send up, [1..3] receive from child i,
 * [4] receive from up, [5..7] send to child i. */
#include "comm/comm.h"
#include "plan/plan.h"

static size_t divup(size_t a, size_t b) { return (a + b - 1) / b; }

static void set_key(weft_work* w, int role, int peer, int send) {
  weft_conn_key* k = &w->keys[role];
  k->kind = WEFT_CONN_COLL;
  k->channel = w->channel;
  k->peer = peer;
  k->send = send;
  k->proto = w->op->proto;
}

void plan_tree_setup(weft_work* w) {
  graph_tree(w->nranks, w->rank, w->channel % 2, &w->tree);
  const weft_tree* t = &w->tree;
  uint64_t loops = divup(w->part_count, w->chunk);
  w->nstreams = 2;
  w->npc[0] = loops;
  w->npc[1] = (t->up < 0 && t->ndown == 0) ? 0 : loops;
  w->down_after_up = t->up < 0;
  if (t->up >= 0) {
    set_key(w, 0, t->up, 1);
    set_key(w, 4, t->up, 0);
  }
  for (int i = 0; i < t->ndown; i++) {
    set_key(w, 1 + i, t->down[i], 0);
    set_key(w, 5 + i, t->down[i], 1);
  }
}

int plan_tree_prim(const weft_work* w, int stream, uint64_t pc, weft_prim* p) {
  const weft_tree* t = &w->tree;
  size_t e = w->op->elem, off = (size_t)pc * w->chunk;
  size_t at = (w->part_off + off) * e;
  p->nelem = w->part_count - off < w->chunk ? w->part_count - off : w->chunk;
  if (stream == 0) {
    p->src = w->src + at;
    p->pre = 1;
    p->nrecv = t->ndown;
    for (int i = 0; i < t->ndown; i++) p->recv[i] = (unsigned char)(1 + i);
    p->reduce = t->ndown > 0;
    if (t->up >= 0) {
      p->nsend = 1;
      p->send[0] = 0;
    } else {
      p->dst = w->dst + at;
      p->post = 1;
    }
    return 1;
  }
  if (t->up >= 0) {
    p->nrecv = 1;
    p->recv[0] = 4;
    p->dst = w->dst + at;
  } else {
    p->src = w->dst + at; /* the root forwards what its up stream wrote */
  }
  p->nsend = t->ndown;
  for (int i = 0; i < t->ndown; i++) p->send[i] = (unsigned char)(5 + i);
  return 1;
}
