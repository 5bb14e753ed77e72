/* Broken: isend writes through a NULL pointer (SIGSEGV). */
#include "refnet.h"

static int* volatile nowhere; /* NULL, unknown to the compiler */

static ncclResult_t isend_crashes(void* comm, void* data, size_t size, int tag, void* mh,
                                  void* ph, void** request) {
  (void)comm, (void)data, (void)size, (void)tag, (void)mh, (void)ph, (void)request;
  *nowhere = 1;
  return ncclSuccess;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-isendcrash", .isend = isend_crashes)
