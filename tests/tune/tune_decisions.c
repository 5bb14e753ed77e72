/* The cost model's decisions for representative topologies and sizes (AllReduce unless said):
 * what the host calibration measured (docs/tuning.md) and what NCCL's device model is known to
 * do. Plus: NCCL_ALGO/NCCL_PROTO restrict it, and constants a v5 tuner rewrites move it. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "tune/tune.h"

static const unsigned host_protos = (1u << NCCL_PROTO_LL) | (1u << NCCL_PROTO_SIMPLE);
static const unsigned dev_protos = (1u << NCCL_NUM_PROTOCOLS) - 1;

typedef struct {
  const char* topo;
  weft_tune_facts f;
  weft_tune_model m;
  weft_exec_caps caps;
} topo_t;

static void init_topo(topo_t* t, const char* name, const ncclTunerConstants_v5_t* k_override) {
  ncclTunerConstants_v5_t k;
  weft_tune_host_bw hb;
  tune_constants_default(&t->f, &k);
  if (k_override) k = *k_override;
  tune_host_bw_default(&t->f, &hb);
  tune_model_init(&t->m, &t->f, &k, &hb);
  t->topo = name;
  t->caps = (weft_exec_caps){(1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE),
                             t->f.host ? host_protos : dev_protos, t->f.max_channels};
}

static int failures;

/* want: "Ring/Simple" or "*\/LL" (any algorithm) or "Tree/ *" (any protocol), optional
 * channel count (0: any). */
static void expect(const topo_t* t, const weft_algo_proto_mask* mask, ncclFunc_t func,
                   size_t nbytes, const char* want_algo, const char* want_proto, int want_nch) {
  weft_choice c;
  double us = -1;
  if (tune_choose(&t->m, mask, &t->caps, func, nbytes, &c, &us) != ncclSuccess) {
    fprintf(stderr, "%s: %s %zu B: no choice\n", t->topo, tune_func_name(func), nbytes);
    failures++;
    return;
  }
  int ok = (!strcmp(want_algo, "*") || !strcmp(want_algo, tune_algo_name(c.algo))) &&
           (!strcmp(want_proto, "*") || !strcmp(want_proto, tune_proto_name(c.proto))) &&
           (want_nch == 0 || want_nch == c.nchannels) && us > 0;
  printf("%-28s %-13s %10zu B -> %s/%s %d ch, %.1f us%s\n", t->topo, tune_func_name(func), nbytes,
         tune_algo_name(c.algo), tune_proto_name(c.proto), c.nchannels, us,
         ok ? "" : "   <-- expected something else");
  if (!ok) failures++;
}

