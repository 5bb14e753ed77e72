/* reftuner exporting only ncclTunerPlugin_v4: drives the core's v4 shim. */
#include "reftuner.h"

REFTUNER_EXPORT_V4(ncclTunerPlugin_v4, "reftuner-v4", .name = "reftuner-v4")
