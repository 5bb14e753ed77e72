/* The host parameter set: Ring and Tree, Simple and LL, on the CPU executor (LL128 needs GPU
 * store ordering and is never usable here). Constants: tune_constants.c, measured as
 * docs/tuning.md describes.
 *
 *   latency  = base[algo][proto] + (steps_intra · hop(intra link) + steps_net · hop(net))
 *                                  · (1 + oversub_hop · (oversub - 1))
 *   transfer = wire · nbytes at the (link, algo, proto) bandwidth: hot up to the cache knee,
 *              cold beyond, divided by the ranks per core, shared by the channels the rank's
 *              cores can run at once.
 * Steps: a ring 2(n-1) for AllReduce and n-1 otherwise, a tree 2·log2(n) (up, then down).
 * wire: the bytes the busiest rank sends per byte of buffer: a ring 2(n-1)/n for AllReduce,
 * (n-1)/n for AllGather/ReduceScatter, 1 for Broadcast/Reduce; a tree 1 on 2 ranks (leaf and
 * root each send the buffer once), 2 on 3 (the root serves two children), 3 from 4 ranks on (an
 * interior rank sends up once and down to two children), divided by HOST_TREE_EFFICIENCY from 4
 * ranks on when every rank has a core.
 * hop() is hwLatencies[NCCL_HW_PCI] for shared memory and hwLatencies[NCCL_HW_NET] for the net
 * (the ABI has no "shm" row; weft uses the PCI one, NCCL's row for the same host). */
#include <math.h>

#include "tune/tune_model_impl.h"

/* Each extra channel costs a worker hand-off per op (µs) and gains this share of a channel. */
#define HOST_CHANNEL_COST_US 2.0
#define HOST_CHANNEL_GAIN 0.75
/* A tree of 4+ ranks with a core per rank moves its data at this share of the fitted (2-core,
 * oversubscribed) bandwidth: on the 16-core GPU host, per extra byte, Tree/Simple AllReduce took
 * 3.9x (4 ranks), 2.9x (8) and 5.8x (16) the Ring's time where its wire says 2x, 1.7x and 1.6x
 * (forced runs, docs/perf-notes.md 2026-12-02). */
#define HOST_TREE_EFFICIENCY 0.45

/* The slowest link (link table index: 0 SHM, 1 NET) an algorithm crosses. */
static int host_link(const weft_tune_facts* f) {
  return f->nnodes > 1 || f->intra_link != TUNE_LINK_SHM ? 1 : 0;
}

void tune_model_init_host(weft_tune_model* m) {
  const weft_tune_facts* f = &m->f;
  const ncclTunerConstants_v5_t* k = &m->k;
  int n = f->nranks, nodes = f->nnodes;
  int intra_hw = f->intra_link == TUNE_LINK_SHM ? NCCL_HW_PCI : NCCL_HW_NET;
  double slow = 1.0 + m->hb.oversub_hop * (f->oversub - 1.0);
  for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++) {
    ncclFunc_t func = (ncclFunc_t)fn;
    for (int a = NCCL_ALGO_TREE; a <= NCCL_ALGO_RING; a++) {
      if (!(tune_func_algos(func) & (1u << a))) continue;
      int hops, net_hops;
      double wire = func == ncclFuncAllReduce ? 2.0 * (n - 1) / n
                    : (func == ncclFuncAllGather || func == ncclFuncReduceScatter)
                        ? (double)(n - 1) / n
                        : 1.0;
      if (a == NCCL_ALGO_TREE) wire = n <= 2 ? 1.0 : n == 3 ? 2.0 : 3.0;
      if (a == NCCL_ALGO_TREE && n >= 4 && f->oversub <= 1.0) wire /= HOST_TREE_EFFICIENCY;
      if (a == NCCL_ALGO_RING) {
        hops = tune_ring_steps(func, n);
        net_hops = nodes > 1 ? (func == ncclFuncAllReduce ? 2 * (nodes - 1) : nodes - 1) : 0;
      } else {
        hops = 2 * tune_log2i(n);
        net_hops = nodes > 1 ? 2 * tune_log2i(nodes) : 0;
        if (hops < 2 && n > 1) hops = 2;
      }
      if (net_hops > hops) net_hops = hops;
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        if (p == NCCL_PROTO_LL128) continue; /* not on the host */
        double steps = (hops - net_hops) * k->hwLatencies[intra_hw][a][p] +
                       net_hops * k->hwLatencies[NCCL_HW_NET][a][p];
        m->lat[fn][a][p] = k->baseLatencies[a][p] + steps * slow;
        m->wire[fn][a][p] = wire;
      }
    }
  }
}

double tune_host_xfer_us(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                         double bytes, int nch) {
  (void)func;
  const weft_tune_facts* f = &m->f;
  int link = host_link(f);
  int a = algo == NCCL_ALGO_TREE ? 0 : 1;
  double hot = m->hb.bw_hot[link][a][proto], cold = m->hb.bw_cold[link][a][proto];
  if (hot <= 0 || cold <= 0) return INFINITY;
  int usable = nch < f->cores_per_rank ? nch : f->cores_per_rank;
  if (usable < 1) usable = 1;
  double share = (1.0 + HOST_CHANNEL_GAIN * (usable - 1)) / f->oversub;
  double knee = m->hb.knee_bytes;
  double us = bytes <= knee ? bytes / (1000.0 * hot)
                            : knee / (1000.0 * hot) + (bytes - knee) / (1000.0 * cold);
  return us / share + HOST_CHANNEL_COST_US * (nch - 1);
}
