/* weft's direct algorithms (OneShot, TwoShot) in tune/: NCCL_ALGO names them with NCCL's grammar
 * ('^' included, per-collective lists); the model costs them on 1..8 ranks and never beyond; a
 * forced one is what runs, for the collectives it implements; a tuner plugin sees NCCL's seven
 * rows: one that edits them picks among them (Ring obeyed even where the model prefers OneShot),
 * one that leaves them leaves the model's choice (OneShot included); a tuner that exports
 * weftTunerAlgorithms gets nine rows and may pick TwoShot. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "tune/tune.h"
#include "weft.h"

#define ONE (1u << WEFT_ALGO_ONESHOT_ID)
#define TWO (1u << WEFT_ALGO_TWOSHOT_ID)
#define RING (1u << NCCL_ALGO_RING)
#define TREE (1u << NCCL_ALGO_TREE)
#define ALL_ALGOS ((1u << WEFT_NUM_ALGORITHMS) - 1)

static void grammar(void) {
  weft_algo_proto_mask m;
  EXPECT(strcmp(tune_algo_name(WEFT_ALGO_ONESHOT_ID), "OneShot") == 0);
  EXPECT(strcmp(tune_algo_name(WEFT_ALGO_TWOSHOT_ID), "TwoShot") == 0);
  EXPECT(strcmp(tune_algo_name(WEFT_NUM_ALGORITHMS), "Unknown") == 0);
  EXPECT_OK(tune_parse_masks("oneshot", NULL, &m));
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) EXPECT_EQ_INT(m.algo[f], ONE);
  EXPECT_OK(tune_parse_masks("^OneShot, TwoShot", NULL, &m));
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) EXPECT_EQ_INT(m.algo[f], ALL_ALGOS & ~(ONE | TWO));
  EXPECT_OK(tune_parse_masks("^Ring", NULL, &m));
  EXPECT_EQ_INT(m.algo[ncclFuncAllReduce], ALL_ALGOS & ~RING);
  EXPECT_OK(tune_parse_masks("Ring;AllReduce:TwoShot,Tree;Broadcast:^Ring", NULL, &m));
  EXPECT_EQ_INT(m.algo[ncclFuncAllReduce], TWO | TREE);
  EXPECT_EQ_INT(m.algo[ncclFuncBroadcast], ALL_ALGOS & ~RING);
  EXPECT_EQ_INT(m.algo[ncclFuncAllGather], RING);
  EXPECT_RES(tune_parse_masks("ThreeShot", NULL, &m), ncclInvalidUsage);
  char buf[128];
  tune_format_mask(buf, sizeof buf, ONE | TWO | RING, 0);
  EXPECT(strcmp(buf, "Ring,OneShot,TwoShot") == 0);
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
  t->caps = (weft_exec_caps){RING | TREE | ONE | TWO, protos, f->max_channels};
}

/* Forced: what runs, on every collective it implements, host and device, 1..8 ranks; none
 * beyond 8 ranks; at most WEFT_DIRECT_MAX_CHANNELS channels. */
static void forced(void) {
  weft_algo_proto_mask one, two;
  EXPECT_OK(tune_parse_masks("OneShot", NULL, &one));
  EXPECT_OK(tune_parse_masks("TwoShot", NULL, &two));
  for (int host = 0; host < 2; host++)
    for (int n = 1; n <= 9; n++) {
      weft_tune_facts f;
      if (host)
        tune_facts_host(&f, n, 1, 1, 32, 2, 1.0);
      else
        tune_facts_device(&f, n, 1, 1, 2, 32);
      weft_tune t;
      state(&t, &f);
      for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++)
        for (size_t nbytes = 8; nbytes <= (64u << 20); nbytes *= 64) {
          weft_decision d;
          ncclResult_t r = tune_decide(&t, &one, (ncclFunc_t)fn, nbytes, 1, 0, 1, &d);
          if (n > WEFT_DIRECT_MAX_RANKS) {
            EXPECT_EQ_INT(r, ncclInvalidUsage);
          } else {
            EXPECT_OK(r);
            EXPECT_EQ_INT(d.algo, WEFT_ALGO_ONESHOT_ID);
            EXPECT(d.nchannels >= 1 && d.nchannels <= WEFT_DIRECT_MAX_CHANNELS);
            EXPECT(d.predicted_us >= 0);
          }
          r = tune_decide(&t, &two, (ncclFunc_t)fn, nbytes, 1, 0, 1, &d);
          if (n > WEFT_DIRECT_MAX_RANKS || fn != ncclFuncAllReduce) {
            EXPECT_EQ_INT(r, ncclInvalidUsage); /* TwoShot is an AllReduce */
          } else {
            EXPECT_OK(r);
            EXPECT_EQ_INT(d.algo, WEFT_ALGO_TWOSHOT_ID);
          }
        }
    }
}

