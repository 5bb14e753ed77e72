/* weft's logarithmic algorithms (RecDoubling, Rabenseifner, Binomial; the log-step AllGather and
 * ReduceScatter in NCCL's PAT slot, named Bruck and RecHalving) in tune/: NCCL_ALGO names them
 * with NCCL's grammar ('^' included, per-collective lists, the PAT aliases); a forced one is
 * what runs on either executor for the collectives it implements, and elsewhere is NCCL's "no
 * algorithm left" error (ncclInvalidUsage naming NCCL_ALGO); the device rule picks one only
 * where NCCL_ALGO leaves nothing else; the host model picks by size and rank count (a log
 * algorithm for a small AllReduce on 4+ ranks, the ring for a large one); a tuner sees the
 * log-step AllGather in the PAT row of NCCL's seven, and weft's rows when it exports
 * weftTunerAlgorithms (9 or 12).
 * WEFT_TUNE_LOG_PRINT=1 prints the host model's choices per size and rank count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tune/tune.h"
#include "util/log.h"
#include "weft.h"

#define RD (1u << WEFT_ALGO_RECDOUBLING_ID)
#define RAB (1u << WEFT_ALGO_RABENSEIFNER_ID)
#define BIN (1u << WEFT_ALGO_BINOMIAL_ID)
#define PAT (1u << NCCL_ALGO_PAT)
#define RING (1u << NCCL_ALGO_RING)
#define TREE (1u << NCCL_ALGO_TREE)
#define ALL_ALGOS ((1u << WEFT_NUM_ALGORITHMS) - 1)

static void grammar(void) {
  weft_algo_proto_mask m;
  EXPECT(strcmp(tune_algo_name(WEFT_ALGO_RECDOUBLING_ID), "RecDoubling") == 0);
  EXPECT(strcmp(tune_algo_name(WEFT_ALGO_RABENSEIFNER_ID), "Rabenseifner") == 0);
  EXPECT(strcmp(tune_algo_name(WEFT_ALGO_BINOMIAL_ID), "Binomial") == 0);
  EXPECT(strcmp(tune_algo_name_for(ncclFuncAllGather, NCCL_ALGO_PAT), "PAT(Bruck)") == 0);
  EXPECT(strcmp(tune_algo_name_for(ncclFuncReduceScatter, NCCL_ALGO_PAT), "PAT(RecHalving)") == 0);
  EXPECT(strcmp(tune_algo_name_for(ncclFuncAllReduce, NCCL_ALGO_RING), "Ring") == 0);
  EXPECT_OK(tune_parse_masks("recdoubling", NULL, &m));
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) EXPECT_EQ_INT(m.algo[f], RD);
  EXPECT_OK(tune_parse_masks("bruck", NULL, &m));
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) EXPECT_EQ_INT(m.algo[f], PAT);
  EXPECT_OK(tune_parse_masks("AllReduce:Rabenseifner,Ring;AllGather:Bruck;ReduceScatter:RecHalving;"
                             "Broadcast:Binomial;Reduce:^Binomial",
                             NULL, &m));
  EXPECT_EQ_INT(m.algo[ncclFuncAllReduce], RAB | RING);
  EXPECT_EQ_INT(m.algo[ncclFuncAllGather], PAT);
  EXPECT_EQ_INT(m.algo[ncclFuncReduceScatter], PAT);
  EXPECT_EQ_INT(m.algo[ncclFuncBroadcast], BIN);
  EXPECT_EQ_INT(m.algo[ncclFuncReduce], ALL_ALGOS & ~BIN);
  EXPECT_OK(tune_parse_masks("^RecDoubling,Rabenseifner,Bruck", NULL, &m));
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++)
    EXPECT_EQ_INT(m.algo[f], ALL_ALGOS & ~(RD | RAB | PAT));
  EXPECT_RES(tune_parse_masks("RecTripling", NULL, &m), ncclInvalidUsage);
  EXPECT_RES(tune_parse_masks("AllReduce:", NULL, &m), ncclInvalidUsage);
  char buf[160];
  tune_format_mask(buf, sizeof buf, RD | RAB | BIN | RING, 0);
  EXPECT(strcmp(buf, "Ring,RecDoubling,Rabenseifner,Binomial") == 0);
}

static void state(weft_tune* t, const weft_tune_facts* f) {
  memset(t, 0, sizeof *t);
  ncclTunerConstants_v5_t k;
  weft_tune_host_bw hb;
  tune_constants_default(f, &k);
  tune_host_bw_default(f, &hb);
  tune_model_init(&t->model, f, &k, &hb);
  unsigned protos = (1u << NCCL_PROTO_LL) | (1u << NCCL_PROTO_SIMPLE) |
                    (f->host ? 0u : 1u << NCCL_PROTO_LL128);
  /* As tune_comm.c: both executors run the log algorithms. */
  unsigned algos = RING | TREE | (1u << WEFT_ALGO_ONESHOT_ID) | (1u << WEFT_ALGO_TWOSHOT_ID) |
                   RD | RAB | BIN | PAT;
  t->caps = (weft_exec_caps){algos, protos, f->max_channels};
}

