/* The algorithms, written once for both executors: a work item's steps as a pure function of a
 * small description (weft_algo) and a program counter. The host executor (host/) and the
 * kernels (device/) both call algo_prim(); neither has a copy of the ring or tree logic.
 *
 * A step is the primitive of plan.h:
 *   out = f(inputs), inputs ⊆ {recv slots…, local src}, outputs ⊆ {local dst, send slots…}
 *
 * Ring (one stream; each loop moves up to `chunk` elements of every block; pc = (loop, step)):
 *  AllReduce (n ≥ 2, 2n-1 steps a loop, blocks indexed by ring position):
 *    send(pre) · n-2 × recvReduceSend(pre) · recvReduceCopySend(pre, post) · n-2 × recvCopySend
 *    · recv — a reduce-scatter then an all-gather of the reduced blocks.
 *  AllGather (n steps): copySend of the own block · n-2 × recvCopySend · recv.
 *  ReduceScatter (n steps): send(pre) · n-2 × recvReduceSend(pre) · recvReduceCopy(pre, post).
 *  Broadcast (chain from the root, 1 step): root copySend · recvCopySend · … · recv at the rank
 *    before the root.
 *  Reduce (chain to the root, 1 step): the rank after the root sends(pre) · recvReduceSend(pre)
 *    · … · recvReduceCopy(pre, post) at the root.
 *  A one-rank ring is a local copy with pre and post applied.
 * Tree AllReduce (two streams of one step per chunk each):
 *   up:   leaf send(pre) · interior recvReduceSend(children + pre(src)) · root
 *         recvReduceCopy(children + pre(src) → dst, post);
 *   down: root copySend(dst → children) · interior recvCopySend(up → dst, children) · leaf
 *         recv(up → dst).
 *   Only the root's down step i waits for its up step i (it sends the result computed there).
 * Send / Recv: a chain of sends (receives) of `chunk` elements through the peer's FIFO.
 * OneShot and TwoShot (direct: every rank talks to every other, at most WEFT_DIRECT_MAX_RANKS):
 *   algo_direct.h.
 * RecDoubling, Rabenseifner (AllReduce), the log-step AllGather (Bruck) and ReduceScatter
 *   (RecHalving) under NCCL's PAT id, Binomial Broadcast/Reduce: algo_log.h.
 *
 * Connection roles (indices into a work item's connections): ring and p2p [0] receive from
 * prev/peer, [1] send to next/peer; tree [0] send up, [1..3] receive from child i, [4] receive
 * from up, [5..7] send to child i; direct [d-1] receive from and [8+d-1] send to the rank d
 * places after this one (rank + d mod nranks, d = 1 .. nranks-1); log [k] from and [8+k] to
 * the peer at distance 2^k (k < 7), [16+k-7] from and [24+k-7] to it (k = 7..14), [7] / [15]
 * from / to the fold partner (algo_log.h).
 *
 * A reduction combines its inputs left to right: the receive slots in the order listed, with
 * the local src entering after the first src_at of them (0: first). Every builtin operator is
 * commutative for two operands, so only the order from the third input on matters; the direct
 * algorithms list peers in rank order and put src at the rank's own place, so every rank that
 * reduces the same element reduces it in the same order (bit-identical results). */
#ifndef WEFT_PLAN_ALGO_H
#define WEFT_PLAN_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "graph/ring_order.h"
#include "util/hd.h"

#define WEFT_DIRECT_MAX_RANKS 8 /* OneShot/TwoShot: every peer in one step */
#define WEFT_TREE_MAX_DOWN 6 /* weft_algo.tree_down (3 used; 6 keeps weft_algo's size) */
/* Peers of one step: direct n-1 (≤ 7); a binomial tree's root serves ⌈log2 n⌉ children, up to
 * 15 on the host (WEFT_LOG_MAX_RANKS). The kernels keep 7 (the device runs the log algorithms
 * on at most WEFT_LOG_DEV_MAX_RANKS ranks): a weft_prim never crosses between the two. */
#ifdef __CUDACC__
#define WEFT_PRIM_MAX_PEERS 7
#else
#define WEFT_PRIM_MAX_PEERS 15
#endif
/* Roles of one work item: 0..15 as below for every algorithm; 16..31 only for the log
 * algorithms' distances 2^7..2^14 (algo_log.h), which only the host executor runs. The device's
 * work item holds the first WEFT_DEV_MAX_CONNS (device/device.h). */
