/* weft-perf's charts, shared by --explain's plot (explain_png.c) and --plot (plot.c): a raster
 * canvas (rectangles, lines, dashes, a 5x7 upper-case font) saved as PNG (png.c), and charts
 * drawn on it with message size on a log2 x axis and a value on a linear or log10 y axis. No
 * dependency beyond libc and libm. */
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

struct perf_canvas {
  int w, h;
  unsigned char* px; /* w * h * 3 bytes, rows top to bottom */
};

/* A white canvas. 0, or -1 when out of memory. */
int perf_canvas_init(struct perf_canvas* c, int w, int h);
void perf_canvas_free(struct perf_canvas* c);
/* Writes the canvas as a PNG file. 0, or -1 with errno set. */
int perf_canvas_save(const struct perf_canvas* c, const char* path);

/* Drawing; anything outside the canvas is clipped. */
void perf_canvas_rect(struct perf_canvas* c, int x0, int y0, int x1, int y1, struct perf_rgb col);
/* A line `width` pixels wide; dash > 0 draws dash pixels on, dash off. */
void perf_canvas_line(struct perf_canvas* c, int x0, int y0, int x1, int y1, int width, int dash,
                      struct perf_rgb col);
/* Text with its top-left corner at (x, y), each font pixel scale x scale; lower case prints as
 * upper case, characters without a glyph as blanks. Returns the width drawn. */
int perf_canvas_text(struct perf_canvas* c, int x, int y, const char* s, int scale,
                     struct perf_rgb col);
int perf_canvas_text_width(const char* s, int scale);

/* A chart: a plot area on a canvas. x values are sizes in bytes, on a log2 axis; y values are
 * linear from 0 (ylog = 0) or on a log10 axis (ylog = 1). Only positive values are plotted on
 * a log axis. */
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

/* Tick labels: "4K", "1M" for bytes; "10US", "1MS", "2S" for microseconds. */
void perf_chart_size_label(double bytes, char* buf, size_t len);
void perf_chart_time_label(double us, char* buf, size_t len);

#endif
