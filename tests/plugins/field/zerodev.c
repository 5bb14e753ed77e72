/* Field case: a plugin that loads and inits on a host without its NIC: 0 devices. */
#include "refnet.h"

static ncclResult_t no_devices(int* ndev) {
  *ndev = 0;
  return ncclSuccess;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "field-zerodev", .devices = no_devices)
