/* One decision: the model's cost table, the tuner's edit of it (checked), the cheapest cell.
 *
 * What the tuner may do (NCCL's contract): lower or raise usable cells, mark usable cells
 * unusable (negative), set *nChannels (0: keep the model's). What makes its answer unusable, and
 * the model decide instead (one WARN per communicator and kind): an error return, a value
 * written into a cell that was NCCL_ALGO_PROTO_IGNORE, a cell that is not a number, no usable
 * cell left. A negative channel count is ignored (WARN once); a count above the communicator's
 * channels is clamped. Ties go to the first cell in NCCL's order (algorithm, then protocol), so
 * every rank given the same table picks the same cell. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tune/tune.h"
#include "util/log.h"

static const char* result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    default: return "an unknown result";
  }
}

/* Fill table with the model's costs and nch with its channel counts; returns the usable cells. */
static int model_table(const weft_tune_model* m, const weft_algo_proto_mask* mask,
                       const weft_exec_caps* caps, ncclFunc_t func, size_t nbytes, int pipe_ops,
                       float table[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
                       int nch[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]) {
  unsigned algos = mask->algo[func] & caps->algos & tune_func_algos(func);
  unsigned protos = mask->proto[func] & caps->protos;
  int usable = 0;
  for (int a = 0; a < WEFT_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      table[a][p] = (float)NCCL_ALGO_PROTO_IGNORE;
      nch[a][p] = 1;
      if (!(algos & (1u << a)) || !(protos & tune_algo_protos(a) & (1u << p))) continue;
      int c = tune_model_channels(m, func, a, p, nbytes);
      if (c > caps->max_channels) c = caps->max_channels;
      double t = tune_model_time(m, func, a, p, nbytes, c, pipe_ops);
      if (t < 0) continue;
      if (m->f.nranks == 1) t = (a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE) ? 0.0 : t + 1.0;
      table[a][p] = (float)t;
      nch[a][p] = c;
      usable++;
    }
  return usable;
}

static int cheapest(const float table[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], int* algo,
                    int* proto) {
  int found = 0;
  float best = 0;
  for (int a = 0; a < WEFT_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      float c = table[a][p];
      if (!(c >= 0)) continue;
      if (!found || c < best) {
        best = c;
        *algo = a;
        *proto = p;
        found = 1;
      }
    }
  return found;
}

static ncclResult_t nothing_left(const weft_algo_proto_mask* mask, const weft_exec_caps* caps,
                                 ncclFunc_t func, int nranks) {
  char ma[128], mp[64], ca[128], cp[64];
  tune_format_mask(ma, sizeof ma, mask->algo[func], 0);
  tune_format_mask(mp, sizeof mp, mask->proto[func], 1);
  tune_format_mask(ca, sizeof ca, caps->algos & tune_func_algos(func), 0);
  tune_format_mask(cp, sizeof cp, caps->protos, 1);
  const char* direct = nranks > WEFT_DIRECT_MAX_RANKS ? " (OneShot and TwoShot on at most 8 ranks)"
                                                       : "";
  const char* log = nranks > WEFT_LOG_DEV_MAX_RANKS && !(caps->algos & (1u << NCCL_ALGO_PAT))
                        ? " (RecDoubling, Rabenseifner, Binomial and PAT on at most 128 ranks on "
                          "GPUs, 32768 in host mode)"
                        : "";
  WARN("%s: no algorithm/protocol left: NCCL_ALGO allows %s, NCCL_PROTO allows %s; this "
       "executor runs %s with %s%s%s",
       tune_func_name(func), ma, mp, ca, cp, direct, log);
  return ncclInvalidUsage;
}

static int valid_args(const weft_algo_proto_mask* mask, ncclFunc_t func, const void* out) {
  return mask != NULL && out != NULL && (int)func >= 0 && (int)func < WEFT_NUM_COLL_FUNCS;
}

ncclResult_t tune_choose(const weft_tune_model* m, const weft_algo_proto_mask* mask,
                         const weft_exec_caps* caps, ncclFunc_t func, size_t nbytes,
                         weft_choice* out, double* predicted_us) {
  if (m == NULL || caps == NULL || !valid_args(mask, func, out)) {
    WARN("tune_choose: invalid arguments (func %d)", (int)func);
    return ncclInvalidArgument;
  }
  float table[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  int nch[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  model_table(m, mask, caps, func, nbytes, 1, table, nch);
  int a = 0, p = 0;
  if (!cheapest(table, &a, &p)) return nothing_left(mask, caps, func, m->f.nranks);
  *out = (weft_choice){a, p, nch[a][p]};
  if (predicted_us) *predicted_us = table[a][p];
  return ncclSuccess;
}

/* First WARN of a defect kind on this communicator? */
static int first_warn(weft_tune* t, unsigned defect) {
  unsigned old = __atomic_fetch_or(&t->warned, defect, __ATOMIC_RELAXED);
  return !(old & defect);
}

#define TUNER_WARN(t, defect, fmt, ...)                                                         \
  do {                                                                                         \
    if (first_warn(t, defect))                                                                 \
      WARN("TUNER/Plugin: %s (v%d): " fmt "; weft's model decides (warned once per "           \
           "communicator)",                                                                    \
           (t)->tuner->name, (t)->tuner->version, __VA_ARGS__);                                \
    else                                                                                       \
      INFO(NCCL_TUNING, "TUNER/Plugin: %s: " fmt, (t)->tuner->name, __VA_ARGS__);             \
  } while (0)

/* Ask the tuner to edit table (a copy of the model's; the rows it does not see stay the
 * model's). 1 when its answer is usable; then *nch holds its channel count (0: none). */
static int ask_tuner(weft_tune* t, ncclFunc_t func, size_t nbytes, int pipe_ops, int reg_buff,
                     const float model[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
                     float table[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], int* nch) {
  const weft_tuner* tu = t->tuner;
  const char* fn = tune_func_name(func);
  memcpy(table, model, sizeof(float) * WEFT_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS);
  *nch = 0;
  /* NCCL's seven rows, or the rows of weft's a tuner asked for (plugin/tuner.h). */
  int rows = tu->algo_rows > NCCL_NUM_ALGORITHMS && tu->algo_rows <= WEFT_NUM_ALGORITHMS
                 ? tu->algo_rows
                 : NCCL_NUM_ALGORITHMS;
  ncclResult_t res = tu->api->getCollInfo(tu->ctx, func, nbytes, pipe_ops, (float**)(void*)table,
                                          rows, NCCL_NUM_PROTOCOLS, reg_buff, nch);
  if (res != ncclSuccess) {
    TUNER_WARN(t, TUNE_DEFECT_ERROR, "getCollInfo(%s, %zu bytes) returned %s", fn, nbytes,
               result_name(res));
    return 0;
  }
  int usable = 0;
  for (int a = 0; a < WEFT_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      float c = table[a][p];
      if (model[a][p] == (float)NCCL_ALGO_PROTO_IGNORE && c != (float)NCCL_ALGO_PROTO_IGNORE) {
        TUNER_WARN(t, TUNE_DEFECT_IGNORED,
                   "getCollInfo(%s, %zu bytes) wrote %g into cell [%s][%s], which was "
                   "NCCL_ALGO_PROTO_IGNORE (cannot run)",
                   fn, nbytes, (double)c, tune_algo_name(a), tune_proto_name(p));
        return 0;
      }
      if (isnan(c) || isinf(c)) {
        TUNER_WARN(t, TUNE_DEFECT_NAN, "getCollInfo(%s, %zu bytes) left %g in cell [%s][%s]", fn,
                   nbytes, (double)c, tune_algo_name(a), tune_proto_name(p));
        return 0;
      }
      if (c >= 0 && a < rows) usable++;
    }
  if (usable == 0) {
    TUNER_WARN(t, TUNE_DEFECT_EMPTY, "getCollInfo(%s, %zu bytes) marked every usable cell "
               "unusable", fn, nbytes);
    return 0;
  }
  if (*nch < 0) {
    TUNER_WARN(t, TUNE_DEFECT_CHANNELS, "getCollInfo(%s, %zu bytes) set nChannels to %d", fn,
               nbytes, *nch);
    *nch = 0;
  }
  return 1;
}

static void log_decision(const weft_tune* t, ncclFunc_t func, size_t nbytes,
                         const weft_decision* d) {
  if (!weft_log_enabled(NCCL_LOG_INFO, NCCL_TUNING)) return;
  char costs[256] = "";
  size_t off = 0;
  for (int a = 0; a < WEFT_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      if (!(d->table[a][p] >= 0) || off >= sizeof costs) continue;
      int w = snprintf(costs + off, sizeof costs - off, " %s/%s %.1f", tune_algo_name_for(func, a),
                       tune_proto_name(p), (double)d->table[a][p]);
      if (w > 0) off += (size_t)w;
    }
  INFO(NCCL_TUNING, "rank %d: %s %zu bytes -> %s/%s %d channel(s), predicted %.1f us%s%s%s%s "
       "(model us:%s)",
       t->rank, tune_func_name(func), nbytes, tune_algo_name_for(func, d->algo),
       tune_proto_name(d->proto),
       d->nchannels, d->predicted_us, d->by_default && !d->by_tuner ? ", executor's rule" : "",
       d->by_tuner ? ", chosen by tuner " : "",
       d->by_tuner ? t->tuner->name : "", d->tuner_fallback ? ", tuner answer unusable" : "",
       costs);
}

static int clamp_channels(int c, int max) { return c < 1 ? 1 : c > max ? max : c; }

ncclResult_t tune_decide_from(weft_tune* t, const weft_algo_proto_mask* mask, ncclFunc_t func,
                              size_t nbytes, int pipe_ops, int reg_buff, int quiet,
                              const weft_default_choice* dflt, weft_decision* out) {
  if (t == NULL || !valid_args(mask, func, out)) {
    WARN("tune_decide: invalid arguments (func %d%s)", (int)func, t ? "" : ", no tuning state");
    return t == NULL ? ncclInternalError : ncclInvalidArgument;
  }
  const weft_tune_model* m = &t->model;
  weft_decision d;
  memset(&d, 0, sizeof d);
  int nch[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  if (model_table(m, mask, &t->caps, func, nbytes, pipe_ops, d.table, nch) == 0)
    return nothing_left(mask, &t->caps, func, m->f.nranks);
  int ma = 0, mp = 0;
  cheapest(d.table, &ma, &mp);
  if (dflt && dflt->algo >= 0 && dflt->algo < WEFT_NUM_ALGORITHMS && dflt->proto >= 0 &&
      dflt->proto < NCCL_NUM_PROTOCOLS && d.table[dflt->algo][dflt->proto] >= 0) {
    ma = dflt->algo;
    mp = dflt->proto;
    for (int a = 0; a < WEFT_NUM_ALGORITHMS; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
        nch[a][p] = clamp_channels(dflt->nchannels[p], t->caps.max_channels);
    d.by_default = 1;
  }
  d.algo = ma;
  d.proto = mp;
  d.nchannels = nch[ma][mp];
  if (t->tuner) {
    float tuned[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    int tch = 0, ta = ma, tp = mp;
    if (ask_tuner(t, func, nbytes, pipe_ops, reg_buff, d.table, tuned, &tch)) {
      /* An untouched table means "no opinion": the model's (or the default's) choice stands,
       * weft's own algorithms included. A tuner that edits only NCCL's rows picks among them:
       * the rows it did not see are out of its choice. */
      int rows = t->tuner->algo_rows > NCCL_NUM_ALGORITHMS &&
                         t->tuner->algo_rows <= WEFT_NUM_ALGORITHMS
                     ? t->tuner->algo_rows
                     : NCCL_NUM_ALGORITHMS;
      int edited = memcmp(tuned, d.table, sizeof tuned) != 0;
      for (int a = rows; a < WEFT_NUM_ALGORITHMS && edited; a++)
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) tuned[a][p] = NCCL_ALGO_PROTO_IGNORE;
      int found = !edited ? 1 : cheapest(tuned, &ta, &tp);
      if (found) {
        int c = tch > 0 ? (tch > t->caps.max_channels ? t->caps.max_channels : tch) : nch[ta][tp];
        if (tch > t->caps.max_channels && first_warn(t, TUNE_NOTE_CLAMPED))
          INFO(NCCL_INIT | NCCL_TUNING,
               "rank %d: TUNER/Plugin: %s asked for %d channels (%s, %zu bytes); this "
               "communicator has %d, so it gets %d (NCCL_MIN_NCHANNELS raises the count; said "
               "once per communicator)",
               t->rank, t->tuner->name, tch, tune_func_name(func), nbytes, t->caps.max_channels,
               c);
        d.by_tuner = ta != ma || tp != mp || c != nch[ma][mp];
        d.algo = ta;
        d.proto = tp;
        d.nchannels = c;
      } else {
        d.tuner_fallback = 1;
      }
    } else {
      d.tuner_fallback = 1;
    }
  }
  double pred = tune_model_time(m, func, d.algo, d.proto, nbytes, d.nchannels, pipe_ops);
  d.predicted_us = m->f.nranks == 1 ? d.table[d.algo][d.proto] : pred;
  if (!quiet) log_decision(t, func, nbytes, &d);
  *out = d;
  return ncclSuccess;
}

ncclResult_t tune_decide(weft_tune* t, const weft_algo_proto_mask* mask, ncclFunc_t func,
                         size_t nbytes, int pipe_ops, int reg_buff, int quiet, weft_decision* out) {
  return tune_decide_from(t, mask, func, nbytes, pipe_ops, reg_buff, quiet, NULL, out);
}
