/* reftuner exporting only ncclTunerPlugin_v2 (a correct NCCL 2.21-era tuner): drives the core's
 * v2 shim. */
#include "reftuner.h"

REFTUNER_EXPORT_V2(ncclTunerPlugin_v2, "reftuner-v2", .name = "reftuner-v2")
