/* Canvas and charts for weft-perf's plots (see chart.h). */
#include "chart.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "png.h"

const struct perf_rgb perf_black = {0, 0, 0}, perf_white = {255, 255, 255},
                      perf_grid_grey = {225, 225, 225};
const struct perf_rgb perf_palette[] = {{31, 119, 180},  {214, 39, 40},  {44, 160, 44},
                                        {148, 103, 189}, {255, 127, 14}, {140, 86, 75},
                                        {227, 119, 194}, {23, 190, 207}};
const int perf_npalette = (int)(sizeof perf_palette / sizeof perf_palette[0]);

/* ---- canvas ---- */

int perf_canvas_init(struct perf_canvas* c, int w, int h) {
  c->w = w;
  c->h = h;
  c->px = w > 0 && h > 0 ? malloc((size_t)w * (size_t)h * 3) : NULL;
  if (!c->px) return -1;
  memset(c->px, 255, (size_t)w * (size_t)h * 3);
  return 0;
}

void perf_canvas_free(struct perf_canvas* c) {
  free(c->px);
  c->px = NULL;
}

int perf_canvas_save(const struct perf_canvas* c, const char* path) {
  FILE* f = fopen(path, "wb");
  if (!f) return -1;
  int rc = perf_png_write(f, c->px, c->w, c->h);
  int saved = errno;
  if (fclose(f) != 0 && rc == 0) rc = -1, saved = errno;
  errno = saved;
  return rc;
}

static void plot(struct perf_canvas* c, int x, int y, struct perf_rgb col) {
  if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
  unsigned char* p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
  p[0] = col.r;
  p[1] = col.g;
  p[2] = col.b;
}

void perf_canvas_rect(struct perf_canvas* c, int x0, int y0, int x1, int y1, struct perf_rgb col) {
  for (int y = y0; y <= y1; y++)
    for (int x = x0; x <= x1; x++) plot(c, x, y, col);
}

