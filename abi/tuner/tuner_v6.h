/* Tuner plugin ABI version 6 (NCCL 2.30), exported by plugins as ncclTunerPlugin_v6. FROZEN:
 * this file describes a binary interface that shipped plugins are built against; it is never
 * edited. A later change to the interface goes into a new tuner_vN.h, and the core adapts older
 * versions in core/plugin/. Against v5: a last entry, getChunkSize (may be NULL), lets the
 * plugin change the chunk size the core chose for a collective; init, the constants and the
 * NVLink domain shape are v5's. Layout on LP64: ncclTuner_v6_t 40 bytes. */
#ifndef WEFT_ABI_TUNER_V6_H
#define WEFT_ABI_TUNER_V6_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "tuner_v5.h"

typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                       ncclTunerConstants_v6_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
  /* May be NULL. *chunkSize holds the core's choice for this collective on algo/proto over
   * nChannels channels; the plugin may change it. The core clamps the answer to what its
   * buffers allow, and keeps its own choice when the call fails. */
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t* chunkSize);
} ncclTuner_v6_t;

#endif
