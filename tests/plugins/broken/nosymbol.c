/* Broken: exports no ncclNetPlugin_vN symbol at all (the table has a misspelt name). */
#include "refnet.h"

REFNET_EXPORT_V11(ncclNetPlugin, "broken-nosymbol", .name = "broken-nosymbol")
