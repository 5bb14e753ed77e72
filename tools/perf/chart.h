/* weft-perf's charts, shared by --explain's plot (explain_png.c) and --plot (plot.c): a canvas
 * drawn with cairo (lines, rectangles, text in the system's sans-serif font, saved as a
 * compressed PNG by cairo), and charts on it with message size on a log2 x axis and a value on
 * a linear or log10 y axis. cairo (libcairo2-dev) is optional at build time: without it
 * (WEFT_PERF_HAVE_CAIRO unset) perf_canvas_init fails with ENOTSUP and weft-perf refuses --plot
 * and --explain-png with a message saying so. */
#ifndef WEFT_PERF_CHART_H
#define WEFT_PERF_CHART_H

#include <stddef.h>

struct perf_rgb {
  unsigned char r, g, b;
};

extern const struct perf_rgb perf_black, perf_white, perf_grid_grey;
/* Series colours, in order (the first is (31, 119, 180)). */
extern const struct perf_rgb perf_palette[];
extern const int perf_npalette;

/* 1 when this build draws charts (cairo was found). */
int perf_charts_available(void);

struct perf_canvas {
  int w, h;
  void* surface; /* cairo_surface_t*, cairo_t* (NULL when not drawn) */
  void* cr;
};

/* A white canvas. 0, or -1 with errno (ENOMEM; ENOTSUP in a build without cairo). */
int perf_canvas_init(struct perf_canvas* c, int w, int h);
void perf_canvas_free(struct perf_canvas* c);
/* Writes the canvas as a PNG file. 0, or -1 with errno set. */
int perf_canvas_save(const struct perf_canvas* c, const char* path);

/* Drawing; anything outside the canvas is clipped. */
void perf_canvas_rect(struct perf_canvas* c, int x0, int y0, int x1, int y1, struct perf_rgb col);
/* A line `width` pixels wide; dash > 0 draws dash pixels on, dash off. */
void perf_canvas_line(struct perf_canvas* c, int x0, int y0, int x1, int y1, int width, int dash,
                      struct perf_rgb col);
/* Text (UTF-8, as written) with its top-left corner at (x, y), `scale` times the base size
 * (11 px). Returns the width drawn. */
int perf_canvas_text(struct perf_canvas* c, int x, int y, const char* s, int scale,
                     struct perf_rgb col);
int perf_canvas_text_width(struct perf_canvas* c, const char* s, int scale);

/* A chart: a plot area on a canvas. x values are sizes in bytes, on a log2 axis (a size of 0
 * has no place on it and is not plotted); y values are linear from 0 (ylog = 0) or on a log10
 * axis (ylog = 1). Only positive values are plotted on a log axis. */
struct perf_chart {
  struct perf_canvas* c;
  int left, top, width, height; /* the plot area, in pixels */
  int ylog;
  double xmin, xmax; /* log2(bytes) */
  double ymin, ymax; /* y, or log10(y) on a log axis */
  double ystep;      /* linear axis: distance between y ticks */
  int have;          /* a point was added to the range */
  int nlegend;       /* legend lines drawn so far */
};

/* Sets the plot area and clears the range. */
void perf_chart_init(struct perf_chart* ch, struct perf_canvas* c, int left, int top, int width,
                     int height, int ylog);
/* Widens the range to hold (bytes, y); values that cannot be plotted are ignored. */
void perf_chart_range_add(struct perf_chart* ch, double bytes, double y);
/* Rounds the range out to whole decades / nice steps. -1 when no point was added. */
int perf_chart_range_end(struct perf_chart* ch);
/* Grid, ticks, axis lines and labels. The y ticks are labelled with ylabel_fmt (NULL: "%g");
 * caption (what y is) goes above the y axis, xlabel below the x axis; either may be NULL. */
void perf_chart_axes(struct perf_chart* ch, const char* caption, const char* xlabel,
                     void (*ylabel_fmt)(double v, char* buf, size_t len));
/* A polyline through the plottable points (a gap where a value cannot be plotted), with a
 * square marker at each point: filled, or hollow. */
void perf_chart_series(struct perf_chart* ch, const double* bytes, const double* y, int n,
                       struct perf_rgb col, int dash, int hollow);
/* One more legend line at the plot's top left: a line sample and the label. */
void perf_chart_legend(struct perf_chart* ch, const char* label, struct perf_rgb col, int dash,
                       int hollow);

/* The x ticks that get a label (log2 of the size): every step-th from the first whole power of
 * two, and always the last size; a tick too close to the last is dropped. Returns how many
 * (at most max). */
int perf_chart_xticks(const struct perf_chart* ch, double* ticks, int max);

/* Tick labels: "32 B", "4 KiB", "1 MiB" for bytes; "10 µs", "1 ms", "2 s" for microseconds. */
void perf_chart_size_label(double bytes, char* buf, size_t len);
void perf_chart_time_label(double us, char* buf, size_t len);

#endif
