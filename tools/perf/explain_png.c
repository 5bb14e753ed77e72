/* weft-perf --explain's plot: a small raster canvas (lines, dashes, markers, a 5x7 font) and a
 * dependency-free PNG writer (8-bit RGB, zlib "stored" blocks, CRC-32 and Adler-32 computed
 * here), so the tool needs no zlib or plotting library.
 *
 * The plot: size on a log2 x axis, time per call on a log10 y axis; per series one colour, the
 * measured time solid with filled markers, the predicted time dashed with hollow markers. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"

/* ---- PNG ---- */

static uint32_t crc_table[256];

static void crc_init(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    crc_table[n] = c;
  }
}

static uint32_t crc_update(uint32_t crc, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

static void be32(unsigned char* p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* One chunk: length, type, data, CRC over type and data. */
static int chunk(FILE* f, const char* type, const unsigned char* data, size_t len) {
  unsigned char head[8];
  be32(head, (uint32_t)len);
  memcpy(head + 4, type, 4);
  uint32_t crc = crc_update(0xffffffffu, head + 4, 4);
  crc = crc_update(crc, data, len) ^ 0xffffffffu;
  unsigned char tail[4];
  be32(tail, crc);
  return fwrite(head, 1, 8, f) == 8 && (len == 0 || fwrite(data, 1, len, f) == len) &&
                 fwrite(tail, 1, 4, f) == 4
             ? 0
             : -1;
}

int perf_png_write(FILE* f, const unsigned char* rgb, int w, int h) {
  if (w <= 0 || h <= 0) return -1;
  crc_init();
  size_t row = 1 + 3 * (size_t)w, raw_len = row * (size_t)h;
  size_t nblocks = (raw_len + 65534) / 65535;
  size_t zlen = 2 + raw_len + 5 * nblocks + 4;
  unsigned char* z = malloc(zlen);
  if (!z) return -1;
  /* zlib header (deflate, 32 KiB window, no preset dictionary, check bits), stored blocks. */
  size_t o = 0;
  z[o++] = 0x78;
  z[o++] = 0x01;
  uint32_t a = 1, b = 0; /* Adler-32 of the raw data */
  size_t done = 0, in_row = 0;
  int y = 0;
  while (done < raw_len) {
    size_t n = raw_len - done < 65535 ? raw_len - done : 65535;
    z[o++] = done + n == raw_len ? 1 : 0; /* BFINAL, BTYPE 00 */
    z[o++] = (unsigned char)(n & 0xff);
    z[o++] = (unsigned char)(n >> 8);
    z[o++] = (unsigned char)(~n & 0xff);
    z[o++] = (unsigned char)((~n >> 8) & 0xff);
    for (size_t i = 0; i < n; i++) {
      /* Each row: filter type 0, then its pixels. */
      unsigned char v = in_row == 0 ? 0 : rgb[(size_t)y * 3 * (size_t)w + in_row - 1];
      if (++in_row == row) in_row = 0, y++;
      z[o++] = v;
      a = (a + v) % 65521;
      b = (b + a) % 65521;
    }
    done += n;
  }
  be32(z + o, (b << 16) | a);
  o += 4;
  unsigned char ihdr[13];
  be32(ihdr, (uint32_t)w);
  be32(ihdr + 4, (uint32_t)h);
  ihdr[8] = 8;  /* bit depth */
  ihdr[9] = 2;  /* colour type: RGB */
  ihdr[10] = 0; /* deflate */
  ihdr[11] = 0; /* adaptive filtering */
  ihdr[12] = 0; /* no interlace */
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  int rc = fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) == 0 &&
                   chunk(f, "IDAT", z, o) == 0 && chunk(f, "IEND", NULL, 0) == 0
               ? 0
               : -1;
  free(z);
  return rc;
}

/* ---- canvas ---- */

enum { W = 900, H = 560, LEFT = 84, RIGHT = 24, TOP = 44, BOTTOM = 64 };

typedef struct {
  unsigned char px[H][W][3];
} canvas;

typedef struct {
  unsigned char r, g, b;
} rgb_t;

static const rgb_t black = {0, 0, 0}, grid = {225, 225, 225}, white = {255, 255, 255};
static const rgb_t palette[] = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {148, 103, 189},
                                {255, 127, 14}, {140, 86, 75}, {227, 119, 194}, {23, 190, 207}};
enum { NPALETTE = sizeof palette / sizeof palette[0] };

static void plot(canvas* c, int x, int y, rgb_t col) {
  if (x < 0 || y < 0 || x >= W || y >= H) return;
  c->px[y][x][0] = col.r;
  c->px[y][x][1] = col.g;
  c->px[y][x][2] = col.b;
}

static void rect(canvas* c, int x0, int y0, int x1, int y1, rgb_t col) {
  for (int y = y0; y <= y1; y++)
    for (int x = x0; x <= x1; x++) plot(c, x, y, col);
}