/* The model on 8 NVLink GPUs: OneShot for a small AllReduce (one link crossing against 14 ring
 * steps), never for a large one (each rank sends its buffer 7 times); TwoShot between. */
static void model_shape(void) {
  weft_tune_facts f;
  tune_facts_device(&f, 8, 1, 1, 2, 32);
  weft_tune t;
  state(&t, &f);
  weft_algo_proto_mask all;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  weft_decision d;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &d));
  EXPECT_EQ_INT(d.algo, WEFT_ALGO_ONESHOT_ID);
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 1u << 30, 1, 0, 1, &d));
  EXPECT(d.algo != WEFT_ALGO_ONESHOT_ID);
  double one_small = tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_ONESHOT_ID,
                                     NCCL_PROTO_LL, 1024, 1, 1);
  double ring_small = tune_model_time(&t.model, ncclFuncAllReduce, NCCL_ALGO_RING,
                                      NCCL_PROTO_LL, 1024, 1, 1);
  double two_small = tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_TWOSHOT_ID,
                                     NCCL_PROTO_LL, 1024, 1, 1);
  EXPECT(one_small > 0 && one_small < two_small && two_small < ring_small);
  double one_big = tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_ONESHOT_ID,
                                   NCCL_PROTO_SIMPLE, 1u << 30, 8, 1);
  double two_big = tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_TWOSHOT_ID,
                                   NCCL_PROTO_SIMPLE, 1u << 30, 8, 1);
  EXPECT(two_big < one_big);
  /* Nine ranks: not usable at all. */
  tune_facts_device(&f, 9, 1, 1, 2, 32);
  state(&t, &f);
  EXPECT(tune_model_time(&t.model, ncclFuncAllReduce, WEFT_ALGO_ONESHOT_ID, NCCL_PROTO_LL, 1024,
                         1, 1) < 0);
}

/* ---- a tuner plugin (an in-process fake of the v5 view) ---- */

typedef enum { T_NONE, T_RING, T_TWOSHOT, T_CHANNELS } tuner_kind;
static tuner_kind kind;
static int rows_seen;

static ncclResult_t fake_get(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe, float** table,
                             int na, int np, int reg, int* nch) {
  (void)ctx, (void)coll, (void)nbytes, (void)pipe, (void)np, (void)reg;
  float(*t)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  rows_seen = na;
  if (kind == T_RING) t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 0;
  if (kind == T_TWOSHOT && na > WEFT_ALGO_TWOSHOT_ID) t[WEFT_ALGO_TWOSHOT_ID][NCCL_PROTO_LL] = 0;
  if (kind == T_CHANNELS) *nch = 2;
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
static const ncclTuner_v6_t fake_api = {"fake", fake_init, fake_get, fake_fini, NULL};

static void tuner_slots(void) {
  weft_tune_facts f;
  tune_facts_device(&f, 8, 1, 1, 2, 32);
  weft_tune t;
  state(&t, &f);
  weft_tuner tu = {&fake_api, NULL, "fake", "in-process", 5, NCCL_NUM_ALGORITHMS};
  t.tuner = &tu;
  weft_algo_proto_mask all;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  weft_decision d;
  /* No opinion: the model's choice, OneShot, with NCCL's seven rows shown. */
  kind = T_NONE;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &d));
  EXPECT(d.algo == WEFT_ALGO_ONESHOT_ID && !d.by_tuner && !d.tuner_fallback);
  EXPECT_EQ_INT(rows_seen, NCCL_NUM_ALGORITHMS);
  /* A channel count alone leaves the algorithm open. */
  kind = T_CHANNELS;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &d));
  EXPECT(d.algo == WEFT_ALGO_ONESHOT_ID && d.nchannels == 2);
  /* Picks Ring: obeyed although the model costs OneShot lower. */
  kind = T_RING;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &d));
  EXPECT(d.algo == NCCL_ALGO_RING && d.proto == NCCL_PROTO_SIMPLE && d.by_tuner);
  /* The same with an executor's default (device communicators) of OneShot. */
  weft_default_choice r = {WEFT_ALGO_ONESHOT_ID, NCCL_PROTO_LL, {1, 1, 1}};
  EXPECT_OK(tune_decide_from(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &r, &d));
  EXPECT(d.algo == NCCL_ALGO_RING && d.by_tuner);
  kind = T_NONE;
  EXPECT_OK(tune_decide_from(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &r, &d));
  EXPECT(d.algo == WEFT_ALGO_ONESHOT_ID && d.by_default && !d.by_tuner);
  /* Without the extension a tuner cannot reach TwoShot's row. */
  kind = T_TWOSHOT;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &d));
  EXPECT(d.algo == WEFT_ALGO_ONESHOT_ID && !d.by_tuner);
  /* weft's extension (weftTunerAlgorithms): nine rows, TwoShot picked. */
  tu.algo_rows = WEFT_NUM_ALGORITHMS;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 1024, 1, 0, 1, &d));
  EXPECT_EQ_INT(rows_seen, WEFT_NUM_ALGORITHMS);
  EXPECT(d.algo == WEFT_ALGO_TWOSHOT_ID && d.proto == NCCL_PROTO_LL && d.by_tuner);
}

