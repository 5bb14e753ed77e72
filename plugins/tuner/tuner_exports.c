/* The exported tables: v6 for NCCL 2.30+ and weft, v5 for 2.28-2.29, v4 for 2.24-2.27, v3 for
 * 2.22-2.23, v2 for 2.21. The loader picks the newest it knows; they all share one
 * implementation. */
#include "tuner_plugin.h"

#define EXPORT __attribute__((visibility("default")))

/* weft's extension (weft.h): cost tables with rows for OneShot and TwoShot too. */
EXPORT const int weftTunerAlgorithms = WEFT_NUM_ALGORITHMS;

EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {"weft", weft_tuner_init_v5, weft_tuner_get_v4,
                                                  weft_tuner_fini, weft_tuner_chunk};
EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {"weft", weft_tuner_init_v5, weft_tuner_get_v4,
                                                  weft_tuner_fini};
EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {"weft", weft_tuner_init, weft_tuner_get_v4,
                                                  weft_tuner_fini};
EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {"weft", weft_tuner_init, weft_tuner_get_v3,
                                                  weft_tuner_fini};
EXPORT const ncclTuner_v2_t ncclTunerPlugin_v2 = {"weft", weft_tuner_init, weft_tuner_get_v2,
                                                  weft_tuner_fini};
