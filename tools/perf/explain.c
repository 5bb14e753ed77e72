/* weft-perf --explain: the rows and the table (see explain.h). */
#include "explain.h"

#include <stdlib.h>
#include <string.h>

/* NCCL's seven, then weft's own (weft.h: WEFT_ALGO_ONESHOT, WEFT_ALGO_TWOSHOT). */
static const char* const algo_names[] = {"Tree", "Ring",     "CollNetDirect", "CollNetChain",
                                         "NVLS", "NVLSTree", "PAT",           "OneShot",
                                         "TwoShot"};
#define NALGO ((int)(sizeof algo_names / sizeof algo_names[0]))
static const char* const proto_names[] = {"LL", "LL128", "Simple"};

/* ncclFunc_t of a benchmark collective; -1 for those built from send/recv. */
static int nccl_func(enum perf_coll_id id) {
  switch (id) {
    case PERF_BROADCAST: return 0;
    case PERF_REDUCE: return 1;
    case PERF_ALL_GATHER: return 2;
    case PERF_REDUCE_SCATTER: return 3;
    case PERF_ALL_REDUCE: return 4;
    default: return -1;
  }
}

void perf_explain_begin(struct perf_explain* e, const char* label) {
  if (e->n == e->cap) {
    int cap = e->cap ? 2 * e->cap : 8;
    struct perf_explain_series* s = realloc(e->s, (size_t)cap * sizeof *s);
    if (!s) {
      e->failed = 1;
      return;
    }
    e->s = s;
    e->cap = cap;
  }
  struct perf_explain_series* s = &e->s[e->n++];
  memset(s, 0, sizeof *s);
  snprintf(s->label, sizeof s->label, "%s", label);
}

void perf_explain_add(struct perf_explain* e, const struct perf_nccl* lib, ncclComm_t comm,
                      enum perf_coll_id coll, size_t size, size_t count, ncclDataType_t type,
                      double measured_us) {
  if (e->n == 0) return;
  struct perf_explain_series* s = &e->s[e->n - 1];
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 32;
    struct perf_explain_row* r = realloc(s->rows, (size_t)cap * sizeof *r);
    if (!r) {
      e->failed = 1;
      return;
    }
    s->rows = r;
    s->cap = cap;
  }
  struct perf_explain_row* r = &s->rows[s->n++];
  memset(r, 0, sizeof *r);
  r->size = size;
  r->measured_us = measured_us;
  r->predicted_us = -1;
  int func = nccl_func(coll);
  float us = -1;
  if (func >= 0 && lib->weftCommTuneQuery(comm, func, count, type, &r->algo, &r->proto, &r->nch,
                                          &us) == ncclSuccess) {
    r->known = r->algo >= 0 && r->algo < NALGO && r->proto >= 0 && r->proto < 3;
    r->predicted_us = us;
  }
}

void perf_explain_print(FILE* out, const struct perf_explain* e, const struct perf_nccl* lib,
                        int nranks) {
  if (e->n == 0) return;
  const struct perf_explain_series* s = &e->s[e->n - 1];
  fprintf(out, "# explain: %s, %d ranks: what the library decided per size%s\n", s->label, nranks,
          lib->has_tune_query ? " (weftCommTuneQuery, rank 0)" : "");
  if (!lib->has_tune_query)
    fprintf(out, "#   %s has no weftCommTuneQuery: decisions and predictions unknown\n",
            lib->path);
  if (e->failed) fprintf(out, "#   (out of memory: some rows were dropped)\n");
  fprintf(out, "# %10s  %9s  %8s  %8s  %13s  %12s  %9s\n", "size", "algorithm", "protocol",
          "channels", "predicted(us)", "measured(us)", "meas/pred");
  for (int i = 0; i < s->n; i++) {
    const struct perf_explain_row* r = &s->rows[i];
    char pred[32] = "-", ratio[32] = "-", nch[16] = "-";
    if (r->predicted_us >= 0) snprintf(pred, sizeof pred, "%.2f", r->predicted_us);
    if (r->predicted_us > 0) snprintf(ratio, sizeof ratio, "%.2f", r->measured_us / r->predicted_us);
    if (r->known) snprintf(nch, sizeof nch, "%d", r->nch);
    fprintf(out, "  %10zu  %9s  %8s  %8s  %13s  %12.2f  %9s\n", r->size,
            r->known ? algo_names[r->algo] : "-", r->known ? proto_names[r->proto] : "-", nch,
            pred, r->measured_us, ratio);
  }
  fprintf(out, "#\n");
  fflush(out);
}

void perf_explain_free(struct perf_explain* e) {
  for (int i = 0; i < e->n; i++) free(e->s[i].rows);
  free(e->s);
  memset(e, 0, sizeof *e);
}
