/* A dependency-free PNG writer for weft-perf's plots: 8-bit RGB, zlib "stored" (uncompressed)
 * blocks, CRC-32 and Adler-32 computed here, so the tool needs no zlib. */
#ifndef WEFT_PERF_PNG_H
#define WEFT_PERF_PNG_H

#include <stdio.h>

/* Writes w x h pixels (rows top to bottom, 3 bytes per pixel) to f as a PNG. 0, or -1 on a
 * write error or an empty picture. */
int perf_png_write(FILE* f, const unsigned char* rgb, int w, int h);

#endif