#define WEFT_ALGO_MAX_CONNS 32
#define WEFT_DEV_MAX_CONNS 16
#define WEFT_DIRECT_SEND_ROLE0 8 /* direct: first send role */
#define WEFT_ALGO_RING_ID 1   /* NCCL_ALGO_RING */
#define WEFT_ALGO_TREE_ID 0   /* NCCL_ALGO_TREE */
/* NCCL_ALGO_COLLNET_CHAIN: a reduce within each host, the hosts' leaders reducing through the
 * CollNet plugin, a broadcast within each host (algo_collnet.h; the host executor only). */
#define WEFT_ALGO_COLLNET_CHAIN_ID 3
/* weft's own algorithms, numbered after NCCL's seven (NCCL_NUM_ALGORITHMS): a tuner plugin's
 * cost table has no row for them (tune/). */
#define WEFT_ALGO_ONESHOT_ID 7
#define WEFT_ALGO_TWOSHOT_ID 8
/* The logarithmic-latency algorithms (algo_log.h); AllGather and ReduceScatter's log-step ones
 * run under NCCL's PAT id (NCCL's own log-step algorithm for them), named Bruck and RecHalving. */
#define WEFT_ALGO_RECDOUBLING_ID 9
#define WEFT_ALGO_RABENSEIFNER_ID 10
#define WEFT_ALGO_BINOMIAL_ID 11
#define WEFT_ALGO_PAT_ID 6 /* NCCL_ALGO_PAT */
#define WEFT_NUM_ALGORITHMS 12
/* Log algorithms: distances 2^0..2^14 and the fold partner, each a direction (algo_log.h).
 * The device executor's work item has room for distances up to 2^6 only. */
#define WEFT_LOG_MAX_RANKS 32768
#define WEFT_LOG_DEV_MAX_RANKS 128

/* ncclFunc_t values, repeated so that kernels need not include nccl.h's host declarations. */
enum {
  WEFT_FN_BROADCAST = 0,
  WEFT_FN_REDUCE = 1,
  WEFT_FN_ALLGATHER = 2,
  WEFT_FN_REDUCESCATTER = 3,
  WEFT_FN_ALLREDUCE = 4,
  WEFT_FN_SEND = 6,
  WEFT_FN_RECV = 7
};

/* One primitive step. recv[]/send[] index the work item's connections (roles above). */
typedef struct {
  int nrecv, nsend;
  unsigned char recv[WEFT_PRIM_MAX_PEERS];
  unsigned char send[WEFT_PRIM_MAX_PEERS];
  const char* src; /* local input (NULL: none) */
  char* dst;       /* local output (NULL: none) */
  size_t nelem;
  int reduce; /* reduce the inputs; else copy the single input */
  int pre;    /* src enters a reduction: apply the op's pre-op (PreMulSum) */
  int post;   /* the output is final: apply the op's post-op (SumPostDiv) */
  int src_at; /* reduction order: src enters after the first src_at receive slots */
  /* Zero copy (weft_algo.zc): the receive slots are not read. Each recv[i] instead reads the
   * peer's own buffer (WEFT_ZC_FROM_SRC: its sendbuff, WEFT_ZC_FROM_DST: its recvbuff) at
   * byte offset zc_off, and a send stores nothing: it tells the peer that this rank's data
   * for the step is ready (algo_direct.h). */
  int zc_from;
  size_t zc_off;
  /* CollNet (algo_collnet.h): the step hands dst[nelem] to the in-network AllReduce of the
   * hosts' leaders, in place; no slot is read or written. */
  int netcoll;
} weft_prim;
enum { WEFT_ZC_NONE = 0, WEFT_ZC_FROM_SRC = 1, WEFT_ZC_FROM_DST = 2 };

/* Zero copy (weft_algo.zero_copy), two kinds:
 * WEFT_ZC_WINDOWS: where this process reaches every rank's symmetric window (device/ reads
 * them). peers[0] / peers[1]: the window holding the op's sendbuff / recvbuff, an array of
 * nranks addresses (GPU memory; rank q's window base as mapped here); off[]: the buffer's byte
 * offset in it, the same on every rank (symmetric use), plus src_stride * q for rank q's
 * sendbuff (an in-place AllGather, whose sendbuff sits at its rank's block).
 * WEFT_ZC_REGISTERED: where every peer reaches this rank's own registered buffers. peers[0] /
 * peers[1]: the sendbuff's / recvbuff's registration, an array of nranks addresses (GPU memory;
 * its base as mapped in rank q's process, 0 where q cannot read it; NULL: no peer can); off[]:
 * the buffer's byte offset in it (this rank's own). A sender posts peers[w][q] + off[w] to
 * receiver q with each step (conn.h, zc_post) and stores nothing; where it is 0 it copies. */
