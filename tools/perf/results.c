/* Kept rows, --vs pairing and the comparison table (see results.h). Comparison layout: the
 * five key columns of the nccl-tests table, then for out-of-place and for in-place:
 *   time A(8) time B(8) busbw A(7) busbw B(7) bw A/B(6) t A/B(6), separated by two spaces. */
#include "results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void perf_results_add(struct perf_results* rs, const struct perf_result* r) {
  if (rs->n == rs->cap) {
    int cap = rs->cap ? 2 * rs->cap : 64;
    struct perf_result* p = realloc(rs->r, (size_t)cap * sizeof *p);
    if (!p) {
      rs->dropped++;
      return;
    }
    rs->r = p;
    rs->cap = cap;
  }
  rs->r[rs->n++] = *r;
}

void perf_results_free(struct perf_results* rs) {
  free(rs->r);
  memset(rs, 0, sizeof *rs);
}

static const char* op_name(const struct perf_result* r) {
  return r->op >= 0 && r->op < perf_nops ? perf_ops[r->op].name : "none";
}

void perf_result_row(const struct perf_result* r, const char* lib_label, struct perf_row* row) {
  memset(row, 0, sizeof *row);
  row->coll = r->coll >= 0 && r->coll < PERF_NCOLLS ? perf_colls[r->coll].name : "?";
  row->size = r->size;
  row->count = r->count;
  row->type = r->type >= 0 && r->type < perf_ntypes ? perf_types[r->type].name : "?";
  row->op = op_name(r);
  row->root = r->root;
  row->oop = r->oop;
  row->ip = r->ip;
  row->lib = lib_label;
}

void perf_result_test_label(const struct perf_result* r, char* buf, size_t len) {
  struct perf_row row;
  perf_result_row(r, NULL, &row);
  int reduces =
      r->op >= 0 && r->coll >= 0 && r->coll < PERF_NCOLLS && !perf_colls[r->coll].op_label_only;
  int n = snprintf(buf, len, "%s %s%s%s", row.coll, row.type, reduces ? " " : "",
                   reduces ? row.op : "");
  if (r->root >= 0 && n >= 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " root %d", r->root);
}

int perf_result_same_test(const struct perf_result* a, const struct perf_result* b) {
  return a->coll == b->coll && a->type == b->type && a->op == b->op && a->root == b->root;
}

int perf_pairs_make(const struct perf_results* rs, struct perf_pairs* p) {
  memset(p, 0, sizeof *p);
  int na = 0, nb = 0;
  for (int i = 0; i < rs->n; i++) rs->r[i].lib == 0 ? na++ : nb++;
  int most = na < nb ? na : nb;
  p->a = calloc((size_t)(most ? most : 1), sizeof *p->a);
  p->b = calloc((size_t)(most ? most : 1), sizeof *p->b);
  if (!p->a || !p->b) {
    perf_pairs_free(p);
    return -1;
  }
  /* Walk both libraries' rows in measurement order, side by side. */
  int ia = 0, ib = 0;
  for (;;) {
    while (ia < rs->n && rs->r[ia].lib != 0) ia++;
    while (ib < rs->n && rs->r[ib].lib != 1) ib++;
    if (ia >= rs->n || ib >= rs->n) break;
    const struct perf_result *a = &rs->r[ia], *b = &rs->r[ib];
    if (!perf_result_same_test(a, b) || a->size != b->size) {
      p->mismatch = 1;
      break;
    }
    p->a[p->n] = a;
    p->b[p->n] = b;
    p->n++;
    ia++, ib++;
  }
  p->unpaired_a = na - p->n;
  p->unpaired_b = nb - p->n;
  return 0;
}

void perf_pairs_free(struct perf_pairs* p) {
  free(p->a);
  free(p->b);
  memset(p, 0, sizeof *p);
}

double perf_geomean(const double* v, int n) {
  double sum = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i]) && v[i] > 0) sum += log(v[i]), k++;
  return k ? exp(sum / k) : NAN;
}

static void ratio_text(double v, char* buf, size_t len) {
  if (isfinite(v))
    snprintf(buf, len, "%.2f", v);
  else
    snprintf(buf, len, "-");
}

