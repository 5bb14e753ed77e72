/* The cost model's row for CollNetChain AllReduce on the host (algo/algo_collnet.h): a binomial
 * reduce within each node to its leader, the leaders' reduction through the CollNet plugin, a
 * binomial broadcast within the node. Per loop, with P ranks per node and c = ceil(log2 P):
 *
 *   latency  = base + (2c · intra + net) · slow
 *   transfer = 2 · nbytes at the Ring's bandwidth (the leader takes in its node's partials and
 *              hands the result on: the buffer crosses its memory twice; the plugin's own
 *              movement is counted in net)
 *
 * base, intra and net are the CollNetChain cells of the constants (tune_constants.c), which a
 * v5 tuner may rewrite: intra the node's link (shared memory, or the net with NCCL_SHM_DISABLE),
 * net the plugin's reduction. The row exists only where the communicator agreed that CollNet is
 * usable (facts.collnet_ppn > 0, tune_comm.c); elsewhere it stays unusable. */
#include "tune/tune_model_impl.h"

void tune_model_init_collnet(weft_tune_model* m) {
  const weft_tune_facts* f = &m->f;
  if (!f->host || f->collnet_ppn < 1 || f->nranks < 2) return;
  const ncclTunerConstants_v5_t* k = &m->k;
  const int a = NCCL_ALGO_COLLNET_CHAIN, p = NCCL_PROTO_SIMPLE;
  int c = 0;
  while ((1 << c) < f->collnet_ppn) c++;
  int intra_hw = f->intra_link == TUNE_LINK_SHM ? NCCL_HW_PCI : NCCL_HW_NET;
  double intra = f->intra_link == TUNE_LINK_SHM ? k->hwLatencies[intra_hw][a][p]
                                                : k->hwLatencies[NCCL_HW_NET][NCCL_ALGO_RING][p];
  double slow = 1.0 + m->hb.oversub_hop * (f->oversub - 1.0);
  m->lat[ncclFuncAllReduce][a][p] =
      k->baseLatencies[a][p] + (2.0 * c * intra + k->hwLatencies[NCCL_HW_NET][a][p]) * slow;
  m->wire[ncclFuncAllReduce][a][p] = 2.0;
}
