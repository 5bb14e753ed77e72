/* The logarithmic-latency algorithms, written once for both executors (included by algo.h; see
 * its step primitive, roles and reduction order). They reach peers at distance 2^k, so a
 * rank's data crosses log2(n) links instead of hopping along a ring of n.
 *
 * Spaces. A power-of-two space of m ranks pairs rank x with x ^ 2^k (recursive halving and
 * doubling). Any other m uses the circulant pattern of Bruck et al.: x receives from x ∓ 2^k
 * and sends to x ± 2^k (mod m). RecDoubling and Rabenseifner fold a non-power-of-two n first,
 * as Thakur, Rabenseifner and Gropp (2005) do: with m the largest power of two ≤ n and
 * rem = n - m, each even rank r < 2·rem is an "extra" that hands its input to r+1 and gets the
 * result back at the end; the core ranks (odd r < 2·rem, and r ≥ 2·rem) form the power-of-two
 * space, core rank v being real rank v < rem ? 2v+1 : v+rem.
 *
 * Roles: recv role k and send role 8+k serve the peer at distance 2^k for k < 7, recv role
 * 16+(k-7) and send role 24+(k-7) for k = 7..14 (algo_log_recv_role / algo_log_send_role;
 * algo_log_peer the inverse); role 7 / 15 receive from / send to the fold partner. Hence at
 * most WEFT_LOG_MAX_RANKS ranks; the device's work item holds roles 0..15 only, hence
 * WEFT_LOG_DEV_MAX_RANKS there (n ≤ 128 uses no role above 15).
 *
 * Binomial trees (rooted at t; rel = x ^ t, or x - t mod m): rel's parent is rel with its
 * lowest set bit 2^k cleared (role k), its children rel + 2^j for 2^j below that bit (every
 * 2^j < m at the root) and rel + 2^j < m. A broadcast item receives from the parent and sends
 * to the children in one step; a reduce item receives from every child (j ascending, src
 * first) and sends to the parent, the root writing dst with the post-op.
 *
 * Each loop moves up to `chunk` elements per step (pc counts steps; per-loop counts below):
 *  RecDoubling AllReduce (full buffer each step, L = log2 m): core step 0 sends pre(src) to the
 *    partner at 2^0 (folded: first reduces the extra's input into dst); step k (1..L) receives
 *    from the partner at 2^(k-1) and reduces with the accumulator (pre(src) at k = 1 unless
 *    folded, else dst) into dst, sending on to 2^k (k < L); step L applies post and, folded,
 *    sends the result to the extra. Extra: send pre(src); receive dst. L+1 steps (extra 2).
 *  Rabenseifner AllReduce (m blocks of up to 2·chunk/m elements a loop): folded core ranks
 *    first receive the extra's two halves and reduce them with pre(src) into dst; then L
 *    recursive-halving steps (distance m/2 down to 1), each a send of the half the rank gives
 *    away (from the accumulator) and a receive-reduce of the half it keeps into dst, post on the
 *    last, so core rank v ends owning block v; then L recursive-doubling steps (distance 1 up to
 *    m/2), each a send of the blocks it holds and a receive of the partner's; folded, the two
 *    halves go back to the extra. 4L steps (+4 folded; extra 4).
 *  Log-step ReduceScatter (NCCL's PAT slot, "RecHalving"): one reduce item per rank block q,
 *    rooted at q, in block order: every block crosses each tree edge once, partials forwarded
 *    at once (no scratch). n steps.
 *  Log-step AllGather (PAT slot, "Bruck"): one broadcast item per rank block q, rooted at q.
 *    n steps.
 *  Binomial Broadcast / Reduce: one broadcast / reduce item rooted at the root. 1 step.
 *  Hierarchical RecDoubling AllReduce (log_ppn = P > 1: ranks host-major, P per host, H = n/P
 *    hosts; host h holds ranks hP..hP+P-1, its leader hP): step 0 a binomial reduce within the
 *    host to the leader (local index li = r mod P, tree root 0: the peer at local distance 2^k
 *    is li ^ 2^k), leaving pre-applied partial sums in dst without post; then the leaders run
 *    RecDoubling over the H hosts on dst (folded when H is not a power of two), post on its
 *    last step; the last step a binomial broadcast of dst within the host. Local distance k
 *    uses distance index k, the leaders' distance k index ceil(log2 P) + k (so the two never
 *    share a role). Leader: 2 + (L_H + 1) steps (extra leader 2 + 2); others 2.
 * Every rank runs the items of a loop in the same order and an item's sender and receiver
 * agree on its size, so a step waits only for steps of the same index on other ranks, or for
 * earlier steps of its own: no cycle. Every combination of two values is commutative, and a
 * value a rank does not compute itself is copied: every rank holds the same bits. */
