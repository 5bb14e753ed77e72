/* The cost model's rows for weft's logarithmic algorithms (algo/algo_log.h): RecDoubling
 * and Rabenseifner AllReduce, the log-step AllGather (Bruck) and ReduceScatter (RecHalving) in
 * NCCL's PAT row, Binomial Broadcast and Reduce. An alpha-beta model per step:
 *
 *   latency  = base(Ring) + (rounds · round + (steps - rounds) · step) · hop · slow
 *   transfer = wire / efficiency · nbytes at the Ring's bandwidth (tune_host_xfer_us, or the
 *              device's link bandwidth, tune_device_xfer_us)
 *
 * rounds: the dependent message rounds of the critical path (latency terms that wait on a
 * peer); steps: the primitive steps a rank runs per loop (each a poll and a hand-off even when
 * its data is already there); hop: the Ring row's per-step latency of the link (shared memory,
 * or the net for the share of rounds that cross nodes); slow: the oversubscription factor of
 * the host model. wire: bytes the busiest rank moves per byte of buffer. With n ranks,
 * m = 2^floor(log2 n), L = log2 m, f = 1 when n is not a power of two (the fold: the extra
 * ranks' data in and the result out), c = ceil(log2 n):
 *
 *   RecDoubling   rounds L + 2f   steps L + 1     wire L + 2f   (the full buffer every round)
 *   Rabenseifner  rounds 2L + 2f  steps 4L + 4f   wire 2(m-1)/m + 2f
 *   PAT (AG, RS)  rounds c        steps n         wire (n-1)/n
 *   Binomial      rounds c        steps 1         wire c        (the root serves c children)
 *
 * The three constants per algorithm are data, in log_constants below: round and step in units
 * of the Ring's hop, efficiency the share of the Ring's bandwidth the algorithm's steps reach.
 * round and step are estimates from the step counts (a round costs what a ring step does; a
 * step with its data ready a quarter of that). The AllReduce efficiencies are fitted on the
 * 16-core GPU host (forced runs of 2, 4, 8 and 16 ranks, 4 KiB-64 MiB, docs/perf-notes.md
 * 2026-12-02): per extra byte RecDoubling costs 1.7x (4 ranks) to 4x (16 ranks) the Ring's time
 * where its wire alone says 1.3-2.1x (efficiency 0.6); Rabenseifner 1.8-2.2x where the wire says
 * 1x (its halving blocks are copied in pieces the size of the step: 0.5). PAT and Binomial keep
 * their first estimates. Refit them with tools/bench/vs_mpi_gloo.py and
 * tests/tune/scripts/sweep.sh on the machine that runs host mode (docs/tuning.md). The device
 * rows use the same shape and constants with the GPU's link latency (NVLink or PCIe) and no
 * oversubscription: an unmeasured first estimate, for a tuner plugin's table and for forced
 * runs (the device rule picks these algorithms only when NCCL_ALGO leaves nothing else). */
#include <math.h>

#include "tune/tune_model_impl.h"

typedef struct {
  int algo;
  double round, step; /* × the Ring's hop */
  double efficiency;  /* × the Ring's bandwidth */
} log_constants_row;

static const log_constants_row log_constants[] = {
    {WEFT_ALGO_RECDOUBLING_ID, 1.0, 0.25, 0.6},
    {WEFT_ALGO_RABENSEIFNER_ID, 1.0, 0.25, 0.5},
    {WEFT_ALGO_PAT_ID, 1.0, 0.25, 0.9},
    {WEFT_ALGO_BINOMIAL_ID, 1.0, 0.25, 0.9},
};

static int ceil_log2(int n) {
  int c = 0;
  while ((1 << c) < n) c++;
  return c;
}

/* rounds, steps and wire of algo on n ranks (see the table above). */
static void log_shape(int algo, int n, double* rounds, double* steps, double* wire) {
  int m = 1 << tune_log2i(n), L = tune_log2i(n), f = n != m, c = ceil_log2(n);
  switch (algo) {
    case WEFT_ALGO_RECDOUBLING_ID:
      *rounds = L + 2 * f, *steps = L + 1, *wire = L + 2 * f;
      return;
    case WEFT_ALGO_RABENSEIFNER_ID:
      *rounds = 2 * L + 2 * f, *steps = 4 * L + 4 * f, *wire = 2.0 * (m - 1) / m + 2 * f;
      return;
    case WEFT_ALGO_PAT_ID:
      *rounds = c, *steps = n, *wire = (double)(n - 1) / n;
      return;
    default:
      *rounds = c, *steps = 1, *wire = c;
      return;
  }
}

void tune_model_init_log(weft_tune_model* m) {
  const weft_tune_facts* f = &m->f;
  int n = f->nranks;
  if (n > (f->host ? WEFT_LOG_MAX_RANKS : WEFT_LOG_DEV_MAX_RANKS)) return;
  const ncclTunerConstants_v5_t* k = &m->k;
  int intra_hw = f->host ? (f->intra_link == TUNE_LINK_SHM ? NCCL_HW_PCI : NCCL_HW_NET)
                         : (f->intra_link == TUNE_LINK_NVLINK ? NCCL_HW_NVLINK : NCCL_HW_PCI);
  double slow = f->host ? 1.0 + m->hb.oversub_hop * (f->oversub - 1.0) : 1.0;
  /* The share of the rounds whose peer is on another node (distances 2^k ≥ ranks per node). */
  double net_share = f->nnodes > 1 && n > 1 ? (double)tune_log2i(f->nnodes) / ceil_log2(n) : 0.0;
  if (net_share > 1) net_share = 1;
  for (size_t i = 0; i < sizeof log_constants / sizeof *log_constants; i++) {
    const log_constants_row* c = &log_constants[i];
    for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++) {
      if (!(tune_func_algos((ncclFunc_t)fn) & (1u << c->algo))) continue;
      double rounds = 0, steps = 0, wire = 1;
      if (n > 1) log_shape(c->algo, n, &rounds, &steps, &wire);
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        if (p == NCCL_PROTO_LL128 && f->host) continue; /* not on the host */
        if (m->lat[fn][NCCL_ALGO_RING][p] < 0) continue;
        double hop = (1 - net_share) * k->hwLatencies[intra_hw][NCCL_ALGO_RING][p] +
                     net_share * k->hwLatencies[NCCL_HW_NET][NCCL_ALGO_RING][p];
        double lat = k->baseLatencies[NCCL_ALGO_RING][p] +
                     (rounds * c->round + fmax(steps - rounds, 0.0) * c->step) * hop * slow;
        /* One rank: what the ring costs plus one, so it never wins unless asked for. */
        m->lat[fn][c->algo][p] = n > 1 ? lat : m->lat[fn][NCCL_ALGO_RING][p] + 1.0;
        m->wire[fn][c->algo][p] = wire / c->efficiency;
      }
    }
  }
}
