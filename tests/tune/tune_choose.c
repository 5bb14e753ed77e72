/* tune_choose (the cost model alone): over random masks, caps, collectives, sizes, rank counts
 * and topologies (host and device) the choice always lies in mask ∩ caps (and Tree only for
 * AllReduce), nchannels is in 1..max_channels, the predicted time is finite and >= 0, and an
 * empty intersection is ncclInvalidUsage with a WARN naming the collective. Plus the model's
 * intended shape: one channel for small messages, all of them for large ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tune/tune.h"
#include "util/log.h"

/* Algorithms that can run each collective (Broadcast, Reduce, AllGather, ReduceScatter,
 * AllReduce), from NCCL's documentation. */
static const unsigned applicable[WEFT_NUM_COLL_FUNCS] = {
    1u << NCCL_ALGO_RING, 1u << NCCL_ALGO_RING,
    (1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_COLLNET_DIRECT) | (1u << NCCL_ALGO_NVLS) |
        (1u << NCCL_ALGO_PAT),
    (1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_COLLNET_DIRECT) | (1u << NCCL_ALGO_NVLS) |
        (1u << NCCL_ALGO_PAT),
    0x7fu & ~(1u << NCCL_ALGO_PAT)};

static int usable(unsigned algos, unsigned protos) {
  /* Ring, Tree and PAT's log-step AllGather/ReduceScatter run every protocol; the others
   * Simple only. */
  unsigned rt = (1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE) | (1u << NCCL_ALGO_PAT);
  if ((algos & rt) && protos) return 1;
  return (algos & ~rt) && (protos & (1u << NCCL_PROTO_SIMPLE));
}