#ifndef WEFT_PLAN_ALGO_LOG_H
#define WEFT_PLAN_ALGO_LOG_H

#define WEFT_LOG_FOLD_ROLE 7
#define WEFT_LOG_FOLD_SEND_ROLE (WEFT_DIRECT_SEND_ROLE0 + WEFT_LOG_FOLD_ROLE)
#define WEFT_LOG_LOW_DISTANCES 7 /* distances 2^0..2^6 in roles 0..6 / 8..14 */

/* The roles of the peer at distance 2^k. */
WEFT_HD int algo_log_recv_role(int k) {
  return k < WEFT_LOG_LOW_DISTANCES ? k : 2 * WEFT_DIRECT_SEND_ROLE0 + k - WEFT_LOG_LOW_DISTANCES;
}
WEFT_HD int algo_log_send_role(int k) {
  return k < WEFT_LOG_LOW_DISTANCES ? WEFT_DIRECT_SEND_ROLE0 + k
                                    : 3 * WEFT_DIRECT_SEND_ROLE0 + k - WEFT_LOG_LOW_DISTANCES;
}
/* The distance index k of a role (fold roles: WEFT_LOG_FOLD_ROLE); *send its direction. */
WEFT_HD int algo_log_role_distance(int role, int* send) {
  if (role < 2 * WEFT_DIRECT_SEND_ROLE0) {
    *send = role >= WEFT_DIRECT_SEND_ROLE0;
    return *send ? role - WEFT_DIRECT_SEND_ROLE0 : role;
  }
  *send = role >= 3 * WEFT_DIRECT_SEND_ROLE0;
  return role - (*send ? 3 : 2) * WEFT_DIRECT_SEND_ROLE0 + WEFT_LOG_LOW_DISTANCES;
}

WEFT_HD int algo_is_log(int algo) {
  return algo == WEFT_ALGO_RECDOUBLING_ID || algo == WEFT_ALGO_RABENSEIFNER_ID ||
         algo == WEFT_ALGO_BINOMIAL_ID || algo == WEFT_ALGO_PAT_ID;
}
WEFT_HD int algo_is_pow2(int m) { return m > 0 && (m & (m - 1)) == 0; }
WEFT_HD int algo_pow2_floor(int n) {
  int m = 1;
  while (2 * m <= n) m *= 2;
  return m;
}
WEFT_HD int algo_log2_of(int m) { /* m a power of two */
  int k = 0;
  while ((1 << k) < m) k++;
  return k;
}
WEFT_HD int algo_low_bit_index(int rel) {
  int k = 0;
  while (!((rel >> k) & 1)) k++;
  return k;
}
WEFT_HD int algo_log_folds(int algo) {
  return algo == WEFT_ALGO_RECDOUBLING_ID || algo == WEFT_ALGO_RABENSEIFNER_ID;
}
/* Reduce direction: data flows towards the tree root (modular spaces use the mirror peers). */
WEFT_HD int algo_log_reduces(const weft_algo* w) {
  return w->func == WEFT_FN_REDUCESCATTER || w->func == WEFT_FN_REDUCE;
}