/* A line of the given width; dash > 0 draws dash pixels on, dash off. */
static void line(canvas* c, int x0, int y0, int x1, int y1, int width, int dash, rgb_t col) {
  int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy, step = 0;
  for (;;) {
    if (dash <= 0 || (step / dash) % 2 == 0)
      rect(c, x0 - (width - 1) / 2, y0 - (width - 1) / 2, x0 + width / 2, y0 + width / 2, col);
    step++;
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

/* 5x7 glyphs, rows top to bottom, '#' set. Lower case prints as upper case. */
static const struct {
  char ch;
  const char* rows;
} font[] = {
    {'0', ".###.#...##..###.#.###..##...#.###."},
    {'1', "..#...##....#....#....#....#...###."},
    {'2', ".###.#...#....#...#...#...#...#####"},
    {'3', "#####...#...#.....#.....##...#.###."},
    {'4', "...#...##..#.#.#..#.#####...#....#."},
    {'5', "######....####.....#....##...#.###."},
    {'6', "..##..#...#....####.#...##...#.###."},
    {'7', "#####....#...#...#...#....#....#..."},
    {'8', ".###.#...##...#.###.#...##...#.###."},
    {'9', ".###.#...##...#.####....#...#..##.."},
    {'A', ".###.#...##...#######...##...##...#"},
    {'B', "####.#...##...#####.#...##...#####."},
    {'C', ".###.#...##....#....#....#...#.###."},
    {'D', "###..#..#.#...##...##...##..#.###.."},
    {'E', "######....#....####.#....#....#####"},
    {'F', "######....#....####.#....#....#...."},
    {'G', ".###.#...##....#.####...##...#.####"},
    {'H', "#...##...##...#######...##...##...#"},
    {'I', ".###...#....#....#....#....#...###."},
    {'J', "..###...#....#....#....#.#..#..##.."},
    {'K', "#...##..#.#.#..##...#.#..#..#.#...#"},
    {'L', "#....#....#....#....#....#....#####"},
    {'M', "#...###.###.#.##.#.##...##...##...#"},
    {'N', "#...##...###..##.#.##..###...##...#"},
    {'O', ".###.#...##...##...##...##...#.###."},
    {'P', "####.#...##...#####.#....#....#...."},
    {'Q', ".###.#...##...##...##.#.##..#..##.#"},
    {'R', "####.#...##...#####.#.#..#..#.#...#"},
    {'S', ".#####....#.....###.....#....#####."},
    {'T', "#####..#....#....#....#....#....#.."},
    {'U', "#...##...##...##...##...##...#.###."},
    {'V', "#...##...##...##...##...#.#.#...#.."},
    {'W', "#...##...##...##.#.##.#.##.#.#.#.#."},
    {'X', "#...##...#.#.#...#...#.#.#...##...#"},
    {'Y', "#...##...#.#.#...#....#....#....#.."},
    {'Z', "#####....#...#...#...#...#....#####"},
    {'.', "..........................##...##.."},
    {'-', "...............#####..............."},
    {'/', "....#....#...#...#...#...#....#...."},
    {'(', "...#...#...#....#....#.....#.....#."},
    {')', ".#.....#.....#....#....#...#...#..."},
    {':', "......##...##........##...##......."},
    {'_', "..............................#####"},
    {',', ".....................##....#...#..."},
    {'=', "..........#####.....#####.........."},
    {'%', "##...##..#...#...#...#...#..##...##"},
    {'*', ".......#..#.#.#.###.#.#.#..#......."},
    {'>', ".#.....#.....#.....#...#...#...#..."},
};

static const char* glyph(char ch) {
  if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
  for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
    if (font[i].ch == ch) return font[i].rows;
  return NULL; /* space and anything unknown: blank */
}

/* Text at (x, y) (top-left), scale s; returns the width drawn. */
static int text(canvas* c, int x, int y, const char* s, int scale, rgb_t col) {
  int x0 = x;
  for (; *s; s++, x += 6 * scale) {
    const char* g = glyph(*s);
    if (!g) continue;
    size_t len = strlen(g);
    for (int r = 0; r < 7; r++)
      for (int k = 0; k < 5; k++) {
        size_t i = (size_t)(r * 5 + k);
        if (i < len && g[i] == '#') rect(c, x + k * scale, y + r * scale, x + k * scale + scale - 1,
                                         y + r * scale + scale - 1, col);
      }
  }
  return x - x0;
}

static int text_width(const char* s, int scale) { return (int)strlen(s) * 6 * scale; }

/* ---- the plot ---- */

static void size_label(double bytes, char* buf, size_t len) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
  snprintf(buf, len, "%.0f%s", bytes, units[u]);
}

static void time_label(double us, char* buf, size_t len) {
  if (us < 1000) snprintf(buf, len, "%gUS", us);
  else if (us < 1e6) snprintf(buf, len, "%gMS", us / 1e3);
  else snprintf(buf, len, "%gS", us / 1e6);
}

int perf_explain_png(const struct perf_explain* e, const char* path, const char* title) {
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (int i = 0; i < e->n; i++)
    for (int k = 0; k < e->s[i].n; k++) {
      const struct perf_explain_row* r = &e->s[i].rows[k];
      double x = log2((double)(r->size ? r->size : 1));
      if (x < xmin) xmin = x;
      if (x > xmax) xmax = x;
      double ys[2] = {r->measured_us, r->predicted_us};
      for (int j = 0; j < 2; j++)
        if (ys[j] > 0) {
          double y = log10(ys[j]);
          if (y < ymin) ymin = y;
          if (y > ymax) ymax = y;
        }
    }
  if (!(xmin <= xmax) || !(ymin <= ymax)) {
    errno = EINVAL;
    return -1;
  }
  if (xmax - xmin < 1) xmin -= 0.5, xmax += 0.5;
  ymin = floor(ymin);
  ymax = ceil(ymax);
  if (ymax - ymin < 1) ymax = ymin + 1;

  canvas* c = malloc(sizeof *c);
  if (!c) return -1;
  memset(c->px, 255, sizeof c->px);
  int pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
#define PX(x) (LEFT + (int)lround(((x) - xmin) / (xmax - xmin) * pw))
#define PY(y) (TOP + ph - (int)lround(((y) - ymin) / (ymax - ymin) * ph))
  /* Grid and ticks: every decade of time, sizes at powers of 2 spaced to fit. */
  char lab[32];
  for (double y = ymin; y <= ymax + 1e-9; y += 1) {
    line(c, LEFT, PY(y), LEFT + pw, PY(y), 1, 0, grid);
    time_label(pow(10, y), lab, sizeof lab);
    text(c, LEFT - 8 - text_width(lab, 1), PY(y) - 3, lab, 1, black);
  }
  int step = 1;
  while ((xmax - xmin) / step > 12) step *= 2;
  for (double x = ceil(xmin); x <= xmax + 1e-9; x += step) {
    line(c, PX(x), TOP, PX(x), TOP + ph, 1, 0, grid);
    size_label(pow(2, x), lab, sizeof lab);
    text(c, PX(x) - text_width(lab, 1) / 2, TOP + ph + 8, lab, 1, black);
  }
  line(c, LEFT, TOP, LEFT, TOP + ph, 1, 0, black);
  line(c, LEFT, TOP + ph, LEFT + pw, TOP + ph, 1, 0, black);
  text(c, LEFT + pw / 2 - text_width("SIZE (BYTES)", 1) / 2, H - 24, "SIZE (BYTES)", 1, black);
  text(c, 8, TOP - 16, "TIME PER CALL", 1, black);
  text(c, LEFT, 10, title, 2, black);

  /* Series: measured solid with filled markers, predicted dashed with hollow ones. */
  for (int i = 0; i < e->n; i++) {
    const struct perf_explain_series* s = &e->s[i];
    rgb_t col = palette[i % NPALETTE];
    for (int pass = 0; pass < 2; pass++) {
      int px = -1, py = -1;
      for (int k = 0; k < s->n; k++) {
        double v = pass == 0 ? s->rows[k].measured_us : s->rows[k].predicted_us;
        if (!(v > 0)) {
          px = -1;
          continue;
        }
        int x = PX(log2((double)(s->rows[k].size ? s->rows[k].size : 1))), y = PY(log10(v));
        if (px >= 0) line(c, px, py, x, y, pass == 0 ? 2 : 2, pass == 0 ? 0 : 5, col);
        rect(c, x - 3, y - 3, x + 3, y + 3, col);
        if (pass == 1) rect(c, x - 1, y - 1, x + 1, y + 1, white);
        px = x, py = y;
      }
    }
    /* Legend, top left inside the plot. */
    int ly = TOP + 10 + 14 * i;
    line(c, LEFT + 12, ly + 3, LEFT + 40, ly + 3, 2, 0, col);
    line(c, LEFT + 46, ly + 3, LEFT + 74, ly + 3, 2, 5, col);
    text(c, LEFT + 82, ly, s->label, 1, black);
  }
  int ly = TOP + 10 + 14 * e->n;
  text(c, LEFT + 12, ly, "SOLID: MEASURED   DASHED: PREDICTED", 1, black);
#undef PX
#undef PY
  FILE* f = fopen(path, "wb");
  if (!f) {
    free(c);
    return -1;
  }
  int rc = perf_png_write(f, &c->px[0][0][0], W, H);
  if (fclose(f) != 0) rc = -1;
  free(c);
  return rc;
}
