/* The constants the cost model starts from (a v5 tuner plugin may rewrite them at init).
 *
 * Device: NCCL's published defaults (nccl-internals §6): latencies in µs per algorithm and
 * protocol (LL, LL128, Simple), bandwidth caps in GB/s per architecture (Volta, Ampere, Hopper,
 * Blackwell) and scale (1 node, 2 nodes, 4+ nodes).
 *
 * Host: measured on the host data path with tests/tune/scripts/sweep.sh (forced NCCL_ALGO /
 * NCCL_PROTO, 2 and 4 ranks, shared memory and the socket net; medians over repetitions) and
 * fitted as docs/tuning.md "Host calibration" shows. What the numbers say: a host collective
 * costs a fixed hand-off to the executor's workers and back (10-25 µs) whatever the protocol;
 * LL is never faster than Simple on the host (its flag polling is no cheaper than Simple's
 * head/tail handshake and competes for the CPU) and moves data 4-8x slower; over the socket net
 * a tree step costs half a ring step, so small messages go by Tree there. */
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

/* Fixed cost of one op (µs): the hand-off to the channel workers, their first poll, the
 * completion back to the caller. Tree/Simple is set 2 µs above its 2-rank median: under load
 * it ties with Ring/Simple, on a quiet machine it takes twice as long (24 vs 11 µs). */
static const double host_base[2][NCCL_NUM_PROTOCOLS] = {
    /* Tree */ {24.0, 0.0, 24.0},
    /* Ring */ {23.0, 0.0, 22.0},
};
/* One algorithm step (µs) over shared memory and over the socket net. Over the net a ring step
 * costs about twice a tree step (each ring step sends and receives at once through the proxy),
 * and LL's steps cost more than Simple's (its polling competes with the proxy for the CPU). */
static const double host_hop_shm[2][NCCL_NUM_PROTOCOLS] = {
    /* Tree */ {2.0, 0.0, 1.5},
    /* Ring */ {2.0, 0.0, 1.5},
};
static const double host_hop_net[2][NCCL_NUM_PROTOCOLS] = {
    /* Tree */ {63.0, 0.0, 50.5},
    /* Ring */ {108.0, 0.0, 94.0},
};

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
}

void tune_host_bw_default(const weft_tune_facts* f, weft_tune_host_bw* hb) {
  (void)f;
  memset(hb, 0, sizeof *hb);
  /* GB/s per channel: [shm, net][Tree, Ring][LL, LL128, Simple]. Tree/Simple's hot bandwidth
   * is set below its loaded median (7) under Ring/Simple's: on a quiet machine Ring/Simple moves
   * 1-2 MiB twice as fast (min over repetitions: 14 vs 7 GB/s). */
  static const double hot[2][2][NCCL_NUM_PROTOCOLS] = {{{0.78, 0, 5.5}, {0.75, 0, 6.0}},
                                                       {{0.44, 0, 0.8}, {0.2, 0, 1.3}}};
  static const double cold[2][2][NCCL_NUM_PROTOCOLS] = {{{0.67, 0, 3.1}, {0.67, 0, 3.3}},
                                                        {{0.27, 0, 0.8}, {0.13, 0, 1.0}}};
  memcpy(hb->bw_hot, hot, sizeof hot);
  memcpy(hb->bw_cold, cold, sizeof cold);
  hb->knee_bytes = 2u << 20;
  hb->oversub_hop = 6.0;
}
