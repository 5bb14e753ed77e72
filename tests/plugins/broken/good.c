/* refnet as it is: the correct baseline (libnccl-net-refnet.so). */
#include "refnet.h"

REFNET_EXPORT_V11(ncclNetPlugin_v11, "refnet", .name = "refnet")
