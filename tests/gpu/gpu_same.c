/* The ledger of outputs every rank must hold alike (gpu_same.h). */
#include "gpu_same.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define SAME_MAX_RECORDS 4096
#define SAME_MAX_RANKS 64

static uint64_t* g_ledger; /* [record][rank]: 1 + FNV-1a of the bytes, 0 when not recorded */
static int g_nranks;
static int g_next[SAME_MAX_RANKS]; /* per rank: records so far (this process's ranks only) */

int gpu_same_init(int nranks) {
  if (nranks < 1 || nranks > SAME_MAX_RANKS) return -1;
  size_t len = (size_t)SAME_MAX_RECORDS * SAME_MAX_RANKS * sizeof(uint64_t);
  if (g_ledger) munmap(g_ledger, len);
  void* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    g_ledger = NULL;
    return -1;
  }
  g_ledger = p;
  g_nranks = nranks;
  memset(g_next, 0, sizeof g_next);
  return 0;
}

void gpu_same_record(int rank, const void* out, size_t len) {
  if (!g_ledger || rank < 0 || rank >= g_nranks || g_next[rank] >= SAME_MAX_RECORDS) return;
  const unsigned char* b = out;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  g_ledger[(size_t)g_next[rank]++ * SAME_MAX_RANKS + (size_t)rank] = h | 1;
}

int gpu_same_check(void) {
  if (!g_ledger) return 0;
  int bad = 0;
  for (int k = 0; k < SAME_MAX_RECORDS; k++) {
    const uint64_t* row = g_ledger + (size_t)k * SAME_MAX_RANKS;
    int first = -1;
    for (int r = 0; r < g_nranks; r++) {
      if (!row[r]) continue;
      if (first < 0) {
        first = r;
      } else if (row[r] != row[first]) {
        fprintf(stderr, "FAIL: verification #%d: rank %d's output differs bit for bit from rank "
                "%d's (ranks must get identical results)\n", k + 1, r, first);
        bad++;
        break;
      }
    }
  }
  return bad;
}
