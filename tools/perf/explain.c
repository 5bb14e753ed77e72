/* weft-perf --explain: the rows and the table (see explain.h). */
#include "explain.h"

#include <stdlib.h>
#include <string.h>

/* NCCL's seven, then weft's own (weft.h: WEFT_ALGO_ONESHOT .. WEFT_ALGO_BINOMIAL). */
static const char* const algo_names[] = {"Tree",        "Ring",         "CollNetDirect",
                                         "CollNetChain", "NVLS",        "NVLSTree",
                                         "PAT",          "OneShot",     "TwoShot",
                                         "RecDoubling",  "Rabenseifner", "Binomial"};

/* weft runs the log-step AllGather (Bruck) and ReduceScatter (RecHalving) in PAT's row. */
static const char* algo_label(const struct perf_explain_row* r) {
  if (r->algo == 6 && r->func == 2) return "Bruck";
  if (r->algo == 6 && r->func == 3) return "RecHalving";
  return algo_names[r->algo];
}
#define NALGO ((int)(sizeof algo_names / sizeof algo_names[0]))

/* Sequential steps of the critical path: the dependent message rounds of one call of a small
 * size (a step waits for a peer's previous step), as docs/tuning.md counts them. n ranks,
 * m = 2^floor(log2 n), L = log2 m, f = 1 when n is not a power of two (the fold's way in and
 * out), c = ceil(log2 n). -1: not known here (Tree's depth depends on the topology). */
static long seq_steps(int algo, int func, int n) {
  if (n < 2) return 0;
  int m = 1, L = 0, c = 0;
  while (2 * m <= n) m *= 2, L++;
  while ((1 << c) < n) c++;
  int f = n != m;
  switch (algo) {
    case 1: return func == 4 ? 2L * (n - 1) : (long)n - 1; /* Ring (Broadcast/Reduce: chain) */
    case 6: return c;                                       /* PAT: Bruck / RecHalving */
    case 7: return 1;                                       /* OneShot */
    case 8: return 2;                                       /* TwoShot */
    case 9: return L + 2L * f;                              /* RecDoubling */
    case 10: return 2L * L + 2L * f;                        /* Rabenseifner */
    case 11: return c;                                      /* Binomial */
    default: return -1;
  }
}
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
  r->func = func;
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
  fprintf(out, "# %10s  %12s  %8s  %8s  %6s  %13s  %12s  %9s\n", "size", "algorithm",
          "protocol", "channels", "steps", "predicted(us)", "measured(us)", "meas/pred");
  for (int i = 0; i < s->n; i++) {
    const struct perf_explain_row* r = &s->rows[i];
    char pred[32] = "-", ratio[32] = "-", nch[16] = "-";
    if (r->predicted_us >= 0) snprintf(pred, sizeof pred, "%.2f", r->predicted_us);
    if (r->predicted_us > 0) snprintf(ratio, sizeof ratio, "%.2f", r->measured_us / r->predicted_us);
    char steps[24] = "-";
    if (r->known) snprintf(nch, sizeof nch, "%d", r->nch);
    long st = r->known ? seq_steps(r->algo, r->func, nranks) : -1;
    if (st >= 0) snprintf(steps, sizeof steps, "%ld", st);
    fprintf(out, "  %10zu  %12s  %8s  %8s  %6s  %13s  %12.2f  %9s\n", r->size,
            r->known ? algo_label(r) : "-", r->known ? proto_names[r->proto] : "-", nch, steps,
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
