/* The table and the JSON file (see table.h). Column layout, as nccl-tests prints it:
 *   size(12) count(12) type(8) redop(6) root(6), then twice (out-of-place, in-place):
 *   time us(7) algbw GB/s(6) busbw GB/s(6) #wrong(6), columns separated by two spaces. */
#include "table.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void perf_format_num(double v, int width, char* buf, size_t len) {
  static const char* fixed[] = {"%*.2f", "%*.1f", "%*.0f"};
  for (int i = 0; i < 3; i++) {
    int n = snprintf(buf, len, fixed[i], width, v);
    if (n >= 0 && n <= width) return;
  }
  snprintf(buf, len, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

void perf_table_columns(FILE* out) {
  fprintf(out, "#\n");
  fprintf(out,
          "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place       "
          "   \n",
          "", "", "", "", "");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size",
          "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
          "busbw", "#wrong");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static void half_row(FILE* out, const struct perf_half_row* h) {
  char t[32], a[32], b[32];
  perf_format_num(h->time_us, 7, t, sizeof t);
  perf_format_num(h->algbw, 6, a, sizeof a);
  perf_format_num(h->busbw, 6, b, sizeof b);
  if (h->reported)
    fprintf(out, "  %7s  %6s  %6s  %6g", t, a, b, (double)h->wrong);
  else
    fprintf(out, "  %7s  %6s  %6s    N/A", t, a, b);
}

void perf_table_row(FILE* out, const struct perf_row* row) {
  fprintf(out, "%12zu  %12zu  %8s  %6s  %6d", row->size, row->count, row->type, row->op, row->root);
  half_row(out, &row->oop);
  half_row(out, &row->ip);
  fprintf(out, "\n");
  fflush(out);
}

void perf_half_ratio(const struct perf_half_row* a, const struct perf_half_row* b,
                     double* time_ratio, double* busbw_ratio) {
  *time_ratio = a->time_us > 0 && b->time_us > 0 ? a->time_us / b->time_us : NAN;
  *busbw_ratio = a->busbw > 0 && b->busbw > 0 ? a->busbw / b->busbw : NAN;
}

static int double_cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int half_time_cmp(const void* a, const void* b) {
  return double_cmp(&((const struct perf_half_row*)a)->time_us,
                    &((const struct perf_half_row*)b)->time_us);
}

void perf_half_median(struct perf_half_row* turns, int n, struct perf_half_row* out) {
  int64_t wrong = 0;
  int reported = 0;
  for (int i = 0; i < n; i++) {
    wrong += turns[i].wrong;
    reported |= turns[i].reported;
  }
  qsort(turns, (size_t)n, sizeof *turns, half_time_cmp);
  *out = turns[n / 2];
  if (n % 2 == 0) out->time_us = (turns[n / 2 - 1].time_us + turns[n / 2].time_us) / 2;
  out->algbw = out->busbw = 0;
  out->wrong = wrong;
  out->reported = reported;
}

double perf_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, double_cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --- JSON ---------------------------------------------------------------------------------- */

struct sbuf {
  char* p;
  size_t len, cap;
};

static void sb_add(struct sbuf* s, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (s->len + (size_t)n + 1 > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + (size_t)n + 1) cap *= 2;
    char* p = realloc(s->p, cap);
    if (!p) return;
    s->p = p;
    s->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
  va_end(ap);
  s->len += (size_t)n;
}

static void sb_str(struct sbuf* s, const char* v) {
  sb_add(s, "\"");
  for (; v && *v; v++) {
    unsigned char ch = (unsigned char)*v;
    if (ch == '"' || ch == '\\')
      sb_add(s, "\\%c", ch);
    else if (ch < 0x20)
      sb_add(s, "\\u%04x", ch);
    else
      sb_add(s, "%c", ch);
  }
  sb_add(s, "\"");
}

static void sb_num(struct sbuf* s, double v) {
  if (isfinite(v))
    sb_add(s, "%.17g", v);
  else
    sb_add(s, "null");
}

enum { JSON_MAX_SECTIONS = 8 };

struct perf_json {
  char* path;
  struct sbuf head; /* "args" */
  const char* sect_name[JSON_MAX_SECTIONS];
  struct sbuf sect[JSON_MAX_SECTIONS]; /* "key": value, … */
  int nsect;
  struct sbuf libraries;
  struct sbuf rows;
  struct sbuf compare;
  struct sbuf summary;
};

struct perf_json* perf_json_open(const char* path, int argc, char** argv) {
  struct perf_json* j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->path = strdup(path);
  /* Fail now, not after the run, when the file cannot be written. */
  FILE* f = fopen(path, "w");
  if (!f || !j->path) {
    if (f) fclose(f);
    free(j->path);
    free(j);
    return NULL;
  }
  fclose(f);
  sb_add(&j->head, "[");
  for (int i = 0; i < argc; i++) {
    if (i) sb_add(&j->head, ", ");
    sb_str(&j->head, argv[i]);
  }
  sb_add(&j->head, "]");
  return j;
}

static struct sbuf* section(struct perf_json* j, const char* name) {
  for (int i = 0; i < j->nsect; i++)
    if (!strcmp(j->sect_name[i], name)) return &j->sect[i];
  if (j->nsect == JSON_MAX_SECTIONS) return NULL;
  j->sect_name[j->nsect] = name;
  return &j->sect[j->nsect++];
}

void perf_json_kv_str(struct perf_json* j, const char* sect, const char* key, const char* v) {
  struct sbuf* s = j ? section(j, sect) : NULL;
  if (!s) return;
  sb_add(s, "%s\"%s\": ", s->len ? ", " : "", key);
  sb_str(s, v);
}

void perf_json_kv_num(struct perf_json* j, const char* sect, const char* key, double v) {
  struct sbuf* s = j ? section(j, sect) : NULL;
  if (!s) return;
  sb_add(s, "%s\"%s\": ", s->len ? ", " : "", key);
  sb_num(s, v);
}

static void json_half(struct sbuf* s, const char* key, const struct perf_half_row* h) {
  sb_add(s, ", \"%s\": {\"time_us\": ", key);
  sb_num(s, h->time_us);
  sb_add(s, ", \"algbw_gbps\": ");
  sb_num(s, h->algbw);
  sb_add(s, ", \"busbw_gbps\": ");
  sb_num(s, h->busbw);
  if (h->reported)
    sb_add(s, ", \"nwrong\": %lld}", (long long)h->wrong);
  else
    sb_add(s, ", \"nwrong\": null}");
}

void perf_json_library(struct perf_json* j, const char* label, const char* path, int version) {
  if (!j) return;
  struct sbuf* s = &j->libraries;
  sb_add(s, "%s\n    {\"label\": ", s->len ? "," : "");
  sb_str(s, label);
  sb_add(s, ", \"path\": ");
  sb_str(s, path);
  sb_add(s, ", \"nccl_version\": %d}", version);
}

/* "library": …, "collective": …, "size": …, "count": …, "type": …, "redop": …, "root": … */
static void json_point(struct sbuf* s, const struct perf_row* r) {
  if (r->lib) {
    sb_add(s, "\"library\": ");
    sb_str(s, r->lib);
    sb_add(s, ", ");
  }
  sb_add(s, "\"collective\": ");
  sb_str(s, r->coll);
  sb_add(s, ", \"size\": %zu, \"count\": %zu, \"type\": ", r->size, r->count);
  sb_str(s, r->type);
  sb_add(s, ", \"redop\": ");
  sb_str(s, r->op);
  sb_add(s, ", \"root\": %d", r->root);
}

void perf_json_row(struct perf_json* j, const struct perf_row* r) {
  if (!j) return;
  struct sbuf* s = &j->rows;
  sb_add(s, "%s\n    {", s->len ? "," : "");
  json_point(s, r);
  json_half(s, "out_of_place", &r->oop);
  json_half(s, "in_place", &r->ip);
  sb_add(s, "}");
}

static void json_compare_half(struct sbuf* s, const char* key, const struct perf_half_row* a,
                              const struct perf_half_row* b) {
  double tr, br;
  perf_half_ratio(a, b, &tr, &br);
  sb_add(s, ", \"%s\": {\"time_us_a\": ", key);
  sb_num(s, a->time_us);
  sb_add(s, ", \"time_us_b\": ");
  sb_num(s, b->time_us);
  sb_add(s, ", \"busbw_gbps_a\": ");
  sb_num(s, a->busbw);
  sb_add(s, ", \"busbw_gbps_b\": ");
  sb_num(s, b->busbw);
  sb_add(s, ", \"time_ratio\": ");
  sb_num(s, tr);
  sb_add(s, ", \"busbw_ratio\": ");
  sb_num(s, br);
  sb_add(s, "}");
}

void perf_json_compare(struct perf_json* j, const struct perf_row* a, const struct perf_row* b) {
  if (!j) return;
  struct sbuf* s = &j->compare;
  struct perf_row key = *a;
  key.lib = NULL;
  sb_add(s, "%s\n    {\"a\": ", s->len ? "," : "");
  sb_str(s, a->lib ? a->lib : "");
  sb_add(s, ", \"b\": ");
  sb_str(s, b->lib ? b->lib : "");
  sb_add(s, ", ");
  json_point(s, &key);
  json_compare_half(s, "out_of_place", &a->oop, &b->oop);
  json_compare_half(s, "in_place", &a->ip, &b->ip);
  sb_add(s, "}");
}

void perf_json_coll_summary(struct perf_json* j, const char* lib, const char* coll,
                            double avg_busbw, int out_of_bounds) {
  if (!j) return;
  struct sbuf* s = &j->summary;
  sb_add(s, "%s\n    {", s->len ? "," : "");
  if (lib) {
    sb_add(s, "\"library\": ");
    sb_str(s, lib);
    sb_add(s, ", ");
  }
  sb_add(s, "\"collective\": ");
  sb_str(s, coll);
  sb_add(s, ", \"avg_busbw_gbps\": ");
  sb_num(s, avg_busbw);
  sb_add(s, ", \"out_of_bounds\": %d}", out_of_bounds);
}

int perf_json_close(struct perf_json* j) {
  if (!j) return 0;
  int rc = -1;
  FILE* f = fopen(j->path, "w");
  if (f) {
    char when[64] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S%z", &tm);
    fprintf(f, "{\n  \"tool\": \"weft-perf\",\n  \"format_version\": 2,\n");
    fprintf(f, "  \"end_time\": \"%s\",\n  \"args\": %s,\n", when, j->head.p ? j->head.p : "[]");
    for (int i = 0; i < j->nsect; i++)
      fprintf(f, "  \"%s\": {%s},\n", j->sect_name[i], j->sect[i].p ? j->sect[i].p : "");
    fprintf(f, "  \"libraries\": [%s\n  ],\n", j->libraries.p ? j->libraries.p : "");
    fprintf(f, "  \"results\": [%s\n  ],\n", j->rows.p ? j->rows.p : "");
    if (j->compare.len) fprintf(f, "  \"comparison\": [%s\n  ],\n", j->compare.p);
    fprintf(f, "  \"summary\": [%s\n  ]\n}\n", j->summary.p ? j->summary.p : "");
    rc = fclose(f) == 0 ? 0 : -1;
  }
  free(j->head.p);
  for (int i = 0; i < j->nsect; i++) free(j->sect[i].p);
  free(j->libraries.p);
  free(j->rows.p);
  free(j->compare.p);
  free(j->summary.p);
  free(j->path);
  free(j);
  return rc;
}
