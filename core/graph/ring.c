/* Rings per channel. Every channel uses the identity order 0,1,…,n-1 for now: host mode has no
 * topology to follow, and with identical rings each channel's chunk walks the same links, which
 * keeps the ring executors' indexing trivial. A topology-aware order (rotations per channel,
 * NIC-aware placement) replaces ring_order_at() alone; the rest derives from it. */
#include "graph/graph.h"

#include "util/log.h"

/* Rank at `position` of channel `channel`'s ring. Must be a permutation of 0..nranks-1. */
static int ring_order_at(int nranks, int channel, int position) {
  (void)nranks;
  (void)channel;
  return position;
}

/* Inverse of ring_order_at: the position of `rank`. */
static int ring_position_of(int nranks, int channel, int rank) {
  (void)nranks;
  (void)channel;
  return rank;
}

ncclResult_t graph_ring(int nranks, int rank, int channel, weft_ring* out) {
  if (nranks < 1 || rank < 0 || rank >= nranks || channel < 0 || out == NULL) {
    WARN("graph_ring: invalid nranks %d rank %d channel %d", nranks, rank, channel);
    return ncclInvalidArgument;
  }
  int index = ring_position_of(nranks, channel, rank);
  out->index = index;
  out->prev = ring_order_at(nranks, channel, (index + nranks - 1) % nranks);
  out->next = ring_order_at(nranks, channel, (index + 1) % nranks);
  out->first = ring_order_at(nranks, channel, 0);
  return ncclSuccess;
}

int graph_ring_rank_at(int nranks, int channel, int position) {
  if (nranks < 1 || channel < 0 || position < 0 || position >= nranks) return -1;
  return ring_order_at(nranks, channel, position);
}
