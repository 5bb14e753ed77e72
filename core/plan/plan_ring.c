/* Ring algorithms over the primitive, one channel's part at a time. Each loop of the part
 * moves up to `chunk` elements of every block; the program counter is (loop, step in loop).
 *
 *  AllReduce (n ≥ 2, 2n-1 steps a loop, blocks indexed by ring position):
 *    send(pre) · n-2 × recvReduceSend(pre) · recvReduceCopySend(pre, post) · n-2 × recvCopySend
 *    · recv — a reduce-scatter then an all-gather of the reduced blocks.
 *  AllGather (n steps): copySend of the own block · n-2 × recvCopySend · recv.
 *  ReduceScatter (n steps): send(pre) · n-2 × recvReduceSend(pre) · recvReduceCopy(pre, post).
 *  Broadcast (chain from the root, 1 step): root copySend · recvCopySend · … · recv at the rank
 *    before the root.
 *  Reduce (chain to the root, 1 step): the rank after the root sends(pre) · recvReduceSend(pre)
 *    · … · recvReduceCopy(pre, post) at the root.
 * A one-rank ring is a local copy with pre and post applied. */
#include "comm/comm.h"
#include "plan/plan.h"

static size_t divup(size_t a, size_t b) { return (a + b - 1) / b; }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* Elements a block start is rounded to (64 bytes), so blocks stay cache-line aligned. */
static size_t align_elems(size_t elem) { return elem >= 64 ? 1 : 64 / elem; }

static void set_key(weft_work* w, int role, int peer, int send) {
  weft_conn_key* k = &w->keys[role];
  k->kind = WEFT_CONN_COLL;
  k->channel = w->channel;
  k->peer = peer;
  k->send = send;
  k->proto = w->op->proto;
}

/* Steps per loop for the op on n ranks. */
static uint64_t steps_per_loop(int func, int n) {
  if (n == 1) return 1;
  switch (func) {
    case ncclFuncAllReduce: return (uint64_t)(2 * n - 1);
    case ncclFuncAllGather:
    case ncclFuncReduceScatter: return (uint64_t)n;
    default: return 1;
  }
}

