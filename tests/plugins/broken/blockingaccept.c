/* Broken: accept blocks for 1.5 s whenever no connection is ready. */
#include <time.h>

#include "refnet.h"

static ncclResult_t accept_blocks(void* l, void** recvComm, ncclNetDeviceHandle_v11_t** dev) {
  ncclResult_t r = refnet_accept(l, recvComm, dev);
  if (r == ncclSuccess && *recvComm == NULL) {
    struct timespec ts = {1, 500000000};
    nanosleep(&ts, NULL);
  }
  return r;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-blockingaccept", .accept = accept_blocks)
