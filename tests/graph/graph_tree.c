/* Double binary tree, n = 1..1024 (exhaustive checks for all n ≤ 64, then spot sizes):
 * - each tree: one root (graph_tree_root), parent/child symmetric, ≤ 2 children, every rank
 *   reachable from the root exactly once (so no cycles), depth ≤ ⌈log2 n⌉ + 1;
 * - complementary: the ranks interior (having children) in both trees number 0 for even n and
 *   at most 1 for odd n — rank 0, the root of tree 0 — which is what the mirror/shift
 *   construction guarantees (tree 0's leaves are exactly its odd ranks). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "testutil.h"

#define NMAX 1024

static weft_tree tr[2][NMAX];

static int log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n) l++;
  return l;
}

static void check_tree(int n, int t) {
  weft_tree* T = tr[t];
  for (int i = 0; i < n; i++) EXPECT_OK(graph_tree(n, i, t, &T[i]));
  int root = graph_tree_root(n, t);
  EXPECT(root >= 0 && root < n);
  int roots = 0;
  for (int i = 0; i < n; i++) {
    if (T[i].up == -1) {
      roots++;
      EXPECT_EQ_INT(i, root);
    } else {
      EXPECT(T[i].up >= 0 && T[i].up < n && T[i].up != i);
      /* a's parent is b ⇒ a is among b's children */
      int found = 0;
      for (int k = 0; k < T[T[i].up].ndown; k++) found += T[T[i].up].down[k] == i;
      EXPECT_EQ_INT(found, 1);
    }
    EXPECT(T[i].ndown >= 0 && T[i].ndown <= 2);
    for (int k = 0; k < WEFT_TREE_MAX_CHILDREN; k++) {
      if (k < T[i].ndown) {
        int c = T[i].down[k];
        EXPECT(c >= 0 && c < n && c != i);
        EXPECT_EQ_INT(T[c].up, i);  /* b's child a ⇒ a's parent is b */
      } else {
        EXPECT_EQ_INT(T[i].down[k], -1);
      }
    }
  }
  EXPECT_EQ_INT(roots, 1);
  /* BFS from the root reaches every rank exactly once. */
  static int queue[NMAX], depth[NMAX];
  static char seen[NMAX];
  memset(seen, 0, sizeof seen);
  int head = 0, tail = 0, maxdepth = 0;
  queue[tail++] = root;
  seen[root] = 1;
  depth[root] = 0;
  while (head < tail) {
    int v = queue[head++];
    if (depth[v] > maxdepth) maxdepth = depth[v];
    for (int k = 0; k < T[v].ndown; k++) {
      int c = T[v].down[k];
      EXPECT(!seen[c]);
      seen[c] = 1;
      depth[c] = depth[v] + 1;
      queue[tail++] = c;
    }
  }
  EXPECT_EQ_INT(tail, n);
  EXPECT(maxdepth <= log2_ceil(n) + 1);
}

static void check_sizes(int n) {
  check_tree(n, 0);
  check_tree(n, 1);
  int both = 0, who = -1;
  for (int i = 0; i < n; i++) {
    if (tr[0][i].ndown > 0 && tr[1][i].ndown > 0) {
      both++;
      who = i;
    }
  }
  if (n % 2 == 0) {
    EXPECT_EQ_INT(both, 0);
  } else {
    EXPECT(both <= 1);
    if (both == 1) EXPECT_EQ_INT(who, 0);
  }
  /* The two roots differ whenever there are two ranks to choose from. */
  if (n > 1) EXPECT(graph_tree_root(n, 0) != graph_tree_root(n, 1));
}

int main(void) {
  test_require_weft_lib();
  for (int n = 1; n <= 64; n++) check_sizes(n);
  static const int more[] = {96, 100, 127, 128, 129, 255, 256, 257, 511, 1000, 1023, 1024};
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) check_sizes(more[i]);

  weft_tree one;
  EXPECT_OK(graph_tree(1, 0, 0, &one));
  EXPECT(one.up == -1 && one.ndown == 0);
  EXPECT_OK(graph_tree(1, 0, 1, &one));
  EXPECT(one.up == -1 && one.ndown == 0);
  EXPECT_EQ_INT(graph_tree_root(1, 0), 0);
  EXPECT_EQ_INT(graph_tree_root(1, 1), 0);
  EXPECT_RES(graph_tree(4, 0, 2, &one), ncclInvalidArgument);
  EXPECT_RES(graph_tree(4, 4, 0, &one), ncclInvalidArgument);
  EXPECT_RES(graph_tree(0, 0, 0, &one), ncclInvalidArgument);
  EXPECT_EQ_INT(graph_tree_root(4, 2), -1);
  return 0;
}
