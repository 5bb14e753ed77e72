/* How the ranks sit on hosts, from the rank exchange: whether they are host-major with the same
 * count on every host (hierarchical RecDoubling, plan/plan_comm.c; CollNet's leaders, tune/ and
 * plan/plan_collnet.c). */
#include <stdlib.h>

#include "comm/comm.h"

static int by_hash(const void* a, const void* b) {
  const weft_rank_info* x = *(const weft_rank_info* const*)a;
  const weft_rank_info* y = *(const weft_rank_info* const*)b;
  if (x->host_hash != y->host_hash) return x->host_hash < y->host_hash ? -1 : 1;
  return strcmp(x->host, y->host);
}

int comm_host_major_ppn(const weft_rank_info* peers, int n) {
  int P = 1;
  while (P < n && comm_same_host(&peers[P], &peers[0])) P++;
  if (P == n || n % P) return 0;
  for (int r = 0; r < n; r++) {
    const weft_rank_info* leader = &peers[r - r % P];
    if (!comm_same_host(&peers[r], leader)) return 0;
    if (r % P == 0 && r > 0 && comm_same_host(leader, &peers[r - 1])) return 0;
  }
  /* Blocks next to each other differ; no two blocks anywhere may share a host either. */
  int H = n / P;
  const weft_rank_info** leaders = malloc((size_t)H * sizeof *leaders);
  if (leaders == NULL) return 0;
  for (int h = 0; h < H; h++) leaders[h] = &peers[h * P];
  qsort(leaders, (size_t)H, sizeof *leaders, by_hash);
  int distinct = 1;
  for (int h = 1; h < H && distinct; h++)
    if (comm_same_host(leaders[h], leaders[h - 1])) distinct = 0;
  free(leaders);
  return distinct ? P : 0;
}
