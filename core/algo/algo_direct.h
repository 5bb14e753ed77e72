/* The direct algorithms, written once for both executors (included by algo.h; see its roles and
 * reduction order): every rank reaches every other through the connection FIFOs of its
 * channel, so data crosses one link instead of hopping along a ring. A FIFO slot is the peer's
 * buffer the issue calls P2P-mapped: the receiver's GPU memory over P2P, the shared segment in
 * host mode. A send step writes straight into it; the receiving step reads it there, and
 * reduces it with its own input. LL/LL128 lines carry their flags, so no step waits for
 * anything but its own data: no separate barrier.
 *
 * Each loop moves up to `chunk` elements of every block (pc counts steps; n ranks, rank r):
 *  OneShot AllReduce, two streams of one step a loop each:
 *    push:   copySend pre(src) → every peer;
 *    reduce: recvReduceCopy(every peer in rank order, pre(src) at r) → dst, post.
 *    The reduce of chunk i runs after the push of chunk i (in place it overwrites src).
 *  TwoShot AllReduce (a direct reduce-scatter, then a direct all-gather), 2n-1 steps a loop over
 *  n blocks (block q belongs to rank q):
 *    n-1 × send pre(src block q) → q (q = r+1, r+2, …);
 *    recvReduceCopySend(every peer in rank order, pre(src block r) at r) → dst block r and
 *      every peer, post;
 *    n-1 × recv block q from q → dst block q.
 *  OneShot ReduceScatter (n steps a loop): n-1 × send pre(src block q) → q; then
 *    recvReduceCopy(every peer in rank order, pre(src block r) at r) → dst, post.
 *  OneShot AllGather (n steps a loop): copySend src → dst block r and every peer; then
 *    n-1 × recv block q from q → dst block q.
 *  OneShot Broadcast (1 step a loop): the root copySends src → (dst) and every peer; every
 *    other rank receives from the root.
 *  OneShot Reduce (1 step a loop): every other rank sends pre(src) to the root; the root
 *    recvReduceCopies (every peer in rank order, pre(src) at its place) → dst, post.
 * The streams that share a connection use it in one order on both ends: one stream per
 * algorithm, except OneShot AllReduce, whose pushes and reduces use opposite directions. One
 * rank is the ring's local copy (the planner gives it the ring).
 *
 * Zero copy (w->zero_copy: every rank's buffers sit in windows every peer has mapped): the same
 * steps, but a receive reads the peer's buffer where the peer's step took its data (weft_prim's
 * zc_from and zc_off), and a send only tells the peer that the data is ready. A rank writes
 * nothing a peer has yet to read: in-place OneShot AllReduce would (it overwrites its src
 * while peers read it), so zero copy runs it only out of place and TwoShot otherwise. TwoShot
 * overwrites block q of an in-place buffer only after q announced its reduced block, which q
 * sends after reading that block. The executor waits at the end of a work item until every
 * peer has consumed (read) every step it was sent, so the next operation may write the
 * buffers. */
#ifndef WEFT_PLAN_ALGO_DIRECT_H
#define WEFT_PLAN_ALGO_DIRECT_H

/* Roles of the connections from and to rank q (q != rank). */
WEFT_HD int algo_direct_recv_role(const weft_algo* w, int q) {
  return (q - w->rank + w->nranks) % w->nranks - 1;
}
WEFT_HD int algo_direct_send_role(const weft_algo* w, int q) {
  return WEFT_DIRECT_SEND_ROLE0 + (q - w->rank + w->nranks) % w->nranks - 1;
}

/* Receive from every peer in rank order, src entering at this rank's place. */
WEFT_HD void algo_direct_recv_all(const weft_algo* w, weft_prim* p) {
  for (int q = 0; q < w->nranks; q++)
    if (q != w->rank) algo_use_recv(p, algo_direct_recv_role(w, q));
  p->src_at = w->rank;
}
WEFT_HD void algo_direct_send_all(const weft_algo* w, weft_prim* p) {
  for (int d = 1; d < w->nranks; d++) algo_use_send(p, WEFT_DIRECT_SEND_ROLE0 + d - 1);
}

/* Zero copy: the step's receives read the peers' src or dst buffer at byte offset off. */
WEFT_HD void algo_zc_at(const weft_algo* w, weft_prim* p, int from, size_t off) {
  if (!w->zero_copy) return;
  p->zc_from = from;
  p->zc_off = off;
}

WEFT_HD void algo_direct_count_steps(weft_algo* a) {
  int n = a->nranks;
  uint64_t loops = algo_divup(a->part_count, a->chunk);
  switch (a->func) {
    case WEFT_FN_ALLREDUCE:
      if (a->algo == WEFT_ALGO_TWOSHOT_ID) {
        a->npc[0] = algo_divup(a->part_count, a->chunk * (size_t)n) * (uint64_t)(2 * n - 1);
      } else {
        a->npc[0] = a->npc[1] = loops;
      }
      return;
    case WEFT_FN_ALLGATHER:
    case WEFT_FN_REDUCESCATTER: a->npc[0] = loops * (uint64_t)n; return;
    default: a->npc[0] = loops; return;
  }
}

WEFT_HD int algo_allreduce_oneshot(const weft_algo* w, int stream, uint64_t pc, weft_prim* p) {
  size_t off = (size_t)pc * w->chunk;
  size_t at = (w->part_off + off) * w->elem;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  p->src = w->src + at;
  p->pre = 1;
  if (stream == 0) {
    algo_direct_send_all(w, p);
    return 1;
  }
  algo_direct_recv_all(w, p);
  p->reduce = p->post = 1;
  p->dst = w->dst + at;
  algo_zc_at(w, p, WEFT_ZC_FROM_SRC, at);
  return 1;
}

