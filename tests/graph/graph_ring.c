/* Rings: for every size and a few channels, prev/next are inverse, next walks one cycle over all
 * ranks, index/first agree with graph_ring_rank_at, and bad arguments are refused. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "testutil.h"

int main(void) {
  test_require_weft_lib();
  for (int n = 1; n <= 64; n++) {
    for (int c = 0; c < 8; c++) {
      weft_ring r[64];
      for (int i = 0; i < n; i++) EXPECT_OK(graph_ring(n, i, c, &r[i]));
      for (int i = 0; i < n; i++) {
        EXPECT(r[i].next >= 0 && r[i].next < n);
        EXPECT(r[i].prev >= 0 && r[i].prev < n);
        EXPECT_EQ_INT(r[r[i].next].prev, i);
        EXPECT_EQ_INT(r[r[i].prev].next, i);
        EXPECT_EQ_INT(graph_ring_rank_at(n, c, r[i].index), i);
        EXPECT_EQ_INT(r[i].first, graph_ring_rank_at(n, c, 0));
        EXPECT_EQ_INT(r[r[i].next].index, (r[i].index + 1) % n);
      }
      /* One cycle covering every rank, starting from position 0. */
      char seen[64];
      memset(seen, 0, sizeof seen);
      int at = r[0].first, steps = 0;
      do {
        EXPECT(!seen[at]);
        seen[at] = 1;
        EXPECT_EQ_INT(r[at].index, steps);
        at = r[at].next;
        steps++;
      } while (at != r[0].first && steps <= n);
      EXPECT_EQ_INT(steps, n);
      /* rank_at is a permutation. */
      memset(seen, 0, sizeof seen);
      for (int p = 0; p < n; p++) {
        int k = graph_ring_rank_at(n, c, p);
        EXPECT(k >= 0 && k < n && !seen[k]);
        seen[k] = 1;
      }
    }
  }
  weft_ring r1;
  EXPECT_OK(graph_ring(1, 0, 0, &r1));
  EXPECT(r1.prev == 0 && r1.next == 0 && r1.index == 0 && r1.first == 0);
  EXPECT_RES(graph_ring(0, 0, 0, &r1), ncclInvalidArgument);
  EXPECT_RES(graph_ring(4, 4, 0, &r1), ncclInvalidArgument);
  EXPECT_RES(graph_ring(4, -1, 0, &r1), ncclInvalidArgument);
  EXPECT_RES(graph_ring(4, 0, -1, &r1), ncclInvalidArgument);
  EXPECT_EQ_INT(graph_ring_rank_at(4, 0, 4), -1);
  EXPECT_EQ_INT(graph_ring_rank_at(4, 0, -1), -1);
  return 0;
}