static unsigned implements(int algo) {
  switch (algo) {
    case WEFT_ALGO_RECDOUBLING_ID:
    case WEFT_ALGO_RABENSEIFNER_ID: return 1u << ncclFuncAllReduce;
    case WEFT_ALGO_BINOMIAL_ID: return (1u << ncclFuncBroadcast) | (1u << ncclFuncReduce);
    default: return (1u << ncclFuncAllGather) | (1u << ncclFuncReduceScatter);
  }
}

/* Forced, 1..WEFT_LOG_MAX_RANKS+1 ranks on the host, 1..WEFT_LOG_DEV_MAX_RANKS+1 and beyond on
 * the device (whose work item holds the roles of 128 ranks). */
static void forced(void) {
  const char* names[] = {"RecDoubling", "Rabenseifner", "Binomial", "Bruck", "RecHalving"};
  const int ids[] = {WEFT_ALGO_RECDOUBLING_ID, WEFT_ALGO_RABENSEIFNER_ID, WEFT_ALGO_BINOMIAL_ID,
                     NCCL_ALGO_PAT, NCCL_ALGO_PAT};
  const int ns[] = {1,   2,   3,   5,    8,    9, 16, 100, WEFT_LOG_DEV_MAX_RANKS,
                    WEFT_LOG_DEV_MAX_RANKS + 1, 1024, 4097, WEFT_LOG_MAX_RANKS,
                    WEFT_LOG_MAX_RANKS + 1};
  for (int host = 0; host < 2; host++)
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
      int n = ns[ni];
      weft_tune_facts f;
      if (host)
        tune_facts_host(&f, n, 1, 1, 32, 2, 1.0);
      else
        tune_facts_device(&f, n, 1, 1, 2, 32);
      weft_tune t;
      state(&t, &f);
      for (int a = 0; a < 5; a++) {
        weft_algo_proto_mask m;
        EXPECT_OK(tune_parse_masks(names[a], NULL, &m));
        for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++)
          for (size_t nbytes = 8; nbytes <= (64u << 20); nbytes *= 64) {
            weft_decision d;
            weft_log_reset();
            /* The device executor decides through tune_op (its rule, then the model's table). */
            weft_tune_ask ask = {.rank = 0, .nranks = n, .device = !host, .max_channels = 32,
                                 .all_p2p = 1, .quiet = 1, .mask = &m};
            weft_op_choice oc;
            ncclResult_t r = host ? tune_decide(&t, &m, (ncclFunc_t)fn, nbytes, 1, 0, 1, &d)
                                  : tune_op(&t, &ask, fn, nbytes, &oc);
            if (!host && r == ncclSuccess)
              d = (weft_decision){.algo = oc.algo, .proto = oc.proto, .nchannels = oc.nchannels};
            int runs = n <= (host ? WEFT_LOG_MAX_RANKS : WEFT_LOG_DEV_MAX_RANKS) &&
                       ((implements(ids[a]) >> fn) & 1);
            if (!runs) {
              EXPECT_EQ_INT(r, ncclInvalidUsage);
              char last[1024];
              weft_log_last_error(last, sizeof last);
              EXPECT(strstr(last, "NCCL_ALGO") != NULL);
              EXPECT(strstr(last, tune_func_name(fn)) != NULL);
              continue;
            }
            EXPECT_OK(r);
            EXPECT_EQ_INT(d.algo, ids[a]);
            EXPECT(!host || d.proto != NCCL_PROTO_LL128);
            EXPECT(d.nchannels >= 1 && d.nchannels <= WEFT_DIRECT_MAX_CHANNELS);
            EXPECT(d.predicted_us >= 0);
          }
      }
    }
}

static int pick(weft_tune* t, ncclFunc_t fn, size_t nbytes) {
  weft_algo_proto_mask all;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  weft_decision d;
  EXPECT_OK(tune_decide(t, &all, fn, nbytes, 1, 0, 1, &d));
  return d.algo;
}

/* The host model on one 16-core node: small AllReduce on 4+ ranks goes logarithmic, a large one
 * stays on the ring (or Rabenseifner, whose bandwidth term is the ring's); small Broadcast on
 * 8 ranks is Binomial; the log-step AllGather wins small messages on 8 ranks. */
