/* Broken: test never reports completion (and never makes progress). */
#include "refnet.h"

static ncclResult_t test_never_done(void* request, int* done, int* sizes) {
  (void)request, (void)sizes;
  *done = 0;
  return ncclSuccess;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-testhangs", .test = test_never_done)