/* Folding (RecDoubling, Rabenseifner): core position v of rank r, or -1 for an extra. */
WEFT_HD int algo_fold_core(int n, int r) {
  int m = algo_pow2_floor(n), rem = n - m;
  if (r < 2 * rem) return (r & 1) ? r / 2 : -1;
  return r - rem;
}
WEFT_HD int algo_fold_real(int n, int v) {
  int m = algo_pow2_floor(n), rem = n - m;
  return v < rem ? 2 * v + 1 : v + rem;
}
/* The fold partner of r (-1: none). */
WEFT_HD int algo_fold_partner(int n, int r) {
  int rem = n - algo_pow2_floor(n);
  if (r >= 2 * rem) return -1;
  return (r & 1) ? r - 1 : r + 1;
}

WEFT_HD int algo_ceil_log2(int n) {
  int c = 0;
  while ((1 << c) < n) c++;
  return c;
}
/* The hierarchical form of RecDoubling (see above). */
WEFT_HD int algo_log_hier(const weft_algo* w) {
  return w->algo == WEFT_ALGO_RECDOUBLING_ID && w->log_ppn > 1 && w->nranks / w->log_ppn > 1;
}

/* The peer of a role (-1: unused by the algorithm). */
WEFT_HD int algo_log_peer(const weft_algo* w, int role) {
  int n = w->nranks, r = w->rank, send;
  int k = algo_log_role_distance(role, &send);
  int fold = role == WEFT_LOG_FOLD_ROLE || role == WEFT_LOG_FOLD_SEND_ROLE;
  if (algo_log_hier(w)) {
    int P = w->log_ppn, H = n / P, li = r % P, h = r / P, cP = algo_ceil_log2(P);
    if (fold) {
      int q = li == 0 ? algo_fold_partner(H, h) : -1;
      return q < 0 ? -1 : q * P;
    }
    if (k < cP) return (li ^ (1 << k)) < P ? h * P + (li ^ (1 << k)) : -1;
    k -= cP;
    int v = algo_fold_core(H, h), m = algo_pow2_floor(H);
    if (li != 0 || v < 0 || k >= 15 || (1 << k) >= m) return -1;
    return algo_fold_real(H, v ^ (1 << k)) * P;
  }
  if (algo_log_folds(w->algo)) {
    if (fold) return algo_fold_partner(n, r);
    int v = algo_fold_core(n, r), m = algo_pow2_floor(n);
    if (v < 0 || (1 << k) >= m) return -1;
    return algo_fold_real(n, v ^ (1 << k));
  }
  if (fold || k >= 15 || (1 << k) >= n) return -1;
  if (algo_is_pow2(n)) return r ^ (1 << k);
  int up = send != algo_log_reduces(w); /* towards x + 2^k */
  return up ? (r + (1 << k)) % n : (r - (1 << k) + n) % n;
}

/* ---- binomial tree items (space of m ranks, position x, root t) ---- */

WEFT_HD int algo_tree_rel(int m, int x, int t) {
  return algo_is_pow2(m) ? (x ^ t) : (x - t + m) % m;
}

/* Children of rel, by distance index: bit j set for child rel + 2^j. */
WEFT_HD unsigned algo_tree_children(int m, int rel) {
  int lim = rel ? (rel & -rel) : m;
  unsigned c = 0;
  for (int j = 0; (1 << j) < lim; j++)
    if (rel + (1 << j) < m) c |= 1u << j;
  return c;
}

WEFT_HD void algo_tree_bcast_item(int m, int x, int t, const char* src, char* dst,
                                  weft_prim* p) {
  int rel = algo_tree_rel(m, x, t);
  if (rel == 0) {
    p->src = src;
    if (dst != src) p->dst = dst;
  } else {
    algo_use_recv(p, algo_log_recv_role(algo_low_bit_index(rel)));
    p->dst = dst;
  }
  unsigned c = algo_tree_children(m, rel);
  for (int j = 0; c >> j; j++)
    if ((c >> j) & 1) algo_use_send(p, algo_log_send_role(j));
}

