/* tune_decide with a tuner (in-process fakes of the v6 view, no library): a usable answer wins
 * and is flagged; its channel count is honoured, clamped to the communicator's; every unusable
 * answer (error return, a write into an ignored cell, NaN, nothing usable left, a negative
 * channel count) leaves the model's choice and is WARNed once per communicator however often
 * it happens; NCCL_ALGO/NCCL_PROTO cells stay closed to the tuner. With an executor's default
 * choice (device communicators), the default runs unless the tuner edits the table or sets a
 * channel count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "tune/tune.h"
#include "util/log.h"

typedef enum { F_GOOD, F_ERROR, F_IGNORED, F_NAN, F_EMPTY, F_NEGCH, F_BIGCH, F_NONE } fake_kind;
static fake_kind kind;
static int calls;

static ncclResult_t fake_get(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe, float** table,
                             int na, int np, int reg, int* nch) {
  (void)ctx, (void)coll, (void)nbytes, (void)pipe, (void)na, (void)np, (void)reg;
  float(*t)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  calls++;
  switch (kind) {
    case F_GOOD: t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 0; *nch = 1; break;
    case F_ERROR: return ncclInternalError;
    case F_IGNORED: t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = 0; break;
    case F_NAN: t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = NAN; break;
    case F_EMPTY:
      for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) t[a][p] = -1;
      break;
    case F_NEGCH: t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 0; *nch = -2; break;
    case F_BIGCH: *nch = 1000; break;
    case F_NONE: break;
  }
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

static char logpath[64];

static int warn_lines(void) {
  FILE* f = fopen(logpath, "r");
  if (!f) return 0;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, " WARN ")) n++;
  fclose(f);
  return n;
}

static int log_lines(const char* text) {
  FILE* f = fopen(logpath, "r");
  if (!f) return 0;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, text)) n++;
  fclose(f);
  return n;
}

/* A communicator's state from facts, with the fake tuner. */
static void state_of(weft_tune* t, weft_tuner* tu, const weft_tune_facts* f, unsigned protos,
                     int max_channels) {
  memset(t, 0, sizeof *t);
  ncclTunerConstants_v5_t k;
  weft_tune_host_bw hb;
  tune_constants_default(f, &k);
  tune_host_bw_default(f, &hb);
  tune_model_init(&t->model, f, &k, &hb);
  t->caps = (weft_exec_caps){(1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE), protos,
                             max_channels};
  *tu = (weft_tuner){&fake_api, NULL, "fake", "in-process", 5, NCCL_NUM_ALGORITHMS};
  t->tuner = tu;
}

static void fresh(weft_tune* t, weft_tuner* tu, int max_channels) {
  weft_tune_facts f;
  tune_facts_host(&f, 4, 1, 1, max_channels, 4, 1.0);
  state_of(t, tu, &f, (1u << NCCL_PROTO_LL) | (1u << NCCL_PROTO_SIMPLE), max_channels);
}

/* A device communicator's state: 2 GPUs over NVLink (Hopper row), every protocol. */
static void fresh_device(weft_tune* t, weft_tuner* tu, int max_channels) {
  weft_tune_facts f;
  tune_facts_device(&f, 2, 1, 1, 2, max_channels);
  state_of(t, tu, &f,
           (1u << NCCL_PROTO_LL) | (1u << NCCL_PROTO_LL128) | (1u << NCCL_PROTO_SIMPLE),
           max_channels);
}

/* The executor's default choice (device communicators): it runs wherever the tuner is absent or
 * leaves the table alone; a tuner's edit or channel count overrides it; a defective answer
 * leaves it. Random sizes, default cells and channel counts (seeded). */