void plan_ring_setup(weft_work* w) {
  const weft_op* op = w->op;
  int n = w->nranks;
  graph_ring(n, w->rank, w->channel, &w->ring);
  size_t per_loop = w->chunk;
  if (op->func == ncclFuncAllReduce && n > 1) per_loop = w->chunk * (size_t)n;
  w->npc[0] = divup(w->part_count, per_loop) * steps_per_loop(op->func, n);
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

static void use_recv(weft_prim* p) {
  p->nrecv = 1;
  p->recv[0] = 0;
}
static void use_send(weft_prim* p) {
  p->nsend = 1;
  p->send[0] = 1;
}

static int allreduce_prim(const weft_work* w, uint64_t pc, weft_prim* p) {
  const weft_op* op = w->op;
  int n = w->nranks, ix = w->ring.index;
  size_t e = op->elem, S = w->part_count, C = w->chunk;
  if (n == 1) {
    size_t off = (size_t)pc * C;
    p->nelem = min_sz(C, S - off);
    p->src = w->src + (w->part_off + off) * e;
    p->dst = w->dst + (w->part_off + off) * e;
    p->pre = p->post = 1;
    return 1;
  }
  uint64_t per = (uint64_t)(2 * n - 1);
  size_t loop = (size_t)(pc / per);
  int j = (int)(pc % per);
  size_t base = loop * (size_t)n * C;
  size_t a = align_elems(e);
  size_t real = min_sz(C, divup(divup(S - base, (size_t)n), a) * a);
  int block;
  if (j == 0) {
    block = (ix + n - 1) % n;
    use_send(p);
    p->pre = 1;
  } else if (j < n - 1) {
    block = (ix + n - 1 - j) % n;
    use_recv(p);
    use_send(p);
    p->reduce = p->pre = 1;
  } else if (j == n - 1) {
    block = ix;
    use_recv(p);
    use_send(p);
    p->reduce = p->pre = p->post = 1;
  } else if (j < 2 * n - 2) {
    block = (ix + n - (j - n + 1)) % n;
    use_recv(p);
    use_send(p);
  } else {
    block = (ix + 1) % n;
    use_recv(p);
  }
  size_t off = base + (size_t)block * real;
  p->nelem = off < S ? min_sz(real, S - off) : 0;
  size_t at = (w->part_off + (off < S ? off : S)) * e;
  if (j <= n - 1) p->src = w->src + at;
  if (j >= n - 1) p->dst = w->dst + at;
  return 1;
}

static int allgather_prim(const weft_work* w, uint64_t pc, weft_prim* p) {
  const weft_op* op = w->op;
  int n = w->nranks, ix = w->ring.index;
  size_t e = op->elem, S = w->part_count, C = w->chunk;
  uint64_t per = steps_per_loop(op->func, n);
  size_t base = (size_t)(pc / per) * C;
  int j = (int)(pc % per);
  p->nelem = min_sz(C, S - base);
  int dest;
  if (j == 0) {
    dest = w->rank;
    p->src = w->src + (w->part_off + base) * e;
    if (n > 1) use_send(p);
  } else {
    dest = graph_ring_rank_at(n, w->channel, (ix + n - j) % n);
    use_recv(p);
    if (j < n - 1) use_send(p);
  }
  p->dst = w->dst + ((size_t)dest * op->count + w->part_off + base) * e;
  return 1;
}

static int reducescatter_prim(const weft_work* w, uint64_t pc, weft_prim* p) {
  const weft_op* op = w->op;
  int n = w->nranks, ix = w->ring.index;
  size_t e = op->elem, S = w->part_count, C = w->chunk;
  uint64_t per = steps_per_loop(op->func, n);
  size_t base = (size_t)(pc / per) * C;
  int j = (int)(pc % per);
  p->nelem = min_sz(C, S - base);
  p->pre = 1;
  int dest;
  if (j == n - 1) { /* also the n == 1 case */
    dest = w->rank;
    if (n > 1) {
      use_recv(p);
      p->reduce = 1;
    }
    p->post = 1;
    p->dst = w->dst + (w->part_off + base) * e;
  } else {
    dest = graph_ring_rank_at(n, w->channel, (ix + n - 1 - j) % n);
    use_send(p);
    if (j > 0) {
      use_recv(p);
      p->reduce = 1;
    }
  }
  p->src = w->src + ((size_t)dest * op->count + w->part_off + base) * e;
  return 1;
}

static int broadcast_prim(const weft_work* w, uint64_t pc, weft_prim* p) {
  const weft_op* op = w->op;
  size_t e = op->elem, S = w->part_count, C = w->chunk;
  size_t off = (size_t)pc * C;
  size_t at = (w->part_off + off) * e;
  p->nelem = min_sz(C, S - off);
  if (w->rank == op->root) {
    p->src = w->src + at;
    if (w->dst + at != p->src) p->dst = w->dst + at;
  } else {
    p->dst = w->dst + at;
    use_recv(p);
  }
  if (w->nranks > 1 && w->ring.next != op->root) use_send(p);
  return 1;
}

static int reduce_prim(const weft_work* w, uint64_t pc, weft_prim* p) {
  const weft_op* op = w->op;
  size_t e = op->elem, S = w->part_count, C = w->chunk;
  size_t off = (size_t)pc * C;
  size_t at = (w->part_off + off) * e;
  p->nelem = min_sz(C, S - off);
  p->src = w->src + at;
  p->pre = 1;
  if (w->nranks > 1 && w->ring.prev != op->root) {
    use_recv(p);
    p->reduce = 1;
  }
  if (w->rank == op->root) {
    p->dst = w->dst + at;
    p->post = 1;
  } else {
    use_send(p);
  }
  return 1;
}

int plan_ring_prim(const weft_work* w, int stream, uint64_t pc, weft_prim* p) {
  (void)stream;
  switch (w->op->func) {
    case ncclFuncAllReduce: return allreduce_prim(w, pc, p);
    case ncclFuncAllGather: return allgather_prim(w, pc, p);
    case ncclFuncReduceScatter: return reducescatter_prim(w, pc, p);
    case ncclFuncBroadcast: return broadcast_prim(w, pc, p);
    case ncclFuncReduce: return reduce_prim(w, pc, p);
    default: return 0;
  }
}
