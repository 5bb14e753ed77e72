/* Tuner plugin ABI version 5, exported by plugins as ncclTunerPlugin_v5. FROZEN: this file
 * describes a binary interface that shipped plugins are built against; it is never edited. A
 * later change to the interface goes into a new tuner_vN.h, and the core adapts older versions
 * in core/plugin/. Against v4: init receives the communicator id, the NVLink
 * domain shape and the cost-model constants (which the plugin may rewrite); destroy becomes
 * finalize. Layout on LP64: ncclTuner_v5_t 32 bytes, ncclTunerConstants_v5_t 1152 bytes,
 * ncclNvlDomainInfo_v5_t 12 bytes. */
#ifndef WEFT_ABI_TUNER_V5_H
#define WEFT_ABI_TUNER_V5_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"

/* How the communicator's ranks fall into NVLink domains. */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

#define NCCL_NUM_ALGORITHMS_V5 7     /* NCCL_ALGO_* indexes */
#define NCCL_NUM_PROTOCOLS_V5 3      /* NCCL_PROTO_* indexes */
#define NCCL_NUM_HW_LINKS_V5 3       /* NCCL_HW_NVLINK, _PCI, _NET */
#define NCCL_NUM_COMPCAPS_V5 4       /* Volta, Ampere, Hopper, Blackwell */
#define NCCL_NUM_TUNING_SCALES_V5 3  /* 1 node, 2 nodes, 4 or more nodes */

/* The constants of the core's cost model, latencies in microseconds and bandwidths in GB/s.
 * The core fills them before init; what the plugin leaves there is what the core uses. */
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

typedef struct {
  const char* name;
  /* Once per communicator, before the core derives its model from *constants. */
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  /* As v4. */
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

#endif
