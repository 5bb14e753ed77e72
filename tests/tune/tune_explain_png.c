/* weft-perf's PNG writer (tools/perf/explain_png.c) produces a valid PNG: signature, chunk
 * lengths and CRC-32s (checked with an independent bitwise CRC), IHDR, and an IDAT zlib stream
 * of stored blocks whose inflated bytes are exactly the filter-0 rows of the pixels, with the
 * right Adler-32. Then the explain plot of a small series is written and read back the same way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain.h"
#include "testutil.h"

static uint32_t crc_bitwise(const unsigned char* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

static uint32_t rd32(const unsigned char* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Parse buf as a PNG; returns the inflated IDAT bytes (caller frees) and w, h. */
static unsigned char* parse_png(const unsigned char* buf, size_t len, int* w, int* h,
                                size_t* raw_len) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT(len > 8 && memcmp(buf, sig, 8) == 0);
  size_t o = 8;
  unsigned char* z = NULL;
  size_t zlen = 0;
  int seen_end = 0, chunks = 0;
  while (o + 12 <= len) {
    uint32_t n = rd32(buf + o);
    EXPECT(o + 12 + n <= len);
    const unsigned char* type = buf + o + 4;
    EXPECT(rd32(buf + o + 8 + n) == crc_bitwise(type, 4 + (size_t)n));
    if (chunks++ == 0) {
      EXPECT(memcmp(type, "IHDR", 4) == 0 && n == 13);
      *w = (int)rd32(type + 4);
      *h = (int)rd32(type + 8);
      EXPECT(type[12] == 8 && type[13] == 2 && type[14] == 0 && type[15] == 0 && type[16] == 0);
    } else if (memcmp(type, "IDAT", 4) == 0) {
      z = realloc(z, zlen + n);
      EXPECT(z != NULL);
      memcpy(z + zlen, type + 4, n);
      zlen += n;
    } else if (memcmp(type, "IEND", 4) == 0) {
      EXPECT(n == 0);
      seen_end = 1;
    }
    o += 12 + n;
  }
  EXPECT(seen_end && o == len && z != NULL);
  /* zlib: CMF/FLG check, stored blocks only, Adler-32 at the end. */
  EXPECT((z[0] & 0x0f) == 8 && ((z[0] << 8) | z[1]) % 31 == 0);
  unsigned char* raw = malloc(zlen);
  EXPECT(raw != NULL);
  size_t zo = 2, ro = 0;
  for (int final = 0; !final;) {
    EXPECT(zo + 5 <= zlen);
    final = z[zo] & 1;
    EXPECT((z[zo] >> 1) == 0); /* BTYPE 00 */
    unsigned n = z[zo + 1] | (unsigned)z[zo + 2] << 8, nn = z[zo + 3] | (unsigned)z[zo + 4] << 8;
    EXPECT((n ^ 0xffffu) == nn);
    zo += 5;
    EXPECT(zo + n <= zlen);
    memcpy(raw + ro, z + zo, n);
    ro += n;
    zo += n;
  }
  EXPECT(zo + 4 == zlen);
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < ro; i++) a = (a + raw[i]) % 65521, b = (b + a) % 65521;
  EXPECT(rd32(z + zo) == (b << 16 | a));
  free(z);
  *raw_len = ro;
  return raw;
}

static unsigned char* read_all(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  EXPECT(f != NULL);
  unsigned char* buf = malloc(8 << 20);
  EXPECT(buf != NULL);
  *len = fread(buf, 1, 8 << 20, f);
  fclose(f);
  return buf;
}

int main(void) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/weft-png-%d.png", (int)getpid());
  /* A picture bigger than one stored block (65535 bytes), random pixels. */
  int w = 257, h = 131;
  unsigned char* px = malloc((size_t)w * h * 3);
  EXPECT(px != NULL);
  uint64_t rng = test_seed(0x9e37);
  for (size_t i = 0; i < (size_t)w * h * 3; i++) px[i] = (unsigned char)test_rand(&rng);
  FILE* f = fopen(path, "wb");
  EXPECT(f != NULL);
  EXPECT(perf_png_write(f, px, w, h) == 0);
  EXPECT(fclose(f) == 0);
  size_t len, raw_len;
  int gw, gh;
  unsigned char* buf = read_all(path, &len);
  unsigned char* raw = parse_png(buf, len, &gw, &gh, &raw_len);
  EXPECT(gw == w && gh == h && raw_len == (size_t)h * (1 + 3 * (size_t)w));
  for (int y = 0; y < h; y++) {
    EXPECT(raw[(size_t)y * (1 + 3 * (size_t)w)] == 0);
    EXPECT(memcmp(raw + (size_t)y * (1 + 3 * (size_t)w) + 1, px + (size_t)y * 3 * (size_t)w,
                  3 * (size_t)w) == 0);
  }
  free(buf);
  free(raw);
  free(px);

  /* The explain plot of two series. */
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
  EXPECT(perf_explain_png(&e, path, "TEST PLOT") == 0);
  buf = read_all(path, &len);
  raw = parse_png(buf, len, &gw, &gh, &raw_len);
  EXPECT(gw > 100 && gh > 100);
  /* Not blank: some pixel of the series' first colour is there. */
  int coloured = 0;
  for (size_t i = 0; i + 2 < raw_len && !coloured; i++)
    coloured = raw[i] == 31 && raw[i + 1] == 119 && raw[i + 2] == 180;
  EXPECT(coloured);
  free(buf);
  free(raw);
  /* Nothing to plot is an error, not an empty picture. */
  struct perf_explain empty = {0};
  EXPECT(perf_explain_png(&empty, path, "EMPTY") == -1);
  perf_explain_free(&e);
  unlink(path);
  return 0;
}
