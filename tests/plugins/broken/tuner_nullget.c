/* Broken tuner: ncclTunerPlugin_v5 whose getCollInfo is NULL. */
#include "reftuner.h"

REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-nullget", .getCollInfo = NULL)
