/* reftuner as it is, every version: the correct tuner baseline (libnccl-tuner-reftuner.so). */
#include "reftuner.h"

REFTUNER_EXPORT_V2(ncclTunerPlugin_v2, "reftuner", .name = "reftuner")
REFTUNER_EXPORT_V3(ncclTunerPlugin_v3, "reftuner", .name = "reftuner")
REFTUNER_EXPORT_V4(ncclTunerPlugin_v4, "reftuner", .name = "reftuner")
REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "reftuner", .name = "reftuner")
REFTUNER_EXPORT_V6(ncclTunerPlugin_v6, "reftuner", .name = "reftuner")
