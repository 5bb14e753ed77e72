/* reftuner exporting only ncclTunerPlugin_v5 (an NCCL 2.28-era tuner): drives the core's v5
 * shim. */
#include "reftuner.h"

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "reftuner-v5", .name = "reftuner-v5")
