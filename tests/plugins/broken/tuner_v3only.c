/* reftuner exporting only ncclTunerPlugin_v3: drives the core's v3 shim. */
#include "reftuner.h"

REFTUNER_EXPORT_V3(ncclTunerPlugin_v3, "reftuner-v3", .name = "reftuner-v3")
