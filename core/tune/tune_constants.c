/* The constants the cost model starts from (a v5 tuner plugin may rewrite them at init).
 *
 * Device: NCCL's published defaults (its src/graph/tuning.cc): latencies in µs per algorithm and
 * protocol (LL, LL128, Simple), bandwidth caps in GB/s per architecture (Volta, Ampere, Hopper,
 * Blackwell) and scale (1 node, 2 nodes, 4+ nodes).
 *
 * Host: measured on the host data path with tests/tune/scripts/sweep.sh (forced NCCL_ALGO /
 * NCCL_PROTO, 2 and 4 ranks, shared memory and the socket net; medians over repetitions) and
 * fitted as docs/tuning.md "Host calibration" shows. What the numbers say: a host collective
 * costs a small fixed planning cost (~2 µs; the caller runs channel 0 itself) whatever the
 * protocol; LL is never faster than Simple on the host (its flag polling is no
 * cheaper than Simple's head/tail handshake) and moves data 5-10x slower; with 2 ranks
 * Ring/Simple is the best choice at every size, over shared memory and over the socket net; with
 * more ranks than cores every step costs a context switch and the tree's fewer steps win small
 * messages. */
#include <string.h>

#include "tune/tune_model.h"

/* ---- device: NCCL's defaults ---- */

#define NA 0.0 /* algorithm/protocol pair without a latency of its own (unusable) */

static const double dev_base[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {
    {6.8, 14.0, 8.4}, /* Tree */
    {6.6, 14.0, 8.4}, /* Ring */
    {0, 0, 0},        /* CollNetDirect */
    {0, 0, 0},        /* CollNetChain */
    {0, 0, 0},        /* NVLS */
    {0, 0, 0},        /* NVLSTree */
    {8.0, 8.0, 8.0},  /* PAT */
};

static const double dev_hw[NCCL_NUM_HW_LINKS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {
    /* NVLINK */
    {{.6, 1.25, 4}, {.6, 1.9, 3.4}, {NA, NA, 3.7}, {NA, NA, 2.8}, {NA, NA, 25}, {NA, NA, 25},
     {NA, NA, 4}},
    /* PCI */
    {{1, 1.9, 4}, {1, 2.5, 5.7}, {NA, NA, 3.7}, {NA, NA, 2.8}, {NA, NA, 0}, {NA, NA, 0},
     {NA, NA, 4}},
    /* NET */
    {{5, 8.5, 14}, {2.7, 4, 14}, {NA, NA, 31}, {NA, NA, 30}, {NA, NA, 18}, {NA, NA, 20.9},
     {NA, NA, 14}},
};

static const double dev_ll_max[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
static const double dev_ring_ll128[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}};
static const double dev_tree_ll128[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
static const double dev_tree[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
static const double dev_nvls_tree[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}};

/* ---- host: measured (docs/tuning.md, "Host calibration") ---- */

/* Fixed cost of one op (µs): the calling thread runs channel 0's items itself
 * (host_exec_run_here), so what is left is planning the op and the first poll: 1.4-2 µs for an
 * 8-byte AllReduce of 2 ranks on a 2-core VM and on the 16-core GPU host (before the caller ran
 * its items, the hand-off to a worker and back cost ~11 µs, 14 µs on the VM). Under load from
 * other processes every host time here roughly doubles. */
static const double host_base[2][NCCL_NUM_PROTOCOLS] = {
    /* Tree */ {2.5, 0.0, 2.0},
    /* Ring */ {2.0, 0.0, 1.5},
};
/* One algorithm step (µs) over shared memory and over the socket net. LL's flag polling makes
 * a step no cheaper than Simple's handshake. */
static const double host_hop_shm[2][NCCL_NUM_PROTOCOLS] = {
    /* Tree */ {1.0, 0.0, 0.75},
    /* Ring */ {1.0, 0.0, 0.75},
};
static const double host_hop_net[2][NCCL_NUM_PROTOCOLS] = {
    /* Tree */ {50.0, 0.0, 48.5},
    /* Ring */ {55.0, 0.0, 45.0},
};

/* CollNetChain (Simple only; tune_model_collnet.c): the op's fixed cost as the Ring's, a step
 * within the node as a shared-memory hop, and the plugin's reduction across the leaders as one
 * socket round (an estimate: nothing here reduces in a switch; a v5 tuner may set a fabric's). */
static const double host_collnet[3] = {/* base */ 2.0, /* intra hop */ 0.75, /* net */ 45.0};

void tune_constants_default(const weft_tune_facts* f, ncclTunerConstants_v5_t* k) {
  memset(k, 0, sizeof *k);
  memcpy(k->llMaxBws, dev_ll_max, sizeof dev_ll_max);
  memcpy(k->perChMaxRingLL128Bws, dev_ring_ll128, sizeof dev_ring_ll128);
  memcpy(k->perChMaxTreeLL128Bws, dev_tree_ll128, sizeof dev_tree_ll128);
  memcpy(k->perChMaxTreeBws, dev_tree, sizeof dev_tree);
  memcpy(k->perChMaxNVLSTreeBws, dev_nvls_tree, sizeof dev_nvls_tree);
  if (!f->host) {
    memcpy(k->baseLatencies, dev_base, sizeof dev_base);
    memcpy(k->hwLatencies, dev_hw, sizeof dev_hw);
    return;
  }
  for (int a = NCCL_ALGO_TREE; a <= NCCL_ALGO_RING; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      k->baseLatencies[a][p] = host_base[a][p];
      k->hwLatencies[NCCL_HW_NVLINK][a][p] = host_hop_shm[a][p];
      k->hwLatencies[NCCL_HW_PCI][a][p] = host_hop_shm[a][p];
      k->hwLatencies[NCCL_HW_NET][a][p] = host_hop_net[a][p];
    }
  k->baseLatencies[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] = host_collnet[0];
  k->hwLatencies[NCCL_HW_NVLINK][NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] = host_collnet[1];
  k->hwLatencies[NCCL_HW_PCI][NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] = host_collnet[1];
  k->hwLatencies[NCCL_HW_NET][NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] = host_collnet[2];
}

void tune_host_bw_default(const weft_tune_facts* f, weft_tune_host_bw* hb) {
  (void)f;
  memset(hb, 0, sizeof *hb);
  /* GB/s per channel, 2 ranks: [shm, net][Tree, Ring][LL, LL128, Simple]. */
  static const double hot[2][2][NCCL_NUM_PROTOCOLS] = {{{0.93, 0, 9.0}, {1.05, 0, 10.3}},
                                                       {{0.5, 0, 1.18}, {0.4, 0, 1.65}}};
  static const double cold[2][2][NCCL_NUM_PROTOCOLS] = {{{0.9, 0, 4.2}, {0.95, 0, 5.5}},
                                                        {{0.5, 0, 1.15}, {0.34, 0, 1.15}}};
  memcpy(hb->bw_hot, hot, sizeof hot);
  memcpy(hb->bw_cold, cold, sizeof cold);
  hb->knee_bytes = 2u << 20;
  hb->oversub_hop = 10.0;
}
