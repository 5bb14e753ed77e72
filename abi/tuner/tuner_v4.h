/* Tuner plugin ABI version 4, exported by plugins as ncclTunerPlugin_v4. FROZEN: this file
 * describes a binary interface that shipped plugins are built against; it is never edited. A
 * later change to the interface goes into a new tuner_vN.h, and the core adapts older versions
 * in core/plugin/. Against v3: getCollInfo learns whether the user buffers
 * are registered. Layout on LP64: ncclTuner_v4_t 32 bytes. */
#ifndef WEFT_ABI_TUNER_V4_H
#define WEFT_ABI_TUNER_V4_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       void** context);
  /* As v3; regBuff is non-zero when the operation's buffers are registered. */
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

#endif
