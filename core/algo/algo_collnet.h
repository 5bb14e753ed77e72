/* CollNet AllReduce (NCCL's CollNetChain slot), written for the host executor (included by
 * algo.h). Ranks are host-major, P per host (log_ppn >= 1), H = n / P >= 2 hosts; host h holds
 * ranks hP .. hP+P-1 and its leader is hP. Per loop of `chunk` elements:
 *
 *   step 0  a binomial reduce within the host to the leader (local index li = r mod P, tree
 *           root 0, the peer at local distance 2^k is li ^ 2^k: algo_log.h's roles k / 8+k),
 *           pre applied, no post: the leader's dst holds the host's partial result;
 *   step 1  leaders only: the net collective (weft_prim.netcoll) reduces dst across the H
 *           leaders through the CollNet plugin, in place;
 *   last    a binomial broadcast of dst from the leader within the host.
 *
 * Only operators without pre or post (sum, prod, max, min) run here (tune/ keeps the others
 * off it), so the leader's partial result is what the plugin reduces. NCCL's chain within a
 * node becomes a binomial tree (depth ceil(log2 P) instead of P); one leader per host talks to
 * the network, as in NCCL's CollNetChain. */
#ifndef WEFT_ALGO_COLLNET_H
#define WEFT_ALGO_COLLNET_H

WEFT_HD uint64_t algo_collnet_steps_per_loop(const weft_algo* w) {
  return w->rank % w->log_ppn ? 2 : 3;
}

WEFT_HD void algo_collnet_count_steps(weft_algo* a) {
  a->npc[0] = algo_divup(a->part_count, a->chunk) * algo_collnet_steps_per_loop(a);
}

/* The peer of a role within the host (-1: none). */
WEFT_HD int algo_collnet_peer(const weft_algo* w, int role) {
  int send, P = w->log_ppn, li = w->rank % P, k = algo_log_role_distance(role, &send);
  if (role == WEFT_LOG_FOLD_ROLE || role == WEFT_LOG_FOLD_SEND_ROLE || k >= 15) return -1;
  int q = li ^ (1 << k);
  return q < P ? w->rank - li + q : -1;
}

WEFT_HD int algo_allreduce_collnet(const weft_algo* w, uint64_t pc, weft_prim* p) {
  uint64_t per = algo_collnet_steps_per_loop(w);
  size_t off = (size_t)algo_udiv(pc, per) * w->chunk;
  int j = (int)algo_umod(pc, per), P = w->log_ppn, li = w->rank % P;
  size_t at = (w->part_off + off) * w->elem;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  const char* src = w->src + at;
  char* dst = w->dst + at;
  if (j == 0) {
    algo_tree_reduce_item(P, li, 0, src, dst, p);
    p->post = 0;
  } else if ((uint64_t)j == per - 1) {
    algo_tree_bcast_item(P, li, 0, dst, dst, p);
  } else {
    p->dst = dst;
    p->netcoll = 1;
  }
  return 1;
}

#endif
