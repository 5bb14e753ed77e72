/* Broken: a completed receive reports the size it was posted with, not the size that arrived. */
#include "refnet.h"

static ncclResult_t test_posted_size(void* request, int* done, int* sizes) {
  int n = 0;
  size_t posted[8];
  int recv = refnet_request_info(request, &n, posted);
  ncclResult_t r = refnet_test(request, done, sizes);
  if (r == ncclSuccess && *done && recv == 1 && sizes)
    for (int j = 0; j < n; j++) sizes[j] = (int)posted[j];
  return r;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-sizereport", .test = test_posted_size)
