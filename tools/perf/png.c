/* The PNG encoder (see png.h): signature, IHDR, one IDAT holding a zlib stream of stored
 * blocks (each row prefixed with filter type 0), IEND. Every chunk carries its CRC-32. */
#include "png.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
