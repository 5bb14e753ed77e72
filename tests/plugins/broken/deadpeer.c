/* Broken: a connection error is swallowed, so a request whose peer died stays pending forever. */
#include "refnet.h"

static ncclResult_t test_hides_errors(void* request, int* done, int* sizes) {
  ncclResult_t r = refnet_test(request, done, sizes);
  if (r != ncclSuccess) {
    *done = 0;
    return ncclSuccess;
  }
  return r;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-deadpeer", .test = test_hides_errors)