/* Zero copy (buffers in windows every peer mapped). WEFT_ZERO_COPY=1 (ask.zero_copy 1): only
 * AllReduce out of place above 64 KiB and up to 256 KiB, OneShot. 2: wherever a direct
 * algorithm can: AllReduce OneShot out of place up to 256 KiB, TwoShot in place and beyond;
 * the other collectives OneShot; every size. Always Simple; nothing where NCCL_ALGO or
 * NCCL_PROTO leave no direct algorithm, beyond 8 ranks, or without windows. */
static void zero_copy_rule(void) {
  weft_algo_proto_mask all, ring, ll, one;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  EXPECT_OK(tune_parse_masks("Ring", NULL, &ring));
  EXPECT_OK(tune_parse_masks(NULL, "LL", &ll));
  EXPECT_OK(tune_parse_masks("OneShot", NULL, &one));
  for (int level = 1; level <= 2; level++)
    for (int n = 2; n <= 9; n++)
      for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++)
        for (size_t nbytes = 8; nbytes <= (1u << 30); nbytes *= 4)
          for (int in_place = 0; in_place < 2; in_place++) {
            weft_tune_ask ask = {.rank = 0, .nranks = n, .device = 1, .max_channels = 32,
                                 .all_p2p = 1, .quiet = 1, .mask = &all, .zero_copy = level,
                                 .in_place = in_place};
            weft_op_choice oc;
            EXPECT_OK(tune_op(NULL, &ask, fn, nbytes, &oc));
            int ar = fn == ncclFuncAllReduce;
            int measured = ar && !in_place && nbytes > 65536 && nbytes <= 262144;
            if (n > 8 || (level == 1 && !measured)) {
              EXPECT(!oc.zero_copy);
              continue;
            }
            EXPECT(oc.zero_copy && oc.proto == NCCL_PROTO_SIMPLE);
            EXPECT(oc.nchannels >= 1 && oc.nchannels <= 8);
            int want = ar && (in_place || nbytes > 262144) ? WEFT_ALGO_TWOSHOT_ID
                                                           : WEFT_ALGO_ONESHOT_ID;
            EXPECT_EQ_INT(oc.algo, want);
            ask.mask = &ring; /* NCCL_ALGO=Ring: copies */
            EXPECT_OK(tune_op(NULL, &ask, fn, nbytes, &oc));
            EXPECT(!oc.zero_copy && oc.algo == NCCL_ALGO_RING);
            ask.mask = &ll; /* NCCL_PROTO=LL: no Simple counters, copies */
            EXPECT_OK(tune_op(NULL, &ask, fn, nbytes, &oc));
            EXPECT(!oc.zero_copy && oc.proto == NCCL_PROTO_LL);
            ask.mask = &one; /* OneShot alone: an in-place AllReduce copies */
            EXPECT_OK(tune_op(NULL, &ask, fn, nbytes, &oc));
            EXPECT_EQ_INT(oc.zero_copy, !(ar && in_place));
            EXPECT_EQ_INT(oc.algo, WEFT_ALGO_ONESHOT_ID);
            ask.mask = &all; /* no windows: the rule as before */
            ask.zero_copy = 0;
            EXPECT_OK(tune_op(NULL, &ask, fn, nbytes, &oc));
            EXPECT(!oc.zero_copy);
          }
}

int main(void) {
  grammar();
  forced();
  model_shape();
  tuner_slots();
  zero_copy_rule();
  printf("direct algorithms: grammar, forced choices, model, tuner slots, zero copy: ok\n");
  return 0;
}
