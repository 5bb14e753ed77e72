/* Broken: exports only versions nobody loads, ncclNetPlugin_v5 and ncclNetPlugin_v99. */
#include "refnet.h"

REFNET_EXPORT_V11(ncclNetPlugin_v5, "broken-oldversion", .name = "broken-oldversion")
REFNET_EXPORT_V11(ncclNetPlugin_v99, "broken-oldversion", .name = "broken-oldversion")
