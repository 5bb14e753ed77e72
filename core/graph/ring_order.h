/* The order of each channel's ring, shared by graph/ (host) and the kernels' step generator.
 * Every channel uses the identity order 0,1,…,n-1 for now: identical rings keep each
 * channel's chunk on the same links. A topology-aware order (rotations per channel, NIC-aware
 * placement) replaces these two functions alone; everything else derives from them. */
#ifndef WEFT_GRAPH_RING_ORDER_H
#define WEFT_GRAPH_RING_ORDER_H

#include "util/hd.h"

/* Rank at `position` of channel `channel`'s ring. Must be a permutation of 0..nranks-1. */
WEFT_HD int ring_order_at(int nranks, int channel, int position) {
  (void)nranks;
  (void)channel;
  return position;
}

/* Inverse of ring_order_at: the position of `rank`. */
WEFT_HD int ring_position_of(int nranks, int channel, int rank) {
  (void)nranks;
  (void)channel;
  return rank;
}

#endif
