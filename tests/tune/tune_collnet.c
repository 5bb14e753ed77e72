/* CollNetChain in tune/: the host model prices it only where the facts say CollNet is usable
 * (collnet_ppn > 0), on one channel, Simple only; the model picks it for small AllReduce across
 * hosts and leaves it for large ones; tune_op never runs it for a (type, operator) pair the
 * plugin does not claim, nor without a usable plugin, and an NCCL_ALGO that allowed only CollNet
 * falls back to the model's choice there (CollNetDirect, which weft does not run, too). A tuner
 * plugin (an in-process fake of the v6 view) sees the CollNetChain cell and may pick it where
 * the model would not; where the pair is unclaimed the cell is NCCL_ALGO_PROTO_IGNORE, so a
 * tuner that writes it is not obeyed. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "tune/tune.h"

#define CHAIN (1u << NCCL_ALGO_COLLNET_CHAIN)

/* A tuner that makes CollNetChain/Simple free. */
static float seen_chain; /* the cell as the tuner found it */
static ncclResult_t chain_get(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe, float** table,
                              int na, int np, int reg, int* nch) {
  (void)ctx, (void)coll, (void)nbytes, (void)pipe, (void)na, (void)np, (void)reg, (void)nch;
  float(*t)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  seen_chain = t[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE];
  t[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] = 0;
  return ncclSuccess;
}
static ncclResult_t chain_init(void** ctx, uint64_t id, size_t nr, size_t nn, ncclDebugLogger_t l,
                               ncclNvlDomainInfo_v5_t* nvl, ncclTunerConstants_v5_t* k) {
  (void)ctx, (void)id, (void)nr, (void)nn, (void)l, (void)nvl, (void)k;
  return ncclSuccess;
}
static ncclResult_t chain_fini(void* ctx) {
  (void)ctx;
  return ncclSuccess;
}
static const ncclTuner_v6_t chain_api = {"chain", chain_init, chain_get, chain_fini, NULL};

static void state(weft_tune* t, int nranks, int nnodes, int collnet_ppn, uint64_t pairs) {
  memset(t, 0, sizeof *t);
  weft_tune_facts f;
  tune_facts_host(&f, nranks, nnodes, 1, 4, 2, 1.0);
  f.collnet_ppn = collnet_ppn;
  ncclTunerConstants_v5_t k;
  weft_tune_host_bw hb;
  tune_constants_default(&f, &k);
  tune_host_bw_default(&f, &hb);
  tune_model_init(&t->model, &f, &k, &hb);
  t->caps = (weft_exec_caps){(1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE) |
                                 (1u << WEFT_ALGO_RECDOUBLING_ID) |
                                 (collnet_ppn ? CHAIN : 0u),
                             (1u << NCCL_PROTO_LL) | (1u << NCCL_PROTO_SIMPLE), 4};
  t->collnet_pairs = pairs;
}

static weft_op_choice ask(weft_tune* t, const weft_algo_proto_mask* m, int nranks, int dtype,
                          int redop, size_t nbytes) {
  weft_tune_ask a = {.rank = 0, .nranks = nranks, .max_channels = 4, .mask = m, .quiet = 1,
                     .dtype = dtype, .redop = redop};
  weft_op_choice c;
  EXPECT_OK(tune_op(t, &a, ncclFuncAllReduce, nbytes, &c));
  return c;
}

