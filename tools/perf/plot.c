/* weft-perf --plot (see results.h): two charts on one picture, drawn with chart.h. A series is
 * the rows of one library and one test (collective, type, op, root) in measurement order; rows
 * of size 0 have no place on the log2 size axis and are left out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "results.h"

enum { W = 900, LEFT = 84, RIGHT = 24, TOP = 64, CHART_H = 320, GAP = 100, BOTTOM = 64 };
enum { H = TOP + CHART_H + GAP + CHART_H + BOTTOM };

struct series {
  int lib;
  int first; /* index of its first row: the test */
  int test;  /* index among the distinct tests */
};

static void gbps_label(double v, char* buf, size_t len) { snprintf(buf, len, "%g", v); }

int perf_plot_png(const struct perf_results* rs, const char* const labels[2], const char* path,
                  const char* title) {
  struct perf_chart bw, lat;
  perf_chart_init(&bw, NULL, LEFT, TOP, W - LEFT - RIGHT, CHART_H, 0);
  perf_chart_init(&lat, NULL, LEFT, TOP + CHART_H + GAP, W - LEFT - RIGHT, CHART_H, 1);
  for (int i = 0; i < rs->n; i++) {
    perf_chart_range_add(&bw, (double)rs->r[i].size, rs->r[i].oop.busbw);
    perf_chart_range_add(&lat, (double)rs->r[i].size, rs->r[i].oop.time_us);
  }
  if (perf_chart_range_end(&bw) || perf_chart_range_end(&lat)) return -1;

  /* The series, in order of first appearance; the tests, likewise. */
  struct series* s = calloc((size_t)rs->n, sizeof *s);
  int* of_row = calloc((size_t)rs->n, sizeof *of_row);
  double* x = calloc((size_t)rs->n * 3, sizeof *x);
  struct perf_canvas c = {0};
  int rc = -1;
  if (!s || !of_row || !x || perf_canvas_init(&c, W, H)) goto out;
  int ns = 0, ntests = 0, libs_seen = 0;
  for (int i = 0; i < rs->n; i++) {
    const struct perf_result* r = &rs->r[i];
    libs_seen |= 1 << (r->lib & 1);
    int k = 0;
    while (k < ns && !(s[k].lib == r->lib && perf_result_same_test(&rs->r[s[k].first], r))) k++;
    if (k == ns) {
      int t = 0;
      while (t < ns && !perf_result_same_test(&rs->r[s[t].first], r)) t++;
      s[ns] = (struct series){r->lib, i, t < ns ? s[t].test : ntests++};
      ns++;
    }
    of_row[i] = k;
  }
  int two_libs = libs_seen == 3;

  bw.c = lat.c = &c;
  perf_chart_axes(&bw, "Bus bandwidth, out of place (GB/s)", "Message size", gbps_label);
  perf_chart_axes(&lat, "Time per call, out of place", "Message size", perf_chart_time_label);
  perf_canvas_text(&c, LEFT, 12, title, 2, perf_black);
  double *bytes = x, *busbw = x + rs->n, *time = x + 2 * rs->n;
  for (int k = 0; k < ns; k++) {
    int n = 0;
    for (int i = 0; i < rs->n; i++) {
      if (of_row[i] != k) continue;
      bytes[n] = (double)rs->r[i].size;
      busbw[n] = rs->r[i].oop.busbw;
      time[n] = rs->r[i].oop.time_us;
      n++;
    }
    /* One test: a colour per library. Several: a colour per test, library B dashed. */
    int b_style = two_libs && s[k].lib == 1;
    struct perf_rgb col = perf_palette[(ntests > 1 ? s[k].test : s[k].lib) % perf_npalette];
    int dash = b_style && ntests > 1 ? 6 : 0;
    perf_chart_series(&bw, bytes, busbw, n, col, dash, b_style);
    perf_chart_series(&lat, bytes, time, n, col, dash, b_style);
    char label[160], test[96];
    perf_result_test_label(&rs->r[s[k].first], test, sizeof test);
    const char* lib = labels && labels[s[k].lib & 1] ? labels[s[k].lib & 1] : "";
    if (two_libs)
      snprintf(label, sizeof label, "%s: %s", lib, test);
    else
      snprintf(label, sizeof label, "%s", test);
    perf_chart_legend(&bw, label, col, dash, b_style);
  }
  rc = perf_canvas_save(&c, path);
out:;
  int saved = errno;
  perf_canvas_free(&c);
  free(s);
  free(of_row);
  free(x);
  errno = saved;
  return rc;
}
