/* Broken: the mandatory isend entry is NULL. */
#include "refnet.h"

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-nullisend", .isend = NULL)
