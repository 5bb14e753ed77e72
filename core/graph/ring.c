/* Rings per channel, from the order in ring_order.h (shared with the kernels). */
#include "graph/graph.h"
#include "graph/ring_order.h"

#include "util/log.h"

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