enum { WEFT_ZC_OFF = 0, WEFT_ZC_WINDOWS = 1, WEFT_ZC_REGISTERED = 2 };
typedef struct {
  char* const* peers[2];
  uint64_t off[2];
  uint64_t src_stride;
} weft_zc_bufs;

/* What the steps of one work item depend on. */
typedef struct {
  int16_t func, algo;
  int32_t zero_copy; /* WEFT_ZC_*, direct algorithms only: peers read this rank's buffers (zc) */
  int nranks, rank, channel, root; /* root: also the peer of Send/Recv */
  union {
    struct { /* ring, tree and the log algorithms */
      int ring_index, ring_prev, ring_next;
      int tree_up, tree_ndown;
      int tree_down[WEFT_TREE_MAX_DOWN];
      /* RecDoubling AllReduce: ranks per host of a host-major layout (P > 1 with n / P > 1
       * hosts: the hierarchical form of algo_log.h), 0 flat. CollNet: ranks per host (>= 1). */
      int log_ppn;
    };
    /* The direct algorithms with zero_copy set (they use none of the above). In the union, the
     * description stays the size it was, so a launch's parameters still hold 128 works. */
    weft_zc_bufs zc;
  };
  size_t elem;  /* bytes per element */
  size_t count; /* the op's count (AllGather: per rank; ReduceScatter: per rank) */
  size_t part_off, part_count; /* this channel's part, elements */
  size_t chunk;                /* elements per step */
  const char* src;
  char* dst;
  uint64_t npc[2]; /* steps per stream */
} weft_algo;

/* a / b and a % b, in 32 bits when both fit: a GPU divides 64-bit numbers in a long software
 * routine, and a step's description is worked out on one thread, on the step's critical path
 * (measured: ~1 us a step with 64-bit divisions). */
WEFT_HD uint64_t algo_udiv(uint64_t a, uint64_t b) {
  return ((a | b) >> 32) ? a / b : (uint64_t)((uint32_t)a / (uint32_t)b);
}
WEFT_HD uint64_t algo_umod(uint64_t a, uint64_t b) {
  return ((a | b) >> 32) ? a % b : (uint64_t)((uint32_t)a % (uint32_t)b);
}
WEFT_HD size_t algo_divup(size_t a, size_t b) { return (size_t)algo_udiv(a + b - 1, b); }
WEFT_HD size_t algo_min(size_t a, size_t b) { return a < b ? a : b; }
/* Elements a block start is rounded to (64 bytes), so blocks stay cache-line aligned. */
WEFT_HD size_t algo_align_elems(size_t elem) { return elem >= 64 ? 1 : 64 / elem; }

/* Steps per ring loop for the op on n ranks. */
WEFT_HD uint64_t algo_ring_steps_per_loop(int func, int n) {
  if (n == 1) return 1;
  switch (func) {
    case WEFT_FN_ALLREDUCE: return (uint64_t)(2 * n - 1);
    case WEFT_FN_ALLGATHER:
    case WEFT_FN_REDUCESCATTER: return (uint64_t)n;
    default: return 1;
  }
}

/* npc[] from the rest of the description (set by the planner once chunk and part are known). */
WEFT_HD void algo_direct_count_steps(weft_algo* a);
WEFT_HD void algo_log_count_steps(weft_algo* a);
WEFT_HD int algo_is_log(int algo);
WEFT_HD void algo_collnet_count_steps(weft_algo* a);

WEFT_HD void algo_count_steps(weft_algo* a) {
  a->npc[0] = a->npc[1] = 0;
  if (a->func == WEFT_FN_SEND || a->func == WEFT_FN_RECV) {
    a->npc[0] = algo_divup(a->part_count, a->chunk);
    return;
  }
  if (a->algo == WEFT_ALGO_ONESHOT_ID || a->algo == WEFT_ALGO_TWOSHOT_ID) {
    algo_direct_count_steps(a);
    return;
  }
  if (algo_is_log(a->algo) && a->nranks > 1) {
    algo_log_count_steps(a);
    return;
  }
  if (a->algo == WEFT_ALGO_COLLNET_CHAIN_ID && a->func == WEFT_FN_ALLREDUCE) {
    algo_collnet_count_steps(a);
    return;
  }
  if (a->func == WEFT_FN_ALLREDUCE && a->algo == WEFT_ALGO_TREE_ID) {
    uint64_t loops = algo_divup(a->part_count, a->chunk);
    a->npc[0] = loops;
    a->npc[1] = (a->tree_up < 0 && a->tree_ndown == 0) ? 0 : loops;
    return;
  }
  size_t per_loop = a->chunk;
  if (a->func == WEFT_FN_ALLREDUCE && a->nranks > 1) per_loop = a->chunk * (size_t)a->nranks;
  a->npc[0] = algo_divup(a->part_count, per_loop) * algo_ring_steps_per_loop(a->func, a->nranks);
}

