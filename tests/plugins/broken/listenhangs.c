/* Broken: listen never returns (the runner's per-test timeout must end the test). */
#include <unistd.h>

#include "refnet.h"

static ncclResult_t listen_forever(void* ctx, int dev, void* handle, void** listenComm) {
  (void)ctx, (void)dev, (void)handle, (void)listenComm;
  static volatile int forever = 1;
  while (forever) pause();
  return ncclInternalError;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-listenhangs", .listen = listen_forever)