WEFT_HD void algo_tree_reduce_item(int m, int x, int t, const char* src, char* dst,
                                   weft_prim* p) {
  int rel = algo_tree_rel(m, x, t);
  unsigned c = algo_tree_children(m, rel);
  for (int j = 0; c >> j; j++)
    if ((c >> j) & 1) algo_use_recv(p, algo_log_recv_role(j));
  p->src = src;
  p->pre = 1;
  p->reduce = p->nrecv > 0;
  if (rel == 0) {
    p->dst = dst;
    p->post = 1;
  } else {
    algo_use_send(p, algo_log_send_role(algo_low_bit_index(rel)));
  }
}

/* ---- step counts ---- */

/* Rabenseifner: elements of a block at most, so that half the blocks fit one step. */
WEFT_HD size_t algo_rab_block_max(const weft_algo* w, int m) {
  size_t per = w->chunk * 2 / (size_t)m, a = algo_align_elems(w->elem);
  if (per >= a) per = per / a * a;
  return per ? per : 1;
}

WEFT_HD uint64_t algo_log_steps_per_loop(const weft_algo* w) {
  int n = w->nranks;
  switch (w->algo) {
    case WEFT_ALGO_RECDOUBLING_ID: {
      if (algo_log_hier(w)) {
        int P = w->log_ppn, H = n / P;
        if (w->rank % P) return 2;
        return 2 + (algo_fold_core(H, w->rank / P) < 0
                        ? 2
                        : (uint64_t)algo_log2_of(algo_pow2_floor(H)) + 1);
      }
      int v = algo_fold_core(n, w->rank);
      return v < 0 ? 2 : (uint64_t)algo_log2_of(algo_pow2_floor(n)) + 1;
    }
    case WEFT_ALGO_RABENSEIFNER_ID: {
      int v = algo_fold_core(n, w->rank);
      if (v < 0) return 4;
      return 4 * (uint64_t)algo_log2_of(algo_pow2_floor(n)) +
             (algo_fold_partner(n, w->rank) >= 0 ? 4 : 0);
    }
    case WEFT_ALGO_PAT_ID: return (uint64_t)n;
    default: return 1;
  }
}

WEFT_HD void algo_log_count_steps(weft_algo* a) {
  size_t per_loop = a->chunk;
  if (a->algo == WEFT_ALGO_RABENSEIFNER_ID) {
    int m = algo_pow2_floor(a->nranks);
    per_loop = algo_rab_block_max(a, m) * (size_t)m;
  }
  a->npc[0] = algo_divup(a->part_count, per_loop) * algo_log_steps_per_loop(a);
}

/* ---- RecDoubling AllReduce ---- */

/* Step j of RecDoubling over a space of n ranks in which this one is r: distance k uses the
 * roles of distance index kofs + k. in: the accumulator's input (src with pre when from_src,
 * else dst, already pre-applied); the result goes to dst. */
WEFT_HD void algo_rd_step(int n, int r, int j, int L, int kofs, const char* src, char* dst,
                          int from_src, weft_prim* p) {
  int v = algo_fold_core(n, r);
  const char* in = from_src ? src : dst;
  if (v < 0) { /* extra: hand the input over, get the result back */
    if (j == 0) {
      p->src = in;
      p->pre = from_src;
      algo_use_send(p, WEFT_LOG_FOLD_SEND_ROLE);
    } else {
      algo_use_recv(p, WEFT_LOG_FOLD_ROLE);
      p->dst = dst;
    }
    return;
  }
  int folded = algo_fold_partner(n, r) >= 0;
  if (j == 0) {
    p->src = in;
    p->pre = from_src;
    if (folded) {
      algo_use_recv(p, WEFT_LOG_FOLD_ROLE);
      p->reduce = 1;
      p->dst = dst;
    }
    algo_use_send(p, algo_log_send_role(kofs));
    return;
  }
  algo_use_recv(p, algo_log_recv_role(kofs + j - 1));
  p->reduce = 1;
  if (j == 1 && !folded) {
    p->src = in;
    p->pre = from_src;
  } else {
    p->src = dst;
  }
  p->dst = dst;
  if (j < L) {
    algo_use_send(p, algo_log_send_role(kofs + j));
  } else {
    p->post = 1;
    if (folded) algo_use_send(p, WEFT_LOG_FOLD_SEND_ROLE);
  }
}

