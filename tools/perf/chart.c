/* Canvas (cairo) and charts for weft-perf's plots (see chart.h). */
#include "chart.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


const struct perf_rgb perf_black = {0, 0, 0}, perf_white = {255, 255, 255},
                      perf_grid_grey = {225, 225, 225};
const struct perf_rgb perf_palette[] = {{31, 119, 180},  {214, 39, 40},  {44, 160, 44},
                                        {148, 103, 189}, {255, 127, 14}, {140, 86, 75},
                                        {227, 119, 194}, {23, 190, 207}};
const int perf_npalette = (int)(sizeof perf_palette / sizeof perf_palette[0]);

/* ---- canvas ---- */

#ifdef WEFT_PERF_HAVE_CAIRO
#include <cairo.h>

int perf_charts_available(void) { return 1; }

int perf_canvas_init(struct perf_canvas* c, int w, int h) {
  memset(c, 0, sizeof *c);
  c->w = w;
  c->h = h;
  cairo_surface_t* sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
  if (cairo_surface_status(sf) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(sf);
    errno = ENOMEM;
    return -1;
  }
  cairo_t* cr = cairo_create(sf);
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
    errno = ENOMEM;
    return -1;
  }
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  c->surface = sf;
  c->cr = cr;
  return 0;
}

void perf_canvas_free(struct perf_canvas* c) {
  if (c->cr) cairo_destroy(c->cr);
  if (c->surface) cairo_surface_destroy(c->surface);
  c->cr = c->surface = NULL;
}

int perf_canvas_save(const struct perf_canvas* c, const char* path) {
  cairo_surface_flush(c->surface);
  cairo_status_t st = cairo_surface_write_to_png(c->surface, path);
  if (st == CAIRO_STATUS_SUCCESS) return 0;
  errno = st == CAIRO_STATUS_NO_MEMORY ? ENOMEM : EIO;
  return -1;
}

static void set_colour(cairo_t* cr, struct perf_rgb col) {
  cairo_set_source_rgb(cr, col.r / 255.0, col.g / 255.0, col.b / 255.0);
}

void perf_canvas_rect(struct perf_canvas* c, int x0, int y0, int x1, int y1, struct perf_rgb col) {
  cairo_t* cr = c->cr;
  set_colour(cr, col);
  cairo_rectangle(cr, x0, y0, x1 - x0 + 1, y1 - y0 + 1);
  cairo_fill(cr);
}

void perf_canvas_line(struct perf_canvas* c, int x0, int y0, int x1, int y1, int width, int dash,
                      struct perf_rgb col) {
  cairo_t* cr = c->cr;
  set_colour(cr, col);
  cairo_set_line_width(cr, width);
  double d = dash;
  cairo_set_dash(cr, &d, dash > 0 ? 1 : 0, 0);
  /* Odd widths on pixel centres, so 1-pixel grid lines stay sharp. */
  double off = width % 2 ? 0.5 : 0;
  cairo_move_to(cr, x0 + off, y0 + off);
  cairo_line_to(cr, x1 + off, y1 + off);
  cairo_stroke(cr);
  cairo_set_dash(cr, NULL, 0, 0);
}

int perf_canvas_text(struct perf_canvas* c, int x, int y, const char* s, int scale,
                     struct perf_rgb col) {
  cairo_t* cr = c->cr;
  cairo_set_font_size(cr, 11.0 * scale);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  cairo_text_extents_t te;
  cairo_text_extents(cr, s, &te);
  set_colour(cr, col);
  cairo_move_to(cr, x, y + fe.ascent);
  cairo_show_text(cr, s);
  return (int)lround(te.x_advance);
}

int perf_canvas_text_width(struct perf_canvas* c, const char* s, int scale) {
  cairo_set_font_size(c->cr, 11.0 * scale);
  cairo_text_extents_t te;
  cairo_text_extents(c->cr, s, &te);
  return (int)lround(te.x_advance);
}

#else /* no cairo: no charts (weft-perf refuses --plot and --explain-png) */

int perf_charts_available(void) { return 0; }

int perf_canvas_init(struct perf_canvas* c, int w, int h) {
  memset(c, 0, sizeof *c);
  c->w = w;
  c->h = h;
  errno = ENOTSUP;
  return -1;
}

