/* weft-perf --explain's plot (see explain.h), drawn with chart.h: size on a log2 x axis, time
 * per call on a log10 y axis; per series one colour, the measured time solid with filled
 * markers, the predicted time dashed with hollow markers. */
#include <errno.h>
#include <stdlib.h>

#include "chart.h"
#include "explain.h"

enum { W = 900, H = 560, LEFT = 84, RIGHT = 24, TOP = 44, BOTTOM = 64 };

int perf_explain_png(const struct perf_explain* e, const char* path, const char* title) {
  struct perf_canvas c;
  struct perf_chart ch;
  perf_chart_init(&ch, NULL, LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM, 1);
  for (int i = 0; i < e->n; i++)
    for (int k = 0; k < e->s[i].n; k++) {
      const struct perf_explain_row* r = &e->s[i].rows[k];
      perf_chart_range_add(&ch, (double)r->size, r->measured_us);
      perf_chart_range_add(&ch, (double)r->size, r->predicted_us);
    }
  if (perf_chart_range_end(&ch)) return -1;
  if (perf_canvas_init(&c, W, H)) return -1;
  ch.c = &c;
  perf_chart_axes(&ch, "Time per call", "Message size", perf_chart_time_label);
  perf_canvas_text(&c, LEFT, 10, title, 2, perf_black);

  int rc = -1;
  for (int i = 0; i < e->n; i++) {
    const struct perf_explain_series* s = &e->s[i];
    double* x = malloc(sizeof(double) * (size_t)(s->n ? s->n : 1) * 3);
    if (!x) goto out;
    double *meas = x + s->n, *pred = x + 2 * s->n;
    for (int k = 0; k < s->n; k++) {
      x[k] = (double)s->rows[k].size;
      meas[k] = s->rows[k].measured_us;
      pred[k] = s->rows[k].predicted_us;
    }
    struct perf_rgb col = perf_palette[i % perf_npalette];
    perf_chart_series(&ch, x, meas, s->n, col, 0, 0);
    perf_chart_series(&ch, x, pred, s->n, col, 5, 1);
    perf_chart_legend(&ch, s->label, col, 0, 0);
    free(x);
  }
  perf_canvas_text(&c, LEFT + 12, TOP + 10 + 15 * ch.nlegend, "solid: measured, dashed: predicted",
                   1, perf_black);
  rc = perf_canvas_save(&c, path);
out:;
  int saved = errno;
  perf_canvas_free(&c);
  errno = saved;
  return rc;
}
