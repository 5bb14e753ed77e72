/* Broken: every completed connect leaks one file descriptor. */
#include <fcntl.h>

#include "refnet.h"

static ncclResult_t connect_leaky(void* ctx, int dev, void* handle, void** sendComm,
                                  ncclNetDeviceHandle_v11_t** devComm) {
  ncclResult_t r = refnet_connect(ctx, dev, handle, sendComm, devComm);
  if (r == ncclSuccess && *sendComm) (void)open("/dev/null", O_RDONLY);
  return r;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-fdleak", .connect = connect_leaky)
