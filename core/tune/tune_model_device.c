/* The device parameter set: NCCL's model (src/graph/tuning.cc) for Ring and Tree; CollNet and
 * NVLS need hardware weft does not drive, so their cells stay unusable (PAT's slot holds weft's
 * log-step algorithms, tune_model_log.c). Latencies come from the constants (baseLatencies,
 * hwLatencies), bandwidth caps from their per-architecture rows, link bandwidths from the
 * facts. */
#include <math.h>

#include "tune/tune_model_impl.h"

static int scale_index(int nnodes) {
  return nnodes <= 1 ? NCCL_TUNING_SCALE_1NODE
         : nnodes == 2 ? NCCL_TUNING_SCALE_2NODES
                       : NCCL_TUNING_SCALE_4NODES;
}

static double min2(double a, double b) { return a < b ? a : b; }

/* Bus bandwidth of (algo, proto) on nch channels, with NCCL's caps and efficiencies. */
static double bus_bw(const weft_tune_model* m, ncclFunc_t func, int algo, int proto, int nch) {
  const weft_tune_facts* f = &m->f;
  const ncclTunerConstants_v5_t* k = &m->k;
  int cc = f->compcap_idx, sc = scale_index(f->nnodes);
  double bw = (f->nnodes <= 1 ? f->bw_intra : f->bw_inter) * nch / f->max_channels;
  double ll_max = k->llMaxBws[cc][sc];
  if (algo == NCCL_ALGO_RING) {
    if (proto == NCCL_PROTO_LL) bw = min2(ll_max, 0.5 * bw);
    if (proto == NCCL_PROTO_LL128) bw = min2(0.92 * bw, nch * k->perChMaxRingLL128Bws[cc][sc]);
    return bw;
  }
  /* Tree (AllReduce only). */
  (void)func;
  if (proto == NCCL_PROTO_SIMPLE) bw = min2(0.92 * bw, nch * k->perChMaxTreeBws[cc][sc]);
  if (proto == NCCL_PROTO_LL) bw = min2(bw / 3.8, ll_max);
  if (proto == NCCL_PROTO_LL128)
    bw = min2(bw * (f->nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
              nch * k->perChMaxTreeLL128Bws[cc][sc]);
  return bw * 0.85; /* the tree pattern uses its links less evenly than a ring */
}

void tune_model_init_device(weft_tune_model* m) {
  const weft_tune_facts* f = &m->f;
  const ncclTunerConstants_v5_t* k = &m->k;
  int n = f->nranks, nodes = f->nnodes, ppn = f->ppn_max;
  int intra_hw = f->intra_link == TUNE_LINK_NVLINK ? NCCL_HW_NVLINK : NCCL_HW_PCI;
  for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++) {
    ncclFunc_t func = (ncclFunc_t)fn;
    int nsteps = func == ncclFuncAllReduce ? 2 * (n - 1)
                 : (func == ncclFuncAllGather || func == ncclFuncReduceScatter) ? n - 1
                                                                                  : n;
    int ninter = nodes > 1 ? (func == ncclFuncAllReduce ? 2 * (nodes - 1) : nodes - 1) : 0;
    if (ninter > nsteps) ninter = nsteps;
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
      if (a != NCCL_ALGO_RING && !(a == NCCL_ALGO_TREE && func == ncclFuncAllReduce)) continue;
      if (!(tune_func_algos(func) & (1u << a))) continue;
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        double base = k->baseLatencies[a][p];
        double intra = k->hwLatencies[intra_hw][a][p];
        /* Between nodes: the net latency (the Tree row with one rank per node), the net
         * overhead counted again for Simple. */
        int net_algo = ppn == 1 ? NCCL_ALGO_TREE : a;
        double inter = k->hwLatencies[NCCL_HW_NET][net_algo][p];
        double net_overhead = p == NCCL_PROTO_SIMPLE ? 3.0 : 1.0;
        double lat;
        if (a == NCCL_ALGO_RING) {
          lat = base + (nsteps - ninter) * (intra > net_overhead || nodes == 1 ? intra : net_overhead) +
                ninter * inter;
          m->wire[fn][a][p] = 1.0;
        } else {
          lat = base + 2 * ((ppn - 1) * intra + tune_log2i(nodes) * inter);
          m->wire[fn][a][p] = 1.0;
        }
        m->lat[fn][a][p] = lat;
        double bw = bus_bw(m, func, a, p, f->max_channels);
        /* bus → algorithm bandwidth: a ring moves nsteps/n of the data per rank, a tree half. */
        m->bw[fn][a][p] = a == NCCL_ALGO_RING ? bw * n / (nsteps > 0 ? nsteps : 1) : bw * 0.5;
      }
    }
  }
}

double tune_device_xfer_us(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                           double bytes, int nch) {
  if (tune_is_direct(algo) || tune_is_log(algo)) {
    /* bytes are already the wire bytes: at the links' bandwidth */
    double bw = bus_bw(m, func, NCCL_ALGO_RING, proto, nch);
    return bw > 0 ? bytes / (1000.0 * bw) : INFINITY;
  }
  double bw = bus_bw(m, func, algo, proto, nch);
  int n = m->f.nranks;
  int nsteps = func == ncclFuncAllReduce ? 2 * (n - 1)
               : (func == ncclFuncAllGather || func == ncclFuncReduceScatter) ? n - 1
                                                                                : n;
  double algbw = algo == NCCL_ALGO_RING ? bw * n / (nsteps > 0 ? nsteps : 1) : bw * 0.5;
  if (algbw <= 0) return INFINITY;
  return bytes / (1000.0 * algbw); /* GB/s = 1000 bytes per µs */
}
