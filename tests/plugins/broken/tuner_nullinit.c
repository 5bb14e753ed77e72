/* Broken tuner: ncclTunerPlugin_v4 with a NULL init, next to a correct v2. */
#include "reftuner.h"

REFTUNER_EXPORT_V2(ncclTunerPlugin_v2, "broken-nullinit", .name = "broken-nullinit")
REFTUNER_EXPORT_V4(ncclTunerPlugin_v4, "broken-nullinit", .init = NULL)
