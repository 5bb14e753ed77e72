/* Double binary tree over ranks 0..n-1.
 *
 * Tree 0 is an in-order binary tree on the rank numbers: a rank whose lowest set bit is b sits
 * at level log2(b); its children are rank-b/2 and rank+b/2 (the right one shrunk to the largest
 * rank+b/4, rank+b/8, … that exists), and its parent is whichever of rank±b has lowest set bit
 * 2b, or rank-b when that one is past the end. Rank 0 sits above all of it as the root with a
 * single child, the largest power of two below n. So every odd rank is a leaf in tree 0.
 *
 * Tree 1 is tree 0 relabelled so that its leaves are tree 0's interior nodes (NCCL's double
 * binary tree): for even n mirrored (rank r plays tree 0's n-1-r), for odd n shifted by one
 * (rank r plays tree 0's r-1 mod n). Even n: odd ranks are leaves in tree 0, even ranks leaves
 * in tree 1, so no rank is interior in both. Odd n: only rank 0 (root of tree 0, and n-1's
 * place in tree 1) is interior in both. */
#include "graph/graph.h"

#include "util/log.h"

/* Largest power of two strictly below n (n ≥ 2). */
static int pow2_below(int n) {
  int p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

/* Tree 0 in positions: parent and up to two children of position p. */
static void btree_node(int n, int p, int* up, int down[2], int* ndown) {
  *ndown = 0;
  down[0] = down[1] = -1;
  if (p == 0) {
    *up = -1;
    if (n > 1) down[(*ndown)++] = pow2_below(n);
    return;
  }
  int b = p & -p;
  int cand = (p & (b << 1)) ? p - b : p + b;
  *up = cand < n ? cand : p - b;
  for (int h = b >> 1; h > 0; h >>= 1) {
    if (*ndown == 0) down[(*ndown)++] = p - h;  /* left child always exists */
    if (p + h < n) {
      down[(*ndown)++] = p + h;
      break;
    }
  }
}

/* Rank ↔ position in tree 0 for tree t. */
static int tree_pos_of(int n, int t, int rank) {
  if (t == 0) return rank;
  return (n % 2 == 0) ? n - 1 - rank : (rank + n - 1) % n;
}

static int tree_rank_of(int n, int t, int pos) {
  if (pos < 0) return -1;
  if (t == 0) return pos;
  return (n % 2 == 0) ? n - 1 - pos : (pos + 1) % n;
}

ncclResult_t graph_tree(int nranks, int rank, int t, weft_tree* out) {
  if (nranks < 1 || rank < 0 || rank >= nranks || (t != 0 && t != 1) || out == NULL) {
    WARN("graph_tree: invalid nranks %d rank %d tree %d", nranks, rank, t);
    return ncclInvalidArgument;
  }
  int up, down[2], ndown;
  btree_node(nranks, tree_pos_of(nranks, t, rank), &up, down, &ndown);
  out->up = tree_rank_of(nranks, t, up);
  for (int i = 0; i < WEFT_TREE_MAX_CHILDREN; i++)
    out->down[i] = i < ndown ? tree_rank_of(nranks, t, down[i]) : -1;
  out->ndown = ndown;
  return ncclSuccess;
}

int graph_tree_root(int nranks, int t) {
  if (nranks < 1 || (t != 0 && t != 1)) return -1;
  return tree_rank_of(nranks, t, 0);
}
