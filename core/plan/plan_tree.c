/* Tree AllReduce setup of a work item: channel c uses tree c % 2 of the double binary tree
 * (graph/); the connections by role are listed in algo.h, which also generates the steps. */
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

void plan_tree_setup(weft_work* w) {
  graph_tree(w->nranks, w->rank, w->channel % 2, &w->tree);
  const weft_tree* t = &w->tree;
  w->nstreams = 2;
  w->down_after_up = t->up < 0;
  w->alg.tree_up = t->up;
  w->alg.tree_ndown = t->ndown;
  for (int i = 0; i < WEFT_TREE_MAX_DOWN; i++) w->alg.tree_down[i] = i < t->ndown ? t->down[i] : -1;
  if (t->up >= 0) {
    set_key(w, 0, t->up, 1);
    set_key(w, 4, t->up, 0);
  }
  for (int i = 0; i < t->ndown; i++) {
    set_key(w, 1 + i, t->down[i], 0);
    set_key(w, 5 + i, t->down[i], 1);
  }
}