static void model_shape(void) {
  const int ns[] = {2, 3, 4, 8, 16};
  int print = getenv("WEFT_TUNE_LOG_PRINT") != NULL;
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    weft_tune_facts f;
    tune_facts_host(&f, ns[i], 1, 1, 4, 1, 1.0);
    weft_tune t;
    state(&t, &f);
    for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS && print; fn++) {
      printf("%-13s %2d ranks:", tune_func_name(fn), ns[i]);
      for (size_t b = 1024; b <= (64u << 20); b *= 8)
        printf(" %zuK %s", b >> 10, tune_algo_name_for(fn, pick(&t, (ncclFunc_t)fn, b)));
      printf("\n");
    }
    if (ns[i] >= 4) {
      int a = pick(&t, ncclFuncAllReduce, 1024);
      EXPECT(a == WEFT_ALGO_RECDOUBLING_ID || a == WEFT_ALGO_RABENSEIFNER_ID);
    }
    double rd_small = tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_RECDOUBLING_ID,
                                      NCCL_PROTO_SIMPLE, 1024, 1, 1);
    double ring_small = tune_model_time(&t.model, ncclFuncAllReduce, NCCL_ALGO_RING,
                                        NCCL_PROTO_SIMPLE, 1024, 1, 1);
    double rd_big = tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_RECDOUBLING_ID,
                                    NCCL_PROTO_SIMPLE, 64u << 20, 1, 1);
    double rab_big = tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_RABENSEIFNER_ID,
                                     NCCL_PROTO_SIMPLE, 64u << 20, 1, 1);
    EXPECT(rd_small > 0 && rd_small <= ring_small);
    if (ns[i] >= 4) EXPECT(rab_big < rd_big); /* recursive doubling moves the buffer log n times */
    EXPECT(pick(&t, ncclFuncAllReduce, 64u << 20) != WEFT_ALGO_RECDOUBLING_ID || ns[i] == 2);
    if (ns[i] >= 8) {
      EXPECT_EQ_INT(pick(&t, ncclFuncBroadcast, 1024), WEFT_ALGO_BINOMIAL_ID);
      EXPECT_EQ_INT(pick(&t, ncclFuncAllGather, 1024 * ns[i]), NCCL_ALGO_PAT);
    }
  }
  /* Beyond WEFT_LOG_MAX_RANKS: not usable. */
  weft_tune_facts f;
  tune_facts_host(&f, WEFT_LOG_MAX_RANKS + 1, 1, 1, 4, 1, 1.0);
  weft_tune t;
  state(&t, &f);
  EXPECT(tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_RECDOUBLING_ID,
                         NCCL_PROTO_SIMPLE, 1024, 1, 1) < 0);
  EXPECT(tune_model_time(&t.model, ncclFuncAllGather, NCCL_ALGO_PAT, NCCL_PROTO_SIMPLE, 1024, 1,
                         1) < 0);
  tune_facts_device(&f, WEFT_LOG_DEV_MAX_RANKS + 1, 1, 1, 2, 32); /* nor on devices beyond 128 */
  state(&t, &f);
  EXPECT(tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_RECDOUBLING_ID,
                         NCCL_PROTO_SIMPLE, 1024, 1, 1) < 0);
  /* The device executor: its rows hold an estimate, but its rule picks a log algorithm only
   * where NCCL_ALGO leaves nothing else; RecDoubling small and Rabenseifner large when both. */
  tune_facts_device(&f, 8, 1, 1, 2, 32);
  state(&t, &f);
  EXPECT(tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_RABENSEIFNER_ID,
                         NCCL_PROTO_LL128, 1024, 1, 1) > 0);
  weft_algo_proto_mask all, logs;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  EXPECT_OK(tune_parse_masks("AllReduce:RecDoubling,Rabenseifner", NULL, &logs));
  for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++)
    for (size_t nbytes = 8; nbytes <= (1u << 30); nbytes *= 16) {
      weft_tune_ask ask = {.rank = 0, .nranks = 8, .device = 1, .max_channels = 32,
                           .all_p2p = 1, .quiet = 1, .mask = &all};
      weft_op_choice oc;
      EXPECT_OK(tune_op(&t, &ask, fn, nbytes, &oc));
      EXPECT(!(((RD | RAB | BIN | PAT) >> oc.algo) & 1));
      if (fn != ncclFuncAllReduce) continue;
      ask.mask = &logs;
      EXPECT_OK(tune_op(&t, &ask, fn, nbytes, &oc));
      EXPECT_EQ_INT(oc.algo,
                    nbytes <= 65536 ? WEFT_ALGO_RECDOUBLING_ID : WEFT_ALGO_RABENSEIFNER_ID);
    }
}