WEFT_HD void algo_use_recv(weft_prim* p, int role) {
  p->recv[p->nrecv++] = (unsigned char)role;
}
WEFT_HD void algo_use_send(weft_prim* p, int role) {
  p->send[p->nsend++] = (unsigned char)role;
}

WEFT_HD int algo_allreduce_ring(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks, ix = w->ring_index;
  size_t e = w->elem, S = w->part_count, C = w->chunk;
  if (n == 1) {
    size_t off = (size_t)pc * C;
    p->nelem = algo_min(C, S - off);
    p->src = w->src + (w->part_off + off) * e;
    p->dst = w->dst + (w->part_off + off) * e;
    p->pre = p->post = 1;
    return 1;
  }
  uint64_t per = (uint64_t)(2 * n - 1);
  size_t loop = (size_t)algo_udiv(pc, per);
  int j = (int)algo_umod(pc, per);
  size_t base = loop * (size_t)n * C;
  size_t a = algo_align_elems(e);
  size_t real = algo_min(C, algo_divup(algo_divup(S - base, (size_t)n), a) * a);
  int block;
  if (j == 0) {
    block = (ix + n - 1) % n;
    algo_use_send(p, 1);
    p->pre = 1;
  } else if (j < n - 1) {
    block = (ix + n - 1 - j) % n;
    algo_use_recv(p, 0);
    algo_use_send(p, 1);
    p->reduce = p->pre = 1;
  } else if (j == n - 1) {
    block = ix;
    algo_use_recv(p, 0);
    algo_use_send(p, 1);
    p->reduce = p->pre = p->post = 1;
  } else if (j < 2 * n - 2) {
    block = (ix + n - (j - n + 1)) % n;
    algo_use_recv(p, 0);
    algo_use_send(p, 1);
  } else {
    block = (ix + 1) % n;
    algo_use_recv(p, 0);
  }
  size_t off = base + (size_t)block * real;
  p->nelem = off < S ? algo_min(real, S - off) : 0;
  size_t at = (w->part_off + (off < S ? off : S)) * e;
  if (j <= n - 1) p->src = w->src + at;
  if (j >= n - 1) p->dst = w->dst + at;
  return 1;
}

WEFT_HD int algo_allgather_ring(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks, ix = w->ring_index;
  size_t e = w->elem, S = w->part_count, C = w->chunk;
  uint64_t per = algo_ring_steps_per_loop(w->func, n);
  size_t base = (size_t)algo_udiv(pc, per) * C;
  int j = (int)algo_umod(pc, per);
  p->nelem = algo_min(C, S - base);
  int dest;
  if (j == 0) {
    dest = w->rank;
    p->src = w->src + (w->part_off + base) * e;
    if (n > 1) algo_use_send(p, 1);
  } else {
    dest = ring_order_at(n, w->channel, (ix + n - j) % n);
    algo_use_recv(p, 0);
    if (j < n - 1) algo_use_send(p, 1);
  }
  p->dst = w->dst + ((size_t)dest * w->count + w->part_off + base) * e;
  return 1;
}

WEFT_HD int algo_reducescatter_ring(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks, ix = w->ring_index;
  size_t e = w->elem, S = w->part_count, C = w->chunk;
  uint64_t per = algo_ring_steps_per_loop(w->func, n);
  size_t base = (size_t)algo_udiv(pc, per) * C;
  int j = (int)algo_umod(pc, per);
  p->nelem = algo_min(C, S - base);
  p->pre = 1;
  int dest;
  if (j == n - 1) { /* also the n == 1 case */
    dest = w->rank;
    if (n > 1) {
      algo_use_recv(p, 0);
      p->reduce = 1;
    }
    p->post = 1;
    p->dst = w->dst + (w->part_off + base) * e;
  } else {
    dest = ring_order_at(n, w->channel, (ix + n - 1 - j) % n);
    algo_use_send(p, 1);
    if (j > 0) {
      algo_use_recv(p, 0);
      p->reduce = 1;
    }
  }
  p->src = w->src + ((size_t)dest * w->count + w->part_off + base) * e;
  return 1;
}