WEFT_HD int algo_allreduce_recdoubling(const weft_algo* w, uint64_t pc, weft_prim* p) {
  uint64_t per = algo_log_steps_per_loop(w);
  size_t off = (size_t)algo_udiv(pc, per) * w->chunk;
  int j = (int)algo_umod(pc, per);
  size_t at = (w->part_off + off) * w->elem;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  const char* src = w->src + at;
  char* dst = w->dst + at;
  if (!algo_log_hier(w)) {
    int n = w->nranks;
    algo_rd_step(n, w->rank, j, algo_log2_of(algo_pow2_floor(n)), 0, src, dst, 1, p);
    return 1;
  }
  int P = w->log_ppn, H = w->nranks / P, li = w->rank % P;
  if (j == 0) { /* the host's partial sum to its leader, no post yet */
    algo_tree_reduce_item(P, li, 0, src, dst, p);
    p->post = 0;
    return 1;
  }
  if ((uint64_t)j == per - 1) { /* the result from the leader to the host */
    algo_tree_bcast_item(P, li, 0, dst, dst, p);
    return 1;
  }
  algo_rd_step(H, w->rank / P, j - 1, algo_log2_of(algo_pow2_floor(H)), algo_ceil_log2(P), src,
               dst, 0, p);
  return 1;
}

/* ---- Rabenseifner AllReduce ---- */

/* Point p at blocks [lo, hi) of the loop at base (blocks of `real` elements). */
WEFT_HD void algo_rab_range(const weft_algo* w, size_t base, size_t real, int lo, int hi,
                            const char** src, char** dst, weft_prim* p) {
  size_t S = w->part_count, off = base + (size_t)lo * real, end = base + (size_t)hi * real;
  if (off > S) off = S;
  if (end > S) end = S;
  p->nelem = end - off;
  size_t at = (w->part_off + off) * w->elem;
  *src = w->src + at;
  *dst = w->dst + at;
}

WEFT_HD int algo_allreduce_rabenseifner(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks, m = algo_pow2_floor(n), v = algo_fold_core(n, w->rank);
  int L = algo_log2_of(m), folded = algo_fold_partner(n, w->rank) >= 0;
  uint64_t per = algo_log_steps_per_loop(w);
  size_t bmax = algo_rab_block_max(w, m), S = w->part_count;
  size_t base = (size_t)algo_udiv(pc, per) * bmax * (size_t)m;
  int j = (int)algo_umod(pc, per);
  size_t a = algo_align_elems(w->elem);
  size_t real = algo_min(bmax, algo_divup(algo_divup(S - base, (size_t)m), a) * a);
  const char* src;
  char* dst;
  const int fold_send = WEFT_LOG_FOLD_SEND_ROLE;
  if (v < 0) { /* extra: two halves out, two halves back */
    int h = j & 1;
    algo_rab_range(w, base, real, h * m / 2, (h + 1) * m / 2, &src, &dst, p);
    if (j < 2) {
      p->src = src;
      p->pre = 1;
      algo_use_send(p, fold_send);
    } else {
      algo_use_recv(p, WEFT_LOG_FOLD_ROLE);
      p->dst = dst;
    }
    return 1;
  }
  if (folded) {
    if (j < 2) { /* the extra's halves, reduced with pre(src) into dst */
      algo_rab_range(w, base, real, j * m / 2, (j + 1) * m / 2, &src, &dst, p);
      algo_use_recv(p, WEFT_LOG_FOLD_ROLE);
      p->src = src;
      p->pre = p->reduce = 1;
      p->dst = dst;
      return 1;
    }
    if (j >= 2 + 4 * L) { /* the result's halves back to the extra */
      int h = j - 2 - 4 * L;
      algo_rab_range(w, base, real, h * m / 2, (h + 1) * m / 2, &src, &dst, p);
      p->src = dst;
      algo_use_send(p, fold_send);
      return 1;
    }
    j -= 2;
  }
  int s = j / 2, recv = j & 1;
  if (s < L) { /* recursive halving: distance m >> (s+1) */
    int mask = m >> (s + 1), lo = v & ~(2 * mask - 1), d = L - 1 - s;
    int keep = (v & mask) ? lo + mask : lo, give = (v & mask) ? lo : lo + mask;
    int from_src = s == 0 && !folded;
    if (!recv) {
      algo_rab_range(w, base, real, give, give + mask, &src, &dst, p);
      p->src = from_src ? src : dst;
      p->pre = from_src;
      algo_use_send(p, algo_log_send_role(d));
    } else {
      algo_rab_range(w, base, real, keep, keep + mask, &src, &dst, p);
      algo_use_recv(p, algo_log_recv_role(d));
      p->src = from_src ? src : dst;
      p->pre = from_src;
      p->reduce = 1;
      p->dst = dst;
      p->post = s == L - 1;
    }
    return 1;
  }
  s -= L; /* recursive doubling: distance 2^s */
  int mask = 1 << s;
  int mine = v & ~(mask - 1), theirs = (v ^ mask) & ~(mask - 1);
  if (!recv) {
    algo_rab_range(w, base, real, mine, mine + mask, &src, &dst, p);
    p->src = dst;
    algo_use_send(p, algo_log_send_role(s));
  } else {
    algo_rab_range(w, base, real, theirs, theirs + mask, &src, &dst, p);
    algo_use_recv(p, algo_log_recv_role(s));
    p->dst = dst;
  }
  return 1;
}