static void default_choice_cases(const weft_algo_proto_mask* all) {
  uint64_t rng = test_seed(0x7e57d3f1u);
  weft_tune t;
  weft_tuner tu;
  weft_decision d;
  for (int i = 0; i < 200; i++) {
    size_t nbytes = (size_t)1 << (3 + test_rand(&rng) % 28);
    nbytes += test_rand(&rng) % nbytes;
    weft_default_choice r;
    r.algo = test_rand(&rng) % 4 ? NCCL_ALGO_RING : NCCL_ALGO_TREE;
    r.proto = (int)(test_rand(&rng) % NCCL_NUM_PROTOCOLS);
    for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++) r.nchannels[q] = 1 + (int)(test_rand(&rng) % 64);
    int chans = 1 + (int)(test_rand(&rng) % 64);
    int clamped = r.nchannels[r.proto] > chans ? chans : r.nchannels[r.proto];
    ncclFunc_t func = test_rand(&rng) % 2 ? ncclFuncAllReduce : ncclFuncAllGather;
    int usable = r.algo == NCCL_ALGO_RING || func == ncclFuncAllReduce; /* Tree: AllReduce */

    fresh_device(&t, &tu, chans);
    t.tuner = NULL;
    EXPECT_OK(tune_decide_from(&t, all, func, nbytes, 1, 0, 1, &r, &d));
    if (usable) {
      EXPECT(d.algo == r.algo && d.proto == r.proto && d.nchannels == clamped && d.by_default);
    } else { /* the default's cell cannot run: the model decides */
      EXPECT(!d.by_default && d.algo == NCCL_ALGO_RING);
    }
    EXPECT(!d.by_tuner && d.predicted_us > 0);
    if (!usable) continue;

    fresh_device(&t, &tu, chans);
    kind = F_NONE;
    EXPECT_OK(tune_decide_from(&t, all, func, nbytes, 1, 0, 1, &r, &d));
    EXPECT(d.algo == r.algo && d.proto == r.proto && d.nchannels == clamped && !d.by_tuner);

    kind = F_BIGCH; /* channels only: the default's cell, the tuner's count (clamped) */
    EXPECT_OK(tune_decide_from(&t, all, func, nbytes, 1, 0, 1, &r, &d));
    EXPECT(d.algo == r.algo && d.proto == r.proto && d.nchannels == chans);
    EXPECT(d.by_tuner == (clamped != chans));

    kind = F_ERROR; /* defective: the default stands */
    EXPECT_OK(tune_decide_from(&t, all, func, nbytes, 1, 0, 1, &r, &d));
    EXPECT(d.algo == r.algo && d.proto == r.proto && d.tuner_fallback && !d.by_tuner);

    if (func != ncclFuncAllReduce) continue;
    kind = F_GOOD; /* an edit: the tuner's cell (Tree/LL) and count */
    EXPECT_OK(tune_decide_from(&t, all, func, nbytes, 1, 0, 1, &r, &d));
    EXPECT(d.algo == NCCL_ALGO_TREE && d.proto == NCCL_PROTO_LL && d.nchannels == 1);
    EXPECT(d.by_tuner == !(r.algo == NCCL_ALGO_TREE && r.proto == NCCL_PROTO_LL && clamped == 1));
  }
}