WEFT_HD int algo_allreduce_twoshot(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks, r = w->rank;
  size_t e = w->elem, S = w->part_count, C = w->chunk;
  uint64_t per = (uint64_t)(2 * n - 1);
  size_t loop = (size_t)algo_udiv(pc, per);
  int j = (int)algo_umod(pc, per);
  size_t base = loop * (size_t)n * C;
  size_t a = algo_align_elems(e);
  size_t real = algo_min(C, algo_divup(algo_divup(S - base, (size_t)n), a) * a);
  int block;
  if (j < n - 1) {
    block = (r + 1 + j) % n;
    algo_use_send(p, algo_direct_send_role(w, block));
    p->pre = 1;
  } else if (j == n - 1) {
    block = r;
    algo_direct_recv_all(w, p);
    algo_direct_send_all(w, p);
    p->reduce = p->pre = p->post = 1;
  } else {
    block = (r + 1 + (j - n)) % n;
    algo_use_recv(p, algo_direct_recv_role(w, block));
  }
  size_t off = base + (size_t)block * real;
  p->nelem = off < S ? algo_min(real, S - off) : 0;
  size_t at = (w->part_off + (off < S ? off : S)) * e;
  if (j <= n - 1) p->src = w->src + at;
  if (j >= n - 1) p->dst = w->dst + at;
  if (j >= n - 1) algo_zc_at(w, p, j == n - 1 ? WEFT_ZC_FROM_SRC : WEFT_ZC_FROM_DST, at);
  return 1;
}

WEFT_HD int algo_reducescatter_oneshot(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks, r = w->rank;
  size_t e = w->elem;
  size_t base = (size_t)algo_udiv(pc, (uint64_t)n) * w->chunk;
  int j = (int)algo_umod(pc, (uint64_t)n);
  p->nelem = algo_min(w->chunk, w->part_count - base);
  p->pre = 1;
  int block = r;
  if (j < n - 1) {
    block = (r + 1 + j) % n;
    algo_use_send(p, algo_direct_send_role(w, block));
  } else {
    algo_direct_recv_all(w, p);
    p->reduce = p->post = 1;
    p->dst = w->dst + (w->part_off + base) * e;
  }
  size_t at = ((size_t)block * w->count + w->part_off + base) * e;
  p->src = w->src + at;
  if (j == n - 1) algo_zc_at(w, p, WEFT_ZC_FROM_SRC, at);
  return 1;
}

WEFT_HD int algo_allgather_oneshot(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks, r = w->rank;
  size_t e = w->elem;
  size_t base = (size_t)algo_udiv(pc, (uint64_t)n) * w->chunk;
  int j = (int)algo_umod(pc, (uint64_t)n);
  p->nelem = algo_min(w->chunk, w->part_count - base);
  int block = r;
  if (j == 0) {
    p->src = w->src + (w->part_off + base) * e;
    algo_direct_send_all(w, p);
  } else {
    block = (r + j) % n;
    algo_use_recv(p, algo_direct_recv_role(w, block));
    algo_zc_at(w, p, WEFT_ZC_FROM_SRC, (w->part_off + base) * e); /* the peer's sendbuff */
  }
  p->dst = w->dst + ((size_t)block * w->count + w->part_off + base) * e;
  return 1;
}

WEFT_HD int algo_broadcast_oneshot(const weft_algo* w, uint64_t pc, weft_prim* p) {
  size_t off = (size_t)pc * w->chunk;
  size_t at = (w->part_off + off) * w->elem;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  if (w->rank == w->root) {
    p->src = w->src + at;
    if (w->dst + at != p->src) p->dst = w->dst + at;
    algo_direct_send_all(w, p);
  } else {
    p->dst = w->dst + at;
    algo_use_recv(p, algo_direct_recv_role(w, w->root));
    algo_zc_at(w, p, WEFT_ZC_FROM_SRC, at);
  }
  return 1;
}

WEFT_HD int algo_reduce_oneshot(const weft_algo* w, uint64_t pc, weft_prim* p) {
  size_t off = (size_t)pc * w->chunk;
  size_t at = (w->part_off + off) * w->elem;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  p->src = w->src + at;
  p->pre = 1;
  if (w->rank == w->root) {
    algo_direct_recv_all(w, p);
    p->reduce = p->post = 1;
    p->dst = w->dst + at;
    algo_zc_at(w, p, WEFT_ZC_FROM_SRC, at);
  } else {
    algo_use_send(p, algo_direct_send_role(w, w->root));
  }
  return 1;
}

WEFT_HD int algo_direct_prim(const weft_algo* w, int stream, uint64_t pc, weft_prim* p) {
  switch (w->func) {
    case WEFT_FN_ALLREDUCE:
      if (w->algo == WEFT_ALGO_TWOSHOT_ID) return algo_allreduce_twoshot(w, pc, p);
      return algo_allreduce_oneshot(w, stream, pc, p);
    case WEFT_FN_REDUCESCATTER: return algo_reducescatter_oneshot(w, pc, p);
    case WEFT_FN_ALLGATHER: return algo_allgather_oneshot(w, pc, p);
    case WEFT_FN_BROADCAST: return algo_broadcast_oneshot(w, pc, p);
    case WEFT_FN_REDUCE: return algo_reduce_oneshot(w, pc, p);
    default: return 0;
  }
}

#endif