int main(void) {
  test_require_weft_lib();
  setenv("NCCL_DEBUG", "NONE", 1);
  weft_log_reset();
  uint64_t rng = test_seed(0x7e57c0de);
  int chosen = 0, refused = 0;
  for (int it = 0; it < 200000; it++) {
    weft_algo_proto_mask m;
    for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) {
      m.algo[f] = (unsigned)test_rand(&rng) & 0x7fu;
      m.proto[f] = (unsigned)test_rand(&rng) & 0x7u;
    }
    weft_exec_caps caps;
    caps.algos = (test_rand(&rng) & 3) ? ((1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE))
                                       : (unsigned)test_rand(&rng) & 0x7fu;
    caps.protos = (test_rand(&rng) & 3) ? (unsigned)test_rand(&rng) & 0x7u : 0x7u;
    caps.max_channels = 1 + (int)(test_rand(&rng) % 32);
    ncclFunc_t func = (ncclFunc_t)(test_rand(&rng) % WEFT_NUM_COLL_FUNCS);
    size_t nbytes = (size_t)(test_rand(&rng) % (1ull << (test_rand(&rng) % 34)));
    int nranks = 1 + (int)(test_rand(&rng) % 300);
    int nnodes = 1 + (int)(test_rand(&rng) % (unsigned)nranks);
    weft_tune_facts f;
    if (test_rand(&rng) & 1)
      tune_facts_host(&f, nranks, nnodes, (int)(test_rand(&rng) & 1), caps.max_channels,
                      1 + (int)(test_rand(&rng) % 8), 1.0 + (double)(test_rand(&rng) % 4));
    else
      tune_facts_device(&f, nranks, nnodes, (int)(test_rand(&rng) & 1),
                        (int)(test_rand(&rng) % 4), caps.max_channels);
    ncclTunerConstants_v5_t k;
    weft_tune_host_bw hb;
    tune_constants_default(&f, &k);
    tune_host_bw_default(&f, &hb);
    weft_tune_model model;
    tune_model_init(&model, &f, &k, &hb);
    unsigned algos = m.algo[func] & caps.algos & applicable[func];
    unsigned protos = m.proto[func] & caps.protos;

    /* Both models run Ring, Tree and PAT (of NCCL's seven; PAT: weft's log-step AllGather and
     * ReduceScatter, up to WEFT_LOG_MAX_RANKS on the host, WEFT_LOG_DEV_MAX_RANKS on
     * devices); the host one no LL128. */
    int log_max = f.host ? WEFT_LOG_MAX_RANKS : WEFT_LOG_DEV_MAX_RANKS;
    algos &= (1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE) |
             (f.nranks <= log_max ? 1u << NCCL_ALGO_PAT : 0u);
    if (f.host) protos &= ~(1u << NCCL_PROTO_LL128);
    weft_choice c = {-7, -7, -7};
    double pred = -7;
    ncclResult_t r = tune_choose(&model, &m, &caps, func, nbytes, &c, &pred);
    if (usable(algos, protos)) {
      if (r != ncclSuccess) {
        fprintf(stderr, "it %d: %s refused with algos 0x%x protos 0x%x\n", it,
                tune_func_name(func), algos, protos);
        return 1;
      }
      EXPECT(c.algo >= 0 && c.algo < NCCL_NUM_ALGORITHMS && (algos & (1u << c.algo)));
      EXPECT(c.proto >= 0 && c.proto < NCCL_NUM_PROTOCOLS && (protos & (1u << c.proto)));
      if (c.algo == NCCL_ALGO_TREE) EXPECT_EQ_INT(func, ncclFuncAllReduce);
      if (c.algo != NCCL_ALGO_RING && c.algo != NCCL_ALGO_TREE && c.algo != NCCL_ALGO_PAT)
        EXPECT_EQ_INT(c.proto, NCCL_PROTO_SIMPLE);
      EXPECT(c.nchannels >= 1 && c.nchannels <= caps.max_channels);
      EXPECT(pred >= 0 && pred < 1e12);
      chosen++;
    } else {
      EXPECT_RES(r, ncclInvalidUsage);
      EXPECT(c.algo == -7 && c.proto == -7 && c.nchannels == -7); /* untouched */
      char last[1024];
      weft_log_last_error(last, sizeof last);
      if (strstr(last, tune_func_name(func)) == NULL || strstr(last, "NCCL_ALGO") == NULL ||
          strstr(last, "NCCL_PROTO") == NULL) {
        fprintf(stderr, "WARN \"%s\" should name %s and the settings\n", last,
                tune_func_name(func));
        return 1;
      }
      refused++;
    }
  }
  EXPECT(chosen > 1000 && refused > 1000);

  /* The model's shape with host caps and everything allowed. */
  weft_algo_proto_mask all;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  weft_exec_caps host = {(1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE),
                         (1u << NCCL_PROTO_LL) | (1u << NCCL_PROTO_SIMPLE), 4};
  weft_tune_facts f;
  ncclTunerConstants_v5_t k;
  weft_tune_host_bw hb;
  weft_tune_model m8;
  tune_facts_host(&f, 8, 1, 1, 4, 4, 1.0);
  tune_constants_default(&f, &k);
  tune_host_bw_default(&f, &hb);
  tune_model_init(&m8, &f, &k, &hb);
  weft_choice c;
  EXPECT_OK(tune_choose(&m8, &all, &host, ncclFuncAllReduce, 8, &c, NULL));
  EXPECT_EQ_INT(c.nchannels, 1);
  EXPECT_OK(tune_choose(&m8, &all, &host, ncclFuncAllReduce, 256u << 20, &c, NULL));
  EXPECT_EQ_INT(c.nchannels, 4);
  EXPECT_EQ_INT(c.proto, NCCL_PROTO_SIMPLE);
  /* Never Tree outside AllReduce, even when it is the only algorithm asked for. */
  weft_algo_proto_mask tree_only;
  EXPECT_OK(tune_parse_masks("tree", NULL, &tree_only));
  EXPECT_RES(tune_choose(&m8, &tree_only, &host, ncclFuncBroadcast, 1024, &c, NULL),
             ncclInvalidUsage);
  EXPECT_OK(tune_choose(&m8, &tree_only, &host, ncclFuncAllReduce, 1024, &c, NULL));
  EXPECT_EQ_INT(c.algo, NCCL_ALGO_TREE);
  /* One rank: Ring/Simple when allowed. */
  weft_tune_model m1;
  tune_facts_host(&f, 1, 1, 1, 4, 4, 1.0);
  tune_model_init(&m1, &f, &k, &hb);
  EXPECT_OK(tune_choose(&m1, &all, &host, ncclFuncAllGather, 1u << 20, &c, NULL));
  EXPECT(c.algo == NCCL_ALGO_RING && c.proto == NCCL_PROTO_SIMPLE);
  /* Only LL128 asked for on an executor without it. */
  weft_algo_proto_mask ll128;
  EXPECT_OK(tune_parse_masks(NULL, "LL128", &ll128));
  EXPECT_RES(tune_choose(&m8, &ll128, &host, ncclFuncAllReduce, 1024, &c, NULL),
             ncclInvalidUsage);
  /* Bad arguments. */
  EXPECT_RES(tune_choose(&m8, &all, &host, ncclFuncSendRecv, 1024, &c, NULL), ncclInvalidArgument);
  EXPECT_RES(tune_choose(NULL, &all, &host, ncclFuncAllReduce, 1024, &c, NULL),
             ncclInvalidArgument);
  return 0;
}