int main(void) {
  test_require_weft_lib();
  snprintf(logpath, sizeof logpath, "/tmp/weft-tune-decide-%d.log", (int)getpid());
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_FILE", logpath, 1);
  weft_log_reset();
  weft_algo_proto_mask all, simple_only;
  EXPECT_OK(tune_parse_masks(NULL, NULL, &all));
  EXPECT_OK(tune_parse_masks(NULL, "Simple", &simple_only));
  weft_tune t;
  weft_tuner tu;
  weft_decision model, d;

  /* The model alone, for reference: 64 MiB AllReduce on 4 channels. */
  fresh(&t, &tu, 4);
  t.tuner = NULL;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 64u << 20, 1, 0, 1, &model));
  EXPECT(model.algo == NCCL_ALGO_RING && model.proto == NCCL_PROTO_SIMPLE && model.nchannels == 4);
  EXPECT(!model.by_tuner && !model.tuner_fallback && model.predicted_us > 0);

  /* A good answer wins, is flagged, sets the channels; the prediction is the model's for it. */
  fresh(&t, &tu, 4);
  kind = F_GOOD;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 64u << 20, 1, 0, 1, &d));
  EXPECT(d.algo == NCCL_ALGO_TREE && d.proto == NCCL_PROTO_LL && d.nchannels == 1 && d.by_tuner);
  EXPECT(d.predicted_us > model.predicted_us);
  /* ...but cannot open a cell NCCL_PROTO closed: LL is ignored there, so writing it is a defect
   * and the model decides. */
  EXPECT_OK(tune_decide(&t, &simple_only, ncclFuncAllReduce, 64u << 20, 1, 0, 1, &d));
  EXPECT(d.proto == NCCL_PROTO_SIMPLE && d.tuner_fallback && !d.by_tuner);
  EXPECT_EQ_INT(warn_lines(), 1);

  /* Channels above the communicator's are clamped (no WARN). */
  fresh(&t, &tu, 2);
  kind = F_BIGCH;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 64u << 20, 1, 0, 1, &d));
  EXPECT(d.nchannels == 2 && !d.tuner_fallback);
  EXPECT_EQ_INT(warn_lines(), 1);

  /* Each defect: the model's choice, and one WARN per communicator however many calls. */
  const fake_kind bad[] = {F_ERROR, F_IGNORED, F_NAN, F_EMPTY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fresh(&t, &tu, 4);
    kind = bad[i];
    int before = warn_lines();
    for (int rep = 0; rep < 20; rep++) {
      EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 64u << 20, 1, 0, 1, &d));
      EXPECT(d.algo == model.algo && d.proto == model.proto && d.nchannels == model.nchannels);
      EXPECT(d.tuner_fallback && !d.by_tuner);
    }
    EXPECT_EQ_INT(warn_lines(), before + 1);
    /* A new communicator warns again, once. */
    fresh(&t, &tu, 4);
    EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 8, 1, 0, 1, &d));
    EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 8, 1, 0, 1, &d));
    EXPECT_EQ_INT(warn_lines(), before + 2);
  }
  /* A negative channel count: the cell edit stands, the count is ignored, one WARN. */
  fresh(&t, &tu, 4);
  kind = F_NEGCH;
  int before = warn_lines();
  for (int rep = 0; rep < 5; rep++) {
    EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 64u << 20, 1, 0, 1, &d));
    EXPECT(d.algo == NCCL_ALGO_TREE && d.proto == NCCL_PROTO_LL && d.nchannels >= 1);
  }
  EXPECT_EQ_INT(warn_lines(), before + 1);
  /* No opinion: the model's choice, not flagged. */
  fresh(&t, &tu, 4);
  kind = F_NONE;
  calls = 0;
  EXPECT_OK(tune_decide(&t, &all, ncclFuncBroadcast, 4096, 1, 0, 1, &d));
  EXPECT(!d.by_tuner && !d.tuner_fallback && d.algo == NCCL_ALGO_RING && calls == 1);
  /* Nothing left by the masks: InvalidUsage before the tuner is asked. */
  weft_algo_proto_mask ll128;
  EXPECT_OK(tune_parse_masks(NULL, "LL128", &ll128));
  calls = 0;
  EXPECT_RES(tune_decide(&t, &ll128, ncclFuncAllReduce, 4096, 1, 0, 1, &d), ncclInvalidUsage);
  EXPECT_EQ_INT(calls, 0);
  EXPECT_RES(tune_decide(NULL, &all, ncclFuncAllReduce, 4096, 1, 0, 1, &d), ncclInternalError);
  EXPECT_RES(tune_decide(&t, &all, ncclFuncSend, 4096, 1, 0, 1, &d), ncclInvalidArgument);
  default_choice_cases(&all);

  /* A count above the communicator's: honoured up to it, and said once per communicator (INFO,
   * naming both counts), however many decisions clamp it. */
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
  weft_log_reset();
  for (int comm = 1; comm <= 2; comm++) {
    fresh(&t, &tu, 3);
    kind = F_BIGCH;
    for (int rep = 0; rep < 6; rep++) {
      EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, (size_t)(64u << 20) + rep, 1, 0, 1, &d));
      EXPECT(d.nchannels == 3);
    }
    EXPECT_EQ_INT(log_lines("asked for 1000 channels"), comm);
    EXPECT_EQ_INT(log_lines("this communicator has 3, so it gets 3"), comm);
  }
  kind = F_GOOD; /* 1 channel asked, 3 there: no note */
  fresh(&t, &tu, 3);
  EXPECT_OK(tune_decide(&t, &all, ncclFuncAllReduce, 4096, 1, 0, 1, &d));
  EXPECT(d.nchannels == 1);
  EXPECT_EQ_INT(log_lines("asked for"), 2);
  unlink(logpath);
  return 0;
}