int main(void) {
  weft_algo_proto_mask all, tree_ar;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  EXPECT_OK(tune_parse_masks("allreduce:tree", NULL, &tree_ar));
  const ncclFunc_t AR = ncclFuncAllReduce;
  const size_t K = 1024, M = 1024 * 1024;
  topo_t t;

  /* Host, 2 ranks over shared memory (the calibration's own case): Ring/Simple everywhere. */
  tune_facts_host(&t.f, 2, 1, 1, 1, 1, 1.0);
  init_topo(&t, "host 2 ranks shm", NULL);
  for (size_t b = 8; b <= 64 * M; b *= 8) expect(&t, &all, AR, b, "Ring", "Simple", 1);
  expect(&t, &all, ncclFuncBroadcast, 4 * K, "Ring", "Simple", 1);
  expect(&t, &all, ncclFuncAllGather, 64 * M, "Ring", "Simple", 1);
  expect(&t, &tree_ar, AR, 64 * M, "Tree", "Simple", 1);
  expect(&t, &tree_ar, ncclFuncReduce, 64, "Ring", "Simple", 1); /* Tree is AllReduce only */

  /* Host, 4 ranks on 2 cores: every step waits for a context switch, the tree's fewer steps
   * win small messages; the ring's bandwidth wins large ones. */
  tune_facts_host(&t.f, 4, 1, 1, 1, 1, 2.0);
  init_topo(&t, "host 4 ranks shm, 2 cores", NULL);
  expect(&t, &all, AR, 8, "Tree", "Simple", 1);
  expect(&t, &all, AR, 16 * K, "Tree", "Simple", 1);
  expect(&t, &all, AR, 64 * M, "Ring", "Simple", 1);

  /* Host, 2 ranks over the socket net: Ring/Simple at every size too (on a quiet machine the
   * four choices lie within 10-20% for small messages, and LL never pays). */
  tune_facts_host(&t.f, 2, 1, 0, 1, 1, 1.0);
  init_topo(&t, "host 2 ranks socket", NULL);
  expect(&t, &all, AR, 8, "Ring", "Simple", 1);
  expect(&t, &all, AR, 64 * K, "Ring", "Simple", 1);
  expect(&t, &all, AR, M, "Ring", "Simple", 1);
  expect(&t, &all, AR, 64 * M, "Ring", "Simple", 1);
  expect(&t, &all, ncclFuncAllGather, 8, "Ring", "Simple", 1);
  expect(&t, &tree_ar, AR, 8, "Tree", "Simple", 1);

  /* Host, 2 nodes of 8 ranks with 4 cores each and 2 channels: tree for latency, ring and both
   * channels for bandwidth. */
  tune_facts_host(&t.f, 16, 2, 1, 2, 4, 1.0);
  init_topo(&t, "host 2 nodes x 8 ranks", NULL);
  expect(&t, &all, AR, 8, "Tree", "Simple", 1);
  expect(&t, &all, AR, 64 * M, "Ring", "Simple", 2);

  /* Device: 8 GPUs on NVLink (Hopper) in one node: LL for tiny messages on one channel, not LL
   * for large ones, on every channel. */
  tune_facts_device(&t.f, 8, 1, 1, NCCL_HOPPER_COMPCAP_IDX, 32);
  init_topo(&t, "device 8xH100 NVLink", NULL);
  expect(&t, &all, AR, 8, "Ring", "LL", 1);
  expect(&t, &all, AR, 64 * M, "Ring", "*", 32);
  {
    weft_choice c;
    EXPECT_OK(tune_choose(&t.m, &all, &t.caps, AR, 64 * M, &c, NULL));
    EXPECT(c.proto != NCCL_PROTO_LL);
  }
  /* Device: 16 nodes x 8 GPUs: the tree's log-depth latency for small messages. */
  tune_facts_device(&t.f, 128, 16, 1, NCCL_HOPPER_COMPCAP_IDX, 32);
  init_topo(&t, "device 16 nodes x 8 H100", NULL);
  expect(&t, &all, AR, 8, "Tree", "LL", 1);
  expect(&t, &all, ncclFuncAllGather, 8, "Ring", "LL", 1);
  /* Device: 2 nodes of one PCIe GPU each: Simple for large messages. */
  tune_facts_device(&t.f, 2, 2, 0, NCCL_AMPERE_COMPCAP_IDX, 8);
  init_topo(&t, "device 2 nodes x 1 A100", NULL);
  expect(&t, &all, AR, 8, "*", "LL", 1);
  expect(&t, &all, AR, 64 * M, "Ring", "Simple", 8);

  /* A v5 tuner that rewrites the constants moves the model: Ring latencies x100 on the host
   * 2-rank case turn small AllReduce to Tree. */
  tune_facts_host(&t.f, 2, 1, 1, 1, 1, 1.0);
  ncclTunerConstants_v5_t k;
  tune_constants_default(&t.f, &k);
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) k.baseLatencies[NCCL_ALGO_RING][p] *= 100;
  init_topo(&t, "host 2 ranks, slow ring", &k);
  expect(&t, &all, AR, 8, "Tree", "Simple", 1);

  if (failures) fprintf(stderr, "%d decision(s) not as expected\n", failures);
  return failures ? 1 : 0;
}
