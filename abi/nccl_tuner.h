/* The tuner plugin ABI: every version weft loads (v2 to v6, one frozen header each under
 * tuner/), the indexes they share, and the current view (v6). A plugin exports one or more
 * `ncclTunerPlugin_vN` symbols of type ncclTuner_vN_t; the core probes the newest first.
 * Algorithm/protocol indexes, ncclFunc_t and NCCL_ALGO_PROTO_IGNORE live in nccl_common.h.
 * Plain C, no CUDA headers needed. */
#ifndef NCCL_TUNER_H_
#define NCCL_TUNER_H_

#include "nccl.h"
#include "nccl_common.h"

#include "tuner/tuner_v2.h"
#include "tuner/tuner_v3.h"
#include "tuner/tuner_v4.h"
#include "tuner/tuner_v5.h"
#include "tuner/tuner_v6.h"

/* First index of ncclTunerConstants_t.hwLatencies. */
#define NCCL_HW_NVLINK 0
#define NCCL_HW_PCI 1
#define NCCL_HW_NET 2
#define NCCL_NUM_HW_LINKS NCCL_NUM_HW_LINKS_V5

/* First index of the bandwidth tables: the GPU generation. */
#define NCCL_VOLTA_COMPCAP_IDX 0
#define NCCL_AMPERE_COMPCAP_IDX 1
#define NCCL_HOPPER_COMPCAP_IDX 2
#define NCCL_BLACKWELL_COMPCAP_IDX 3
#define NCCL_NUM_COMPCAPS NCCL_NUM_COMPCAPS_V5

/* Second index of the bandwidth tables: how many nodes the communicator spans. */
#define NCCL_TUNING_SCALE_1NODE 0
#define NCCL_TUNING_SCALE_2NODES 1
#define NCCL_TUNING_SCALE_4NODES 2
#define NCCL_NUM_TUNING_SCALES NCCL_NUM_TUNING_SCALES_V5

/* The current view. */
typedef ncclTuner_v6_t ncclTuner_t;
typedef ncclTunerConstants_v6_t ncclTunerConstants_t;
typedef ncclNvlDomainInfo_v6_t ncclNvlDomainInfo_t;

/* dlsym name of the current version's plugin table. */
#define NCCL_TUNER_PLUGIN_SYMBOL "ncclTunerPlugin_v6"

#endif
