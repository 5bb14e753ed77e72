/* Tuner plugin ABI version 3, exported by plugins as ncclTunerPlugin_v3. FROZEN: this file
 * describes a binary interface that shipped plugins are built against; it is never edited. A
 * later change to the interface goes into a new tuner_vN.h, and the core adapts older versions
 * in core/plugin/. Against v2: the plugin edits a cost table instead of
 * choosing. Layout on LP64: ncclTuner_v3_t 32 bytes. */
#ifndef WEFT_ABI_TUNER_V3_H
#define WEFT_ABI_TUNER_V3_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       void** context);
  /* collCostTable is really float[numAlgo][numProto] holding predicted microseconds, with
   * NCCL_ALGO_PROTO_IGNORE in unusable cells. The plugin lowers the cells it prefers; the core
   * takes the cheapest non-negative one. A non-zero *nChannels overrides the channel count. */
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

#endif
