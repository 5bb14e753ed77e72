/* Rings and trees over the ranks of a communicator, per channel. Pure functions of (nranks,
 * rank, channel): every rank computes the same graph without talking to the others.
 *
 * Ring: channel c uses a ring order (a permutation of ranks); each rank knows prev and next.
 * Tree: a double binary tree (two complementary binary trees over the ranks, so that a rank that
 * is interior in one is a leaf, or near it, in the other). Even channels use tree 0, odd
 * channels tree 1. The tree is a pipeline: data flows up to the root then down. */
#ifndef WEFT_GRAPH_H
#define WEFT_GRAPH_H

#include "nccl.h"

#define WEFT_TREE_MAX_CHILDREN 3

typedef struct {
  int prev, next;  /* neighbour ranks on the ring (== rank for a 1-rank ring) */
  int index;       /* this rank's position in the ring order, 0..nranks-1 */
  int first;       /* the rank at position 0 (where ring algorithms start counting) */
} weft_ring;

typedef struct {
  int up;                                /* parent rank, -1 at the root */
  int down[WEFT_TREE_MAX_CHILDREN];      /* children, -1 padded */
  int ndown;
} weft_tree;

/* The ring of channel c. Order: rank order, rotated or reversed per channel as the topology
 * calls for (today: every channel uses 0,1,…,n-1). */
ncclResult_t graph_ring(int nranks, int rank, int channel, weft_ring* out);
/* Position → rank of channel c's ring order (for algorithms that index chunks by position). */
int graph_ring_rank_at(int nranks, int channel, int position);

/* This rank's place in tree t (0 or 1) of the double binary tree. */
ncclResult_t graph_tree(int nranks, int rank, int t, weft_tree* out);
/* Root of tree t. */
int graph_tree_root(int nranks, int t);

#endif