/* ---- log-step ReduceScatter and AllGather, binomial Broadcast and Reduce ---- */

WEFT_HD int algo_reducescatter_log(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks;
  size_t e = w->elem, base = (size_t)algo_udiv(pc, (uint64_t)n) * w->chunk;
  int q = (int)algo_umod(pc, (uint64_t)n);
  p->nelem = algo_min(w->chunk, w->part_count - base);
  algo_tree_reduce_item(n, w->rank, q, w->src + ((size_t)q * w->count + w->part_off + base) * e,
                        w->dst + (w->part_off + base) * e, p);
  return 1;
}

WEFT_HD int algo_allgather_log(const weft_algo* w, uint64_t pc, weft_prim* p) {
  int n = w->nranks;
  size_t e = w->elem, base = (size_t)algo_udiv(pc, (uint64_t)n) * w->chunk;
  int q = (int)algo_umod(pc, (uint64_t)n);
  p->nelem = algo_min(w->chunk, w->part_count - base);
  algo_tree_bcast_item(n, w->rank, q, w->src + (w->part_off + base) * e,
                       w->dst + ((size_t)q * w->count + w->part_off + base) * e, p);
  return 1;
}

WEFT_HD int algo_binomial(const weft_algo* w, uint64_t pc, weft_prim* p) {
  size_t off = (size_t)pc * w->chunk;
  size_t at = (w->part_off + off) * w->elem;
  p->nelem = algo_min(w->chunk, w->part_count - off);
  if (w->func == WEFT_FN_BROADCAST)
    algo_tree_bcast_item(w->nranks, w->rank, w->root, w->src + at, w->dst + at, p);
  else
    algo_tree_reduce_item(w->nranks, w->rank, w->root, w->src + at, w->dst + at, p);
  return 1;
}

WEFT_HD int algo_log_prim(const weft_algo* w, uint64_t pc, weft_prim* p) {
  switch (w->algo) {
    case WEFT_ALGO_RECDOUBLING_ID: return algo_allreduce_recdoubling(w, pc, p);
    case WEFT_ALGO_RABENSEIFNER_ID: return algo_allreduce_rabenseifner(w, pc, p);
    case WEFT_ALGO_PAT_ID:
      return w->func == WEFT_FN_ALLGATHER ? algo_allgather_log(w, pc, p)
                                          : algo_reducescatter_log(w, pc, p);
    default: return algo_binomial(w, pc, p);
  }
}

#endif
