/* Broken: sends only 7/8 of each message but announces the full size, so the receiver reports
 * the full size over partly unwritten memory. */
#include "refnet.h"

static ncclResult_t isend_truncated(void* comm, void* data, size_t size, int tag, void* mh,
                                    void* ph, void** request) {
  (void)mh, (void)ph;
  return refnet_isend_sized(comm, data, size - size / 8, size, tag, request);
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-truncate", .isend = isend_truncated)