void perf_canvas_free(struct perf_canvas* c) { (void)c; }

int perf_canvas_save(const struct perf_canvas* c, const char* path) {
  (void)c, (void)path;
  errno = ENOTSUP;
  return -1;
}

void perf_canvas_rect(struct perf_canvas* c, int x0, int y0, int x1, int y1, struct perf_rgb col) {
  (void)c, (void)x0, (void)y0, (void)x1, (void)y1, (void)col;
}

void perf_canvas_line(struct perf_canvas* c, int x0, int y0, int x1, int y1, int width, int dash,
                      struct perf_rgb col) {
  (void)c, (void)x0, (void)y0, (void)x1, (void)y1, (void)width, (void)dash, (void)col;
}

int perf_canvas_text(struct perf_canvas* c, int x, int y, const char* s, int scale,
                     struct perf_rgb col) {
  (void)c, (void)x, (void)y, (void)col;
  return (int)strlen(s) * 6 * scale;
}

int perf_canvas_text_width(struct perf_canvas* c, const char* s, int scale) {
  (void)c;
  return (int)strlen(s) * 6 * scale;
}

#endif

/* ---- charts ---- */

void perf_chart_size_label(double bytes, char* buf, size_t len) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
  snprintf(buf, len, "%.0f %s", bytes, units[u]);
}

void perf_chart_time_label(double us, char* buf, size_t len) {
  if (us < 1000)
    snprintf(buf, len, "%g \u00b5s", us);
  else if (us < 1e6)
    snprintf(buf, len, "%g ms", us / 1e3);
  else
    snprintf(buf, len, "%g s", us / 1e6);
}

void perf_chart_init(struct perf_chart* ch, struct perf_canvas* c, int left, int top, int width,
                     int height, int ylog) {
  memset(ch, 0, sizeof *ch);
  ch->c = c;
  ch->left = left;
  ch->top = top;
  ch->width = width;
  ch->height = height;
  ch->ylog = ylog;
  ch->xmin = ch->ymin = INFINITY;
  ch->xmax = ch->ymax = -INFINITY;
}

/* The axis coordinates of a point; 0 when it can be plotted. */
static int axis_xy(const struct perf_chart* ch, double bytes, double y, double* ax, double* ay) {
  if (!(bytes >= 1) || !isfinite(y) || (ch->ylog && !(y > 0)) || (!ch->ylog && y < 0)) return -1;
  *ax = log2(bytes);
  *ay = ch->ylog ? log10(y) : y;
  return 0;
}

void perf_chart_range_add(struct perf_chart* ch, double bytes, double y) {
  double ax, ay;
  if (axis_xy(ch, bytes, y, &ax, &ay)) return;
  ch->have = 1;
  if (ax < ch->xmin) ch->xmin = ax;
  if (ax > ch->xmax) ch->xmax = ax;
  if (ay < ch->ymin) ch->ymin = ay;
  if (ay > ch->ymax) ch->ymax = ay;
}

/* 1, 2 or 5 times a power of ten, at least v. */
static double nice_step(double v) {
  double p = pow(10, floor(log10(v)));
  return v <= p ? p : v <= 2 * p ? 2 * p : v <= 5 * p ? 5 * p : 10 * p;
}

int perf_chart_range_end(struct perf_chart* ch) {
  if (!ch->have) {
    errno = EINVAL;
    return -1;
  }
  if (ch->xmax - ch->xmin < 1) ch->xmin -= 0.5, ch->xmax += 0.5;
  if (ch->ylog) {
    ch->ymin = floor(ch->ymin);
    ch->ymax = ceil(ch->ymax);
    if (ch->ymax - ch->ymin < 1) ch->ymax = ch->ymin + 1;
    ch->ystep = 1;
  } else {
    ch->ymin = 0;
    double top = ch->ymax > 0 ? ch->ymax : 1;
    ch->ystep = nice_step(top / 5);
    ch->ymax = ceil(top / ch->ystep - 1e-9) * ch->ystep;
  }
  return 0;
}