static void compare_columns(FILE* out) {
  static const char* halves[] = {"out-of-place", "in-place"};
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "");
  for (int h = 0; h < 2; h++) {
    int w = 56, len = (int)strlen(halves[h]), pad = (w - len) / 2;
    fprintf(out, "%*s%s%*s", pad, "", halves[h], h ? 0 : w - pad - len, "");
  }
  fprintf(out, "\n# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int h = 0; h < 2; h++)
    fprintf(out, "  %8s  %8s  %7s  %7s  %6s  %6s", "time A", "time B", "busbw A", "busbw B",
            "bw A/B", "t A/B");
  fprintf(out, "\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (int h = 0; h < 2; h++)
    fprintf(out, "  %8s  %8s  %7s  %7s%s", "(us)", "(us)", "(GB/s)", "(GB/s)",
            h ? "" : "                ");
  fprintf(out, "\n");
}

static void compare_half(FILE* out, const struct perf_half_row* a, const struct perf_half_row* b) {
  char ta[32], tb[32], ba[32], bb[32], rb[32], rt[32];
  double tr, br;
  perf_half_ratio(a, b, &tr, &br);
  perf_format_num(a->time_us, 8, ta, sizeof ta);
  perf_format_num(b->time_us, 8, tb, sizeof tb);
  perf_format_num(a->busbw, 7, ba, sizeof ba);
  perf_format_num(b->busbw, 7, bb, sizeof bb);
  ratio_text(br, rb, sizeof rb);
  ratio_text(tr, rt, sizeof rt);
  fprintf(out, "  %8s  %8s  %7s  %7s  %6s  %6s", ta, tb, ba, bb, rb, rt);
}

/* The geometric means of the block p->a[first..end). */
static void block_summary(FILE* out, const struct perf_pairs* p, int first, int end) {
  int n = end - first;
  double* v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1) * 4);
  if (!v) return;
  for (int i = 0; i < n; i++) {
    perf_half_ratio(&p->a[first + i]->oop, &p->b[first + i]->oop, &v[2 * n + i], &v[i]);
    perf_half_ratio(&p->a[first + i]->ip, &p->b[first + i]->ip, &v[3 * n + i], &v[n + i]);
  }
  char label[96], bo[32], bi[32], to[32], ti[32];
  perf_result_test_label(p->a[first], label, sizeof label);
  ratio_text(perf_geomean(v, n), bo, sizeof bo);
  ratio_text(perf_geomean(v + n, n), bi, sizeof bi);
  ratio_text(perf_geomean(v + 2 * n, n), to, sizeof to);
  ratio_text(perf_geomean(v + 3 * n, n), ti, sizeof ti);
  fprintf(out,
          "# A/B %s, %d size%s: busbw geomean %s (in-place %s), time geomean %s (in-place %s)\n",
          label, n, n == 1 ? "" : "s", bo, bi, to, ti);
  free(v);
}

/* The worst (largest) out-of-place time A/B of the block p->a[first..end) over the sizes from
 * PERF_WORST_MIN to PERF_WORST_MAX bytes: the small-message latency bar reads this one. */
static void block_worst(FILE* out, const struct perf_pairs* p, int first, int end) {
  double worst = NAN;
  size_t at = 0;
  int n = 0;
  for (int i = first; i < end; i++) {
    if (p->a[i]->size < PERF_WORST_MIN || p->a[i]->size > PERF_WORST_MAX) continue;
    double tr, br;
    perf_half_ratio(&p->a[i]->oop, &p->b[i]->oop, &tr, &br);
    if (!isfinite(tr)) continue;
    n++;
    if (isnan(worst) || tr > worst) worst = tr, at = p->a[i]->size;
  }
  char label[96];
  perf_result_test_label(p->a[first], label, sizeof label);
  if (n == 0)
    fprintf(out, "# A/B %s, worst time 8 B-64 KiB (out-of-place): - (no size in range)\n", label);
  else
    fprintf(out, "# A/B %s, worst time 8 B-64 KiB (out-of-place): %.2f at %zu B, %d size%s\n",
            label, worst, at, n, n == 1 ? "" : "s");
}

void perf_compare_print(FILE* out, const struct perf_pairs* p, const char* label_a,
                        const char* label_b) {
  fprintf(out, "# Comparison per size: A = %s, B = %s. Ratios are A/B: busbw A/B above 1, or\n",
          label_a, label_b);
  fprintf(out, "# time A/B below 1, means A is faster. Geometric means follow each block.\n#\n");
  compare_columns(out);
  int first = 0;
  for (int i = 0; i < p->n; i++) {
    if (i > 0 && !perf_result_same_test(p->a[i], p->a[i - 1])) {
      block_summary(out, p, first, i);
      first = i;
    }
    struct perf_row row;
    perf_result_row(p->a[i], NULL, &row);
    fprintf(out, "%12zu  %12zu  %8s  %6s  %6d", row.size, row.count, row.type, row.op, row.root);
    compare_half(out, &p->a[i]->oop, &p->b[i]->oop);
    compare_half(out, &p->a[i]->ip, &p->b[i]->ip);
    fprintf(out, "\n");
  }
  if (p->n > first) block_summary(out, p, first, p->n);
  /* After the table, a line per block: its worst small-size time ratio. */
  for (int i = 0, start = 0; i < p->n; i++)
    if (i + 1 == p->n || !perf_result_same_test(p->a[i + 1], p->a[i])) {
      block_worst(out, p, start, i + 1);
      start = i + 1;
    }
  if (p->n == 0) fprintf(out, "# (no size was measured with both libraries)\n");
  if (p->mismatch)
    fprintf(out, "# pairing stopped: the libraries' next rows measure different things\n");
  if (p->unpaired_a || p->unpaired_b)
    fprintf(out, "# rows without a partner: %d of A, %d of B (a library stopped early)\n",
            p->unpaired_a, p->unpaired_b);
  fprintf(out, "#\n");
  fflush(out);
}
