/* Tuner plugin ABI version 2, exported by plugins as ncclTunerPlugin_v2. FROZEN: this file
 * describes a binary interface that shipped plugins are built against; it is never edited. A
 * later change to the interface goes into a new tuner_vN.h, and the core adapts older versions
 * in core/plugin/. The plugin picks one algorithm, protocol and channel count
 * directly. Layout on LP64: ncclTuner_v2_t 32 bytes. */
#ifndef WEFT_ABI_TUNER_V2_H
#define WEFT_ABI_TUNER_V2_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"

typedef struct {
  const char* name;
  /* Once per communicator; *context is passed to the other calls. */
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       void** context);
  /* Writes an NCCL_ALGO_* / NCCL_PROTO_* index and a channel count (0: keep the core's). */
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes,
                              int collNetSupport, int nvlsSupport, int numPipeOps, int* algorithm,
                              int* protocol, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v2_t;

#endif