WEFT_HD int algo_broadcast_ring(const weft_algo* w, uint64_t pc, weft_prim* p) {
  size_t e = w->elem, S = w->part_count, C = w->chunk;
  size_t off = (size_t)pc * C;
  size_t at = (w->part_off + off) * e;
  p->nelem = algo_min(C, S - off);
  if (w->rank == w->root) {
    p->src = w->src + at;
    if (w->dst + at != p->src) p->dst = w->dst + at;
  } else {
    p->dst = w->dst + at;
    algo_use_recv(p, 0);
  }
  if (w->nranks > 1 && w->ring_next != w->root) algo_use_send(p, 1);
  return 1;
}

WEFT_HD int algo_reduce_ring(const weft_algo* w, uint64_t pc, weft_prim* p) {
  size_t e = w->elem, S = w->part_count, C = w->chunk;
  size_t off = (size_t)pc * C;
  size_t at = (w->part_off + off) * e;
  p->nelem = algo_min(C, S - off);
  p->src = w->src + at;
  p->pre = 1;
  if (w->nranks > 1 && w->ring_prev != w->root) {
    algo_use_recv(p, 0);
    p->reduce = 1;
  }
  if (w->rank == w->root) {
    p->dst = w->dst + at;
    p->post = 1;
  } else {
    algo_use_send(p, 1);
  }
  return 1;
}

WEFT_HD int algo_allreduce_tree(const weft_algo* w, int stream, uint64_t pc, weft_prim* p) {
  size_t e = w->elem, off = (size_t)pc * w->chunk;
  size_t at = (w->part_off + off) * e;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  if (stream == 0) {
    p->src = w->src + at;
    p->pre = 1;
    for (int i = 0; i < w->tree_ndown; i++) algo_use_recv(p, 1 + i);
    p->reduce = w->tree_ndown > 0;
    if (w->tree_up >= 0) {
      algo_use_send(p, 0);
    } else {
      p->dst = w->dst + at;
      p->post = 1;
    }
    return 1;
  }
  if (w->tree_up >= 0) {
    algo_use_recv(p, 4);
    p->dst = w->dst + at;
  } else {
    p->src = w->dst + at; /* the root forwards what its up stream wrote */
  }
  for (int i = 0; i < w->tree_ndown; i++) algo_use_send(p, 5 + i);
  return 1;
}

WEFT_HD int algo_p2p(const weft_algo* w, uint64_t pc, weft_prim* p) {
  size_t off = (size_t)pc * w->chunk;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  size_t at = (w->part_off + off) * w->elem;
  if (w->func == WEFT_FN_SEND) {
    p->src = w->src + at;
    algo_use_send(p, 1);
  } else {
    p->dst = w->dst + at;
    algo_use_recv(p, 0);
  }
  return 1;
}

#include "algo/algo_direct.h"
#include "algo/algo_log.h"
#include "algo/algo_collnet.h"

/* Step pc of stream s: fills *p and returns 1, or 0 when pc is past the end. */
WEFT_HD int algo_prim(const weft_algo* w, int stream, uint64_t pc, weft_prim* p) {
  if (pc >= w->npc[stream]) return 0;
  p->nrecv = p->nsend = 0;
  p->src = 0;
  p->dst = 0;
  p->nelem = 0;
  p->reduce = p->pre = p->post = 0;
  p->src_at = 0;
  p->zc_from = WEFT_ZC_NONE;
  p->zc_off = 0;
  p->netcoll = 0;
  if (w->algo == WEFT_ALGO_COLLNET_CHAIN_ID && w->func == WEFT_FN_ALLREDUCE)
    return algo_allreduce_collnet(w, pc, p);
  if (w->algo == WEFT_ALGO_ONESHOT_ID || w->algo == WEFT_ALGO_TWOSHOT_ID)
    return algo_direct_prim(w, stream, pc, p);
  if (algo_is_log(w->algo) && w->nranks > 1) return algo_log_prim(w, pc, p);
  switch (w->func) {
    case WEFT_FN_SEND:
    case WEFT_FN_RECV: return algo_p2p(w, pc, p);
    case WEFT_FN_ALLREDUCE:
      if (w->algo == WEFT_ALGO_TREE_ID) return algo_allreduce_tree(w, stream, pc, p);
      return algo_allreduce_ring(w, pc, p);
    case WEFT_FN_ALLGATHER: return algo_allgather_ring(w, pc, p);
    case WEFT_FN_REDUCESCATTER: return algo_reducescatter_ring(w, pc, p);
    case WEFT_FN_BROADCAST: return algo_broadcast_ring(w, pc, p);
    case WEFT_FN_REDUCE: return algo_reduce_ring(w, pc, p);
    default: return 0;
  }
}

#endif