/* A tuner: NCCL's seven rows hold the log-step AllGather as PAT; the extension's rows. */
static int rows_seen;
static ncclResult_t get_coll_info(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe_ops,
                                  float** table, int nalgo, int nproto, int reg_buff, int* nch) {
  (void)ctx, (void)nbytes, (void)pipe_ops, (void)nproto, (void)reg_buff, (void)nch;
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  rows_seen = nalgo;
  int want = coll == ncclFuncAllGather ? NCCL_ALGO_PAT : nalgo - 1; /* Binomial at 12 rows */
  if (want < nalgo && cost[want][NCCL_PROTO_SIMPLE] >= 0) cost[want][NCCL_PROTO_SIMPLE] = 0.0f;
  return ncclSuccess;
}

static ncclResult_t fake_init(void** ctx, uint64_t id, size_t nr, size_t nn, ncclDebugLogger_t l,
                              ncclNvlDomainInfo_v5_t* nvl, ncclTunerConstants_v5_t* k) {
  (void)ctx, (void)id, (void)nr, (void)nn, (void)l, (void)nvl, (void)k;
  return ncclSuccess;
}
static ncclResult_t fake_fini(void* ctx) {
  (void)ctx;
  return ncclSuccess;
}
static const ncclTuner_v6_t fake_api = {"log-test", fake_init, get_coll_info, fake_fini, NULL};

static void tuner_slots(void) {
  weft_tune_facts f;
  tune_facts_host(&f, 8, 1, 1, 4, 1, 1.0);
  weft_tune t;
  state(&t, &f);
  weft_tuner tu = {&fake_api, NULL, "log-test", "in-process", 5, NCCL_NUM_ALGORITHMS};
  t.tuner = &tu;
  weft_algo_proto_mask all;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  weft_decision d;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllGather, 1u << 26, 1, 0, 1, &d));
  EXPECT_EQ_INT(rows_seen, NCCL_NUM_ALGORITHMS);
  EXPECT(d.algo == NCCL_ALGO_PAT && d.proto == NCCL_PROTO_SIMPLE);
  /* i17d's nine rows still work; twelve reach Binomial. */
  tu.algo_rows = 9;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncBroadcast, 1u << 26, 1, 0, 1, &d));
  EXPECT_EQ_INT(rows_seen, 9);
  EXPECT(!d.by_tuner); /* row 8 (TwoShot) has no Broadcast: the table is left as it was */
  tu.algo_rows = WEFT_NUM_ALGORITHMS;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncBroadcast, 1u << 26, 1, 0, 1, &d));
  EXPECT_EQ_INT(rows_seen, WEFT_NUM_ALGORITHMS);
  EXPECT(d.algo == WEFT_ALGO_BINOMIAL_ID && d.by_tuner);
}

/* At scale (issue 46): the host rule, evaluated without ranks, picks a log-depth algorithm for
 * an 8-byte AllReduce at 256, 1024 and 4096 ranks (one node oversubscribed as on CI's 2 cores,
 * one node with a core per rank, and 8 ranks per node over the net) and the ring for 1 GiB;
 * the pick's sequential steps stay within 2*ceil(log2 n) + 4. */
static void at_scale(void) {
  const int ns[] = {256, 1024, 4096};
  int print = getenv("WEFT_TUNE_LOG_PRINT") != NULL;
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
    for (int shape = 0; shape < 3; shape++) {
      int n = ns[i], nodes = shape == 2 ? n / 8 : 1;
      weft_tune_facts f;
      tune_facts_host(&f, n, nodes, 1, 4, shape == 0 ? 1 : 2,
                      shape == 0 ? (double)n / 2 : 1.0);
      weft_tune t;
      state(&t, &f);
      int small = pick(&t, ncclFuncAllReduce, 8), big = pick(&t, ncclFuncAllReduce, 1u << 30);
      if (print)
        printf("AllReduce %4d ranks, %4d node(s), shape %d: 8 B %s, 1 GiB %s\n", n, nodes, shape,
               tune_algo_name(small), tune_algo_name(big));
      EXPECT(small == WEFT_ALGO_RECDOUBLING_ID || small == WEFT_ALGO_RABENSEIFNER_ID);
      int c = 0;
      while ((1 << c) < n) c++;
      int m = 1, L = 0;
      while (2 * m <= n) m *= 2, L++;
      int rounds = small == WEFT_ALGO_RECDOUBLING_ID ? L + 2 * (n != m) : 2 * L + 2 * (n != m);
      EXPECT(rounds <= 2 * c + 4);
      EXPECT_EQ_INT(big, NCCL_ALGO_RING);
    }
}

int main(void) {
  test_require_weft_lib();
  setenv("NCCL_DEBUG", "NONE", 1);
  grammar();
  forced();
  model_shape();
  tuner_slots();
  at_scale();
  printf("log algorithms: grammar, forced choices, host model, tuner slots: ok\n");
  return 0;
}