int perf_chart_xticks(const struct perf_chart* ch, double* ticks, int max) {
  int step = 1;
  while ((ch->xmax - ch->xmin) / step > 12) step *= 2;
  double last = floor(ch->xmax + 1e-9); /* the largest size, a power of two on the axis */
  int n = 0;
  for (double x = ceil(ch->xmin - 1e-9); x <= last + 1e-9 && n < max; x += step) ticks[n++] = x;
  if (n > 0 && ticks[n - 1] < last - 1e-9) {
    /* The last size gets its label; a tick closer than half a step makes room for it. */
    if (last - ticks[n - 1] < step / 2.0 + 1e-9) n--;
    if (n < max) ticks[n++] = last;
  }
  return n;
}

static int px_x(const struct perf_chart* ch, double ax) {
  return ch->left + (int)lround((ax - ch->xmin) / (ch->xmax - ch->xmin) * ch->width);
}

static int px_y(const struct perf_chart* ch, double ay) {
  return ch->top + ch->height - (int)lround((ay - ch->ymin) / (ch->ymax - ch->ymin) * ch->height);
}

void perf_chart_axes(struct perf_chart* ch, const char* caption, const char* xlabel,
                     void (*ylabel_fmt)(double v, char* buf, size_t len)) {
  struct perf_canvas* c = ch->c;
  int l = ch->left, t = ch->top, w = ch->width, h = ch->height;
  char lab[32];
  for (double y = ch->ymin; y <= ch->ymax + ch->ystep * 1e-6; y += ch->ystep) {
    perf_canvas_line(c, l, px_y(ch, y), l + w, px_y(ch, y), 1, 0, perf_grid_grey);
    double v = ch->ylog ? pow(10, y) : y;
    if (ylabel_fmt)
      ylabel_fmt(v, lab, sizeof lab);
    else
      snprintf(lab, sizeof lab, "%g", v);
    perf_canvas_text(c, l - 8 - perf_canvas_text_width(c, lab, 1), px_y(ch, y) - 6, lab, 1,
                     perf_black);
  }
  double ticks[64];
  int nt = perf_chart_xticks(ch, ticks, 64);
  for (int k = 0; k < nt; k++) {
    double x = ticks[k];
    perf_canvas_line(c, px_x(ch, x), t, px_x(ch, x), t + h, 1, 0, perf_grid_grey);
    perf_chart_size_label(pow(2, x), lab, sizeof lab);
    perf_canvas_text(c, px_x(ch, x) - perf_canvas_text_width(c, lab, 1) / 2, t + h + 8, lab, 1,
                     perf_black);
  }
  perf_canvas_line(c, l, t, l, t + h, 1, 0, perf_black);
  perf_canvas_line(c, l, t + h, l + w, t + h, 1, 0, perf_black);
  if (xlabel)
    perf_canvas_text(c, l + w / 2 - perf_canvas_text_width(c, xlabel, 1) / 2, t + h + 26, xlabel,
                     1, perf_black);
  if (caption) perf_canvas_text(c, 8, t - 18, caption, 1, perf_black);
}

void perf_chart_series(struct perf_chart* ch, const double* bytes, const double* y, int n,
                       struct perf_rgb col, int dash, int hollow) {
  int px = -1, py = -1;
  for (int k = 0; k < n; k++) {
    double ax, ay;
    if (axis_xy(ch, bytes[k], y[k], &ax, &ay)) {
      px = -1;
      continue;
    }
    int x = px_x(ch, ax), yy = px_y(ch, ay);
    if (px >= 0) perf_canvas_line(ch->c, px, py, x, yy, 2, dash, col);
    perf_canvas_rect(ch->c, x - 3, yy - 3, x + 3, yy + 3, col);
    if (hollow) perf_canvas_rect(ch->c, x - 1, yy - 1, x + 1, yy + 1, perf_white);
    px = x, py = yy;
  }
}

void perf_chart_legend(struct perf_chart* ch, const char* label, struct perf_rgb col, int dash,
                       int hollow) {
  int x = ch->left + 12, y = ch->top + 10 + 15 * ch->nlegend++;
  perf_canvas_line(ch->c, x, y + 6, x + 28, y + 6, 2, dash, col);
  perf_canvas_rect(ch->c, x + 11, y + 3, x + 17, y + 9, col);
  if (hollow) perf_canvas_rect(ch->c, x + 13, y + 5, x + 15, y + 7, perf_white);
  perf_canvas_text(ch->c, x + 36, y, label, 1, perf_black);
}