void perf_canvas_line(struct perf_canvas* c, int x0, int y0, int x1, int y1, int width, int dash,
                      struct perf_rgb col) {
  int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy, step = 0;
  for (;;) {
    if (dash <= 0 || (step / dash) % 2 == 0)
      perf_canvas_rect(c, x0 - (width - 1) / 2, y0 - (width - 1) / 2, x0 + width / 2,
                       y0 + width / 2, col);
    step++;
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

/* 5x7 glyphs, rows top to bottom, '#' set. */
static const struct {
  char ch;
  const char* rows;
} font[] = {
    {'0', ".###.#...##..###.#.###..##...#.###."}, {'1', "..#...##....#....#....#....#...###."},
    {'2', ".###.#...#....#...#...#...#...#####"}, {'3', "#####...#...#.....#.....##...#.###."},
    {'4', "...#...##..#.#.#..#.#####...#....#."}, {'5', "######....####.....#....##...#.###."},
    {'6', "..##..#...#....####.#...##...#.###."}, {'7', "#####....#...#...#...#....#....#..."},
    {'8', ".###.#...##...#.###.#...##...#.###."}, {'9', ".###.#...##...#.####....#...#..##.."},
    {'A', ".###.#...##...#######...##...##...#"}, {'B', "####.#...##...#####.#...##...#####."},
    {'C', ".###.#...##....#....#....#...#.###."}, {'D', "###..#..#.#...##...##...##..#.###.."},
    {'E', "######....#....####.#....#....#####"}, {'F', "######....#....####.#....#....#...."},
    {'G', ".###.#...##....#.####...##...#.####"}, {'H', "#...##...##...#######...##...##...#"},
    {'I', ".###...#....#....#....#....#...###."}, {'J', "..###...#....#....#....#.#..#..##.."},
    {'K', "#...##..#.#.#..##...#.#..#..#.#...#"}, {'L', "#....#....#....#....#....#....#####"},
    {'M', "#...###.###.#.##.#.##...##...##...#"}, {'N', "#...##...###..##.#.##..###...##...#"},
    {'O', ".###.#...##...##...##...##...#.###."}, {'P', "####.#...##...#####.#....#....#...."},
    {'Q', ".###.#...##...##...##.#.##..#..##.#"}, {'R', "####.#...##...#####.#.#..#..#.#...#"},
    {'S', ".#####....#.....###.....#....#####."}, {'T', "#####..#....#....#....#....#....#.."},
    {'U', "#...##...##...##...##...##...#.###."}, {'V', "#...##...##...##...##...#.#.#...#.."},
    {'W', "#...##...##...##.#.##.#.##.#.#.#.#."}, {'X', "#...##...#.#.#...#...#.#.#...##...#"},
    {'Y', "#...##...#.#.#...#....#....#....#.."}, {'Z', "#####....#...#...#...#...#....#####"},
    {'.', "..........................##...##.."}, {'-', "...............#####..............."},
    {'/', "....#....#...#...#...#...#....#...."}, {'(', "...#...#...#....#....#.....#.....#."},
    {')', ".#.....#.....#....#....#...#...#..."}, {':', "......##...##........##...##......."},
    {'_', "..............................#####"}, {',', ".....................##....#...#..."},
    {'=', "..........#####.....#####.........."}, {'%', "##...##..#...#...#...#...#..##...##"},
    {'*', ".......#..#.#.#.###.#.#.#..#......."}, {'>', ".#.....#.....#.....#...#...#...#..."},
    {'<', "...#...#...#...#.....#.....#.....#."}, {'#', ".#.#..#.#.#####.#.#.#####.#.#..#.#."},
    {'+', "......#....#..#####..#....#........"}, {'[', "###..#....#....#....#....#....###.."},
    {']', "..###....#....#....#....#....#..###"}, {'\'', "..#....#..........................."},
};

static const char* glyph(char ch) {
  if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
  for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
    if (font[i].ch == ch) return font[i].rows;
  return NULL;
}

int perf_canvas_text(struct perf_canvas* c, int x, int y, const char* s, int scale,
                     struct perf_rgb col) {
  int x0 = x;
  for (; *s; s++, x += 6 * scale) {
    const char* g = glyph(*s);
    if (!g) continue;
    size_t len = strlen(g);
    for (int r = 0; r < 7; r++)
      for (int k = 0; k < 5; k++) {
        size_t i = (size_t)(r * 5 + k);
        if (i < len && g[i] == '#')
          perf_canvas_rect(c, x + k * scale, y + r * scale, x + k * scale + scale - 1,
                           y + r * scale + scale - 1, col);
      }
  }
  return x - x0;
}

int perf_canvas_text_width(const char* s, int scale) { return (int)strlen(s) * 6 * scale; }

/* ---- charts ---- */

void perf_chart_size_label(double bytes, char* buf, size_t len) {
  static const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
  snprintf(buf, len, "%.0f%s", bytes, units[u]);
}

void perf_chart_time_label(double us, char* buf, size_t len) {
  if (us < 1000)
    snprintf(buf, len, "%gUS", us);
  else if (us < 1e6)
    snprintf(buf, len, "%gMS", us / 1e3);
  else
    snprintf(buf, len, "%gS", us / 1e6);
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
  if (!(bytes >= 0) || !isfinite(y) || (ch->ylog && !(y > 0)) || (!ch->ylog && y < 0)) return -1;
  *ax = log2(bytes >= 1 ? bytes : 1);
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
    perf_canvas_text(c, l - 8 - perf_canvas_text_width(lab, 1), px_y(ch, y) - 3, lab, 1,
                     perf_black);
  }
  int step = 1;
  while ((ch->xmax - ch->xmin) / step > 12) step *= 2;
  for (double x = ceil(ch->xmin); x <= ch->xmax + 1e-9; x += step) {
    perf_canvas_line(c, px_x(ch, x), t, px_x(ch, x), t + h, 1, 0, perf_grid_grey);
    perf_chart_size_label(pow(2, x), lab, sizeof lab);
    perf_canvas_text(c, px_x(ch, x) - perf_canvas_text_width(lab, 1) / 2, t + h + 8, lab, 1,
                     perf_black);
  }
  perf_canvas_line(c, l, t, l, t + h, 1, 0, perf_black);
  perf_canvas_line(c, l, t + h, l + w, t + h, 1, 0, perf_black);
  if (xlabel)
    perf_canvas_text(c, l + w / 2 - perf_canvas_text_width(xlabel, 1) / 2, t + h + 24, xlabel, 1,
                     perf_black);
  if (caption) perf_canvas_text(c, 8, t - 16, caption, 1, perf_black);
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
  int x = ch->left + 12, y = ch->top + 10 + 14 * ch->nlegend++;
  perf_canvas_line(ch->c, x, y + 3, x + 28, y + 3, 2, dash, col);
  perf_canvas_rect(ch->c, x + 11, y, x + 17, y + 6, col);
  if (hollow) perf_canvas_rect(ch->c, x + 13, y + 2, x + 15, y + 4, perf_white);
  perf_canvas_text(ch->c, x + 36, y, label, 1, perf_black);
}