int main(void) {
  weft_algo_proto_mask all, forced, direct;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  EXPECT_OK(tune_parse_masks("AllReduce:CollNetChain", NULL, &forced));
  EXPECT_OK(tune_parse_masks("AllReduce:CollNetDirect", NULL, &direct));
  const uint64_t float_sum = 1ull << (ncclFloat32 * ncclNumOps + ncclSum);
  const uint64_t int_max = 1ull << (ncclInt32 * ncclNumOps + ncclMax);

  /* Facts without CollNet: its cells stay unusable whatever the size. */
  weft_tune t;
  state(&t, 4, 2, 0, 0);
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
    EXPECT(tune_model_time(&t.model, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN, p, 8, 1, 1) < 0);
  for (size_t n = 8; n <= (64u << 20); n *= 8) {
    weft_op_choice c = ask(&t, &all, 4, ncclFloat32, ncclSum, n);
    EXPECT(c.algo != NCCL_ALGO_COLLNET_CHAIN);
    c = ask(&t, &forced, 4, ncclFloat32, ncclSum, n); /* forced, none: the model's choice */
    EXPECT(c.algo != NCCL_ALGO_COLLNET_CHAIN && c.nchannels >= 1);
  }

  /* 2 hosts x 2 ranks with CollNet for float32 sum and int32 max. */
  state(&t, 4, 2, 2, float_sum | int_max);
  EXPECT(tune_model_time(&t.model, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE,
                         8, 1, 1) > 0);
  EXPECT(tune_model_time(&t.model, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_LL, 8,
                         1, 1) < 0);
  EXPECT(tune_model_time(&t.model, ncclFuncAllGather, NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE,
                         8, 1, 1) < 0);
  weft_op_choice c = ask(&t, &all, 4, ncclFloat32, ncclSum, 8);
  EXPECT_EQ_INT(c.algo, NCCL_ALGO_COLLNET_CHAIN);
  EXPECT_EQ_INT(c.proto, NCCL_PROTO_SIMPLE);
  EXPECT_EQ_INT(c.nchannels, 1);
  EXPECT_EQ_INT(ask(&t, &all, 4, ncclInt32, ncclMax, 8).algo, NCCL_ALGO_COLLNET_CHAIN);
  c = ask(&t, &all, 4, ncclFloat32, ncclSum, 1u << 30); /* the ring's bandwidth wins */
  EXPECT(c.algo != NCCL_ALGO_COLLNET_CHAIN);
  /* Unclaimed pairs and operators with pre/post steps: never, forced or not. */
  const int unclaimed[][2] = {{ncclFloat32, ncclMax}, {ncclFloat16, ncclSum},
                              {ncclFloat32, ncclAvg}, {ncclInt32, ncclSum},
                              {ncclFloat32, ncclNumOps}, {-1, -1}};
  for (size_t i = 0; i < sizeof unclaimed / sizeof *unclaimed; i++)
    for (size_t n = 8; n <= (1u << 20); n *= 32) {
      EXPECT(ask(&t, &all, 4, unclaimed[i][0], unclaimed[i][1], n).algo != NCCL_ALGO_COLLNET_CHAIN);
      c = ask(&t, &forced, 4, unclaimed[i][0], unclaimed[i][1], n);
      EXPECT(c.algo != NCCL_ALGO_COLLNET_CHAIN && c.nchannels >= 1);
    }
  /* Forced where it can run: CollNet at every size, one channel. */
  for (size_t n = 8; n <= (64u << 20); n *= 8) {
    c = ask(&t, &forced, 4, ncclFloat32, ncclSum, n);
    EXPECT_EQ_INT(c.algo, NCCL_ALGO_COLLNET_CHAIN);
    EXPECT_EQ_INT(c.nchannels, 1);
  }
  /* CollNetDirect alone: not weft's; the model's choice runs instead. */
  c = ask(&t, &direct, 4, ncclFloat32, ncclSum, 8);
  EXPECT(c.algo != NCCL_ALGO_COLLNET_DIRECT && c.nchannels >= 1);
  /* A tuner picks it at 1 GiB, where the model would not; not for an unclaimed pair. */
  weft_tuner tu = {&chain_api, NULL, "chain", "in-process", 6, NCCL_NUM_ALGORITHMS};
  t.tuner = &tu;
  c = ask(&t, &all, 4, ncclFloat32, ncclSum, 1u << 30);
  EXPECT_EQ_INT(c.algo, NCCL_ALGO_COLLNET_CHAIN);
  EXPECT_EQ_INT(c.nchannels, 1);
  EXPECT(seen_chain > 0);
  c = ask(&t, &all, 4, ncclFloat16, ncclSum, 1u << 30);
  EXPECT(c.algo != NCCL_ALGO_COLLNET_CHAIN);
  EXPECT(seen_chain == (float)NCCL_ALGO_PROTO_IGNORE);
  t.tuner = NULL;
  /* The same facts without pairs (every rank's plugin must agree on one at least). */
  state(&t, 4, 2, 2, 0);
  t.caps.algos &= ~CHAIN;
  EXPECT(ask(&t, &all, 4, ncclFloat32, ncclSum, 8).algo != NCCL_ALGO_COLLNET_CHAIN);
  printf("tune_collnet: ok\n");
  return 0;
}
