/* weft-perf's charts (tools/perf/chart.c, explain_png.c, plot.c), drawn with cairo: the explain
 * plot of two series is a PNG that reads back (through cairo's PNG reader) at the size drawn,
 * with the first series' colour in it; tick labels are in proper case and units ("4 KiB",
 * "100 ms", "0.1 µs"); a size of 0 has no place on the log2 axis (the range starts at the
 * smallest positive size); the last size is always labelled; the --plot of a run with size-0
 * rows (what --all gives all_gather) writes a PNG well under 200 KB. A build without cairo
 * skips (77). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chart.h"
#include "explain.h"
#include "results.h"
#include "testutil.h"

#ifdef WEFT_PERF_HAVE_CAIRO
#include <cairo.h>
#endif

static void expect_str(const char* got, const char* want) {
  if (strcmp(got, want)) {
    fprintf(stderr, "label '%s', want '%s'\n", got, want);
    exit(1);
  }
}

int main(void) {
  char lab[32];
  perf_chart_size_label(4096, lab, sizeof lab);
  expect_str(lab, "4 KiB");
  perf_chart_size_label(32, lab, sizeof lab);
  expect_str(lab, "32 B");
  perf_chart_size_label(1 << 30, lab, sizeof lab);
  expect_str(lab, "1 GiB");
  perf_chart_time_label(0.1, lab, sizeof lab);
  expect_str(lab, "0.1 \u00b5s");
  perf_chart_time_label(100000, lab, sizeof lab);
  expect_str(lab, "100 ms");
  perf_chart_time_label(2e6, lab, sizeof lab);
  expect_str(lab, "2 s");

  /* Size 0 is not on the axis; 32 B .. 64 MiB in steps of 4x: the last (64 MiB, 2^26) is
   * labelled though 26 - 5 is not a multiple of the tick step. */
  struct perf_chart ch;
  perf_chart_init(&ch, NULL, 0, 0, 800, 300, 0);
  perf_chart_range_add(&ch, 0, 5.0);
  EXPECT(!ch.have);
  uint64_t rng = test_seed(0x51ce);
  for (int k = 5; k <= 25; k += 2)
    perf_chart_range_add(&ch, (double)(1u << k), 1 + (double)(test_rand(&rng) % 100));
  perf_chart_range_add(&ch, 0, 5.0);
  EXPECT(perf_chart_range_end(&ch) == 0);
  EXPECT(ch.xmin == 5.0);
  double ticks[64];
  int nt = perf_chart_xticks(&ch, ticks, 64);
  EXPECT(nt >= 2 && ticks[0] == 5.0 && ticks[nt - 1] == 25.0);
  perf_chart_init(&ch, NULL, 0, 0, 800, 300, 0);
  perf_chart_range_add(&ch, 8, 1);
  perf_chart_range_add(&ch, (double)(1u << 26), 2);
  EXPECT(perf_chart_range_end(&ch) == 0);
  nt = perf_chart_xticks(&ch, ticks, 64);
  EXPECT(ticks[nt - 1] == 26.0);
  for (int k = 1; k < nt; k++) EXPECT(ticks[k] > ticks[k - 1]);

  if (!perf_charts_available()) {
    printf("skip: weft-perf built without cairo: no PNG to check\n");
    return TEST_SKIP_RC;
  }
#ifdef WEFT_PERF_HAVE_CAIRO
  char path[64];
  snprintf(path, sizeof path, "/tmp/weft-png-%d.png", (int)getpid());
  struct perf_explain e = {0};
  perf_explain_begin(&e, "all_reduce float sum");
  perf_explain_begin(&e, "broadcast float");
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < 12; k++) {
      struct perf_explain_series* se = &e.s[s];
      if (se->n == se->cap) {
        se->cap = 16;
        se->rows = realloc(se->rows, (size_t)se->cap * sizeof *se->rows);
      }
      se->rows[se->n++] = (struct perf_explain_row){(size_t)8 << (2 * k), 1, 1, 2, 1,
                                                    10.0 + k * k * 40.0 * (s + 1),
                                                    12.0 + k * k * 38.0 * (s + 1), 4};
    }
  EXPECT(perf_explain_png(&e, path, "test plot") == 0);
  cairo_surface_t* sf = cairo_image_surface_create_from_png(path);
  EXPECT(cairo_surface_status(sf) == CAIRO_STATUS_SUCCESS);
  int w = cairo_image_surface_get_width(sf), h = cairo_image_surface_get_height(sf);
  EXPECT(w == 900 && h == 560);
  const unsigned char* px = cairo_image_surface_get_data(sf);
  int stride = cairo_image_surface_get_stride(sf), coloured = 0;
  for (int y = 0; y < h && !coloured; y++)
    for (int x = 0; x < w && !coloured; x++) {
      uint32_t v = *(const uint32_t*)(px + (size_t)y * (size_t)stride + 4 * (size_t)x);
      coloured = (v & 0xffffff) == (31u << 16 | 119u << 8 | 180u);
    }
  EXPECT(coloured);
  cairo_surface_destroy(sf);
  /* Nothing to plot is an error, not an empty picture. */
  struct perf_explain empty = {0};
  EXPECT(perf_explain_png(&empty, path, "empty") == -1);
  perf_explain_free(&e);

  /* --plot of eight collectives with size-0 rows, 0 .. 128 MiB: compressed, under 200 KB. */
  struct perf_results rs = {0};
  for (int c = 0; c < 8; c++)
    for (int k = -1; k <= 27; k++) {
      struct perf_result r = {0};
      r.coll = c;
      r.size = k < 0 ? 0 : (size_t)1 << k;
      r.count = r.size / 4;
      r.oop.time_us = 5 + (double)r.size / 1e3 * (1 + c);
      r.oop.busbw = (double)r.size / r.oop.time_us / 1e3;
      perf_results_add(&rs, &r);
    }
  const char* labels[2] = {"weft", NULL};
  EXPECT(perf_plot_png(&rs, labels, path, "weft-perf: weft, 4 ranks") == 0);
  struct stat st;
  EXPECT(stat(path, &st) == 0);
  printf("--plot of 8 collectives x 29 sizes: %lld bytes\n", (long long)st.st_size);
  EXPECT(st.st_size > 1000 && st.st_size < 200 * 1000);
  perf_results_free(&rs);
  unlink(path);
#endif
  return 0;
}
