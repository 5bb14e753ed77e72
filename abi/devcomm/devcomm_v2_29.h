/* Device-API layouts of NCCL 2.29: 2.29.2 (and 2.29.3) and 2.29.7 (and 2.29.5, 2.29.6), the
 * callers NVIDIA's 2.30.7 library still serves. FROZEN, like devcomm_v2_30.h. Against 2.30:
 * - ncclDevComm carries no magic and no version: it starts with rank, so every field sits 8
 *   bytes before its 2.30 place up to lsaBarrier, and the inlined resource window is a whole
 *   device window (72 bytes) where 2.30 has 64 bytes and hybridWorldGinBarrier. A device
 *   communicator handed back to ncclDevCommDestroy is recognised as 2.29 because its first
 *   word is a rank, never NCCL_API_MAGIC (ncclDevCommLayoutOfDevComm, nccl_devcomm.h).
 *   2.29.2's ends after ginSignalShadows (200 bytes); 2.29.7's adds GIN context fields and
 *   abortFlag (224 bytes). There are no hybrid or world GIN barriers.
 * - The device window is 2.30's first 72 bytes (no multi-segment GIN windows), so the 2.32
 *   window weft always fills serves 2.29 kernels too.
 * - ncclDevCommRequirements is a prefix of 2.30's: 2.29.2's ends after ginCounterCount (72
 *   bytes), 2.29.7's after ginQueueDepth (88).
 * - ncclCommProperties: 2.29.2's ginType is one byte (uint8_t enum) at 34 and the struct ends
 *   there (40 bytes); 2.29.7's is 2.30's (56).
 * - Resource and team requirements, the window table, teams and the barrier handles are 2.30's;
 *   so are the LSA barrier buffer and its protocol (2.29.2 kernels never poll abortFlag).
 * 2.29.7 is checked field by field against NVIDIA's wheel (tests/devcomm, devcomm_layout_2.29.7);
 * 2.29.2 by the offsets below, which NVIDIA's 2.30.7 library asserts for its 2.29.2 callers,
 * and once by hand against the nvidia-nccl-cu13==2.29.2 wheel (docs/device-api.md). */
#ifndef WEFT_ABI_DEVCOMM_V2_29_H
#define WEFT_ABI_DEVCOMM_V2_29_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devcomm_v2_30.h"

/* Versions whose callers get each layout: NVIDIA's 2.30.7 library converts exactly these
 * (2.29.0, 2.29.1 and 2.29.4 it refuses, and so does weft). */
#define NCCL_DEVCOMM_V2_29_2_MIN_VERSION 22902
#define NCCL_DEVCOMM_V2_29_2_MAX_VERSION 22903
#define NCCL_DEVCOMM_V2_29_7_MIN_VERSION 22905
#define NCCL_DEVCOMM_V2_29_7_MAX_VERSION 22907

/* 2.29.2's ncclGinType_t is a uint8_t enum; NONE is 0 as later. */
#define NCCL_DEVCOMM_V2_29_2_GIN_TYPE_NONE 0

typedef ncclDevResourceHandle_v2_30_t ncclDevResourceHandle_v2_29_t;
typedef ncclMultimemHandle_v2_30_t ncclMultimemHandle_v2_29_t;
typedef ncclLsaBarrierHandle_v2_30_t ncclLsaBarrierHandle_v2_29_t;
/* 2.29.2 names the GIN barrier handle's second word bufHandle (same place, same size). */
typedef ncclGinBarrierHandle_v2_30_t ncclGinBarrierHandle_v2_29_t;
typedef ncclDevWindowTableEntry_v2_30_t ncclDevWindowTableEntry_v2_29_t;
typedef ncclDevWindowTable_v2_30_t ncclDevWindowTable_v2_29_t;
typedef ncclDevResourceRequirements_v2_30_t ncclDevResourceRequirements_v2_29_t;
typedef ncclTeamRequirements_v2_30_t ncclTeamRequirements_v2_29_t;

/* The device window as 2.29 kernels read it, and the copy inlined in the device communicator
 * (kernels read lsaFlatBase, stride4G and mcOffset4K of that copy). */
typedef struct {
  uintptr_t winHost;
  uintptr_t lsaFlatBase;
  int32_t lsaRank;
  int32_t worldRank;
  uint32_t stride4G;
  uint32_t mcOffset4K;
  uint32_t ginOffset4K;
  uintptr_t ginWins[NCCL_DEVCOMM_V2_30_GIN_MAX_CONNECTIONS];
} ncclWindowVidmem_v2_29_t;

/* The fields every 2.29 device communicator has, in order; 2.29.2's and 2.29.7's differ in
 * what follows ginSignalShadows (and in the name of the byte at 136). */
#define NCCL_DEVCOMM_V2_29_HEAD(countName)                                                 \
  int32_t rank, nRanks;                                                                    \
  uint32_t nRanks_rcp32;                                                                   \
  int32_t lsaRank, lsaSize;                                                                \
  uint32_t lsaSize_rcp32;                                                                  \
  uintptr_t windowTable;    /* device: ncclDevWindowTable_v2_29_t */                       \
  uintptr_t resourceWindow; /* device: the resource buffers' device window */              \
  ncclWindowVidmem_v2_29_t resourceWindow_inlined;                                         \
  ncclMultimemHandle_v2_29_t lsaMultimem;                                                  \
  ncclLsaBarrierHandle_v2_29_t lsaBarrier;                                                 \
  ncclGinBarrierHandle_v2_29_t railGinBarrier;                                             \
  uint8_t countName;                                                                       \
  uint8_t ginNetDeviceTypes[NCCL_DEVCOMM_V2_30_GIN_MAX_CONNECTIONS];                       \
  uintptr_t ginHandles[NCCL_DEVCOMM_V2_30_GIN_MAX_CONNECTIONS];                            \
  uint32_t ginSignalBase;                                                                  \
  int32_t ginSignalCount;                                                                  \
  uint32_t ginCounterBase;                                                                 \
  int32_t ginCounterCount;                                                                 \
  uintptr_t ginSignalShadows;

typedef struct {
  NCCL_DEVCOMM_V2_29_HEAD(ginContextCount)
} ncclDevComm_v2_29_2_t;

typedef struct {
  NCCL_DEVCOMM_V2_29_HEAD(ginConnectionCount)
  uint32_t ginContextCount;
  uint32_t ginContextBase;
  bool ginIsRailed;
  uintptr_t abortFlag; /* device: uint32_t, nonzero aborts waits; 0 = none */
} ncclDevComm_v2_29_7_t;
#undef NCCL_DEVCOMM_V2_29_HEAD

/* Host side: the requirements, versioned like 2.30's, of which they are prefixes. */
#define NCCL_DEVCOMM_REQUIREMENTS_V2_29_HEAD                                               \
  size_t size;                                                                             \
  uint32_t magic;                                                                          \
  uint32_t version;                                                                        \
  ncclDevResourceRequirements_v2_29_t* resourceRequirementsList;                           \
  ncclTeamRequirements_v2_29_t* teamRequirementsList;                                      \
  bool lsaMultimem;                                                                        \
  int32_t barrierCount;                                                                    \
  int32_t lsaBarrierCount;                                                                 \
  int32_t railGinBarrierCount;                                                             \
  int32_t lsaLLA2ABlockCount, lsaLLA2ASlotCount;                                           \
  bool ginForceEnable;                                                                     \
  int32_t ginContextCount;                                                                 \
  int32_t ginSignalCount;                                                                  \
  int32_t ginCounterCount;

typedef struct {
  NCCL_DEVCOMM_REQUIREMENTS_V2_29_HEAD
} ncclDevCommRequirements_v2_29_2_t;

typedef struct {
  NCCL_DEVCOMM_REQUIREMENTS_V2_29_HEAD
  int32_t ginConnectionType; /* ncclGinConnectionType_t */
  bool ginExclusiveContexts;
  int32_t ginQueueDepth;
} ncclDevCommRequirements_v2_29_7_t;
#undef NCCL_DEVCOMM_REQUIREMENTS_V2_29_HEAD

/* Host side: the properties. 2.29.2's ginType is a single byte. */
typedef struct {
  size_t size;
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t nRanks;
  int32_t cudaDev;
  int32_t nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  uint8_t ginType;
} ncclCommProperties_v2_29_2_t;

typedef ncclCommProperties_v2_30_t ncclCommProperties_v2_29_7_t;

#if UINTPTR_MAX == UINT64_MAX
/* 2.29.2 (NVIDIA's offsets for it) and 2.29.7 share these. */
#define NCCL_DEVCOMM_V2_29_ASSERT_HEAD(T, countName)                                       \
  WEFT_DEVCOMM_ASSERT(offsetof(T, rank) == 0);                                             \
  WEFT_DEVCOMM_ASSERT(offsetof(T, nRanks) == 4);                                           \
  WEFT_DEVCOMM_ASSERT(offsetof(T, nRanks_rcp32) == 8);                                     \
  WEFT_DEVCOMM_ASSERT(offsetof(T, lsaRank) == 12);                                         \
  WEFT_DEVCOMM_ASSERT(offsetof(T, lsaSize) == 16);                                         \
  WEFT_DEVCOMM_ASSERT(offsetof(T, lsaSize_rcp32) == 20);                                   \
  WEFT_DEVCOMM_ASSERT(offsetof(T, windowTable) == 24);                                     \
  WEFT_DEVCOMM_ASSERT(offsetof(T, resourceWindow) == 32);                                  \
  WEFT_DEVCOMM_ASSERT(offsetof(T, resourceWindow_inlined) == 40);                          \
  WEFT_DEVCOMM_ASSERT(offsetof(T, resourceWindow_inlined.lsaFlatBase) == 48);              \
  WEFT_DEVCOMM_ASSERT(offsetof(T, resourceWindow_inlined.stride4G) == 64);                 \
  WEFT_DEVCOMM_ASSERT(offsetof(T, resourceWindow_inlined.mcOffset4K) == 68);               \
  WEFT_DEVCOMM_ASSERT(offsetof(T, lsaMultimem) == 112);                                    \
  WEFT_DEVCOMM_ASSERT(offsetof(T, lsaBarrier) == 120);                                     \
  WEFT_DEVCOMM_ASSERT(offsetof(T, railGinBarrier) == 128);                                 \
  WEFT_DEVCOMM_ASSERT(offsetof(T, countName) == 136);                                      \
  WEFT_DEVCOMM_ASSERT(offsetof(T, ginNetDeviceTypes) == 137);                              \
  WEFT_DEVCOMM_ASSERT(offsetof(T, ginHandles) == 144);                                     \
  WEFT_DEVCOMM_ASSERT(offsetof(T, ginSignalBase) == 176);                                  \
  WEFT_DEVCOMM_ASSERT(offsetof(T, ginSignalCount) == 180);                                 \
  WEFT_DEVCOMM_ASSERT(offsetof(T, ginCounterBase) == 184);                                 \
  WEFT_DEVCOMM_ASSERT(offsetof(T, ginCounterCount) == 188);                                \
  WEFT_DEVCOMM_ASSERT(offsetof(T, ginSignalShadows) == 192)
NCCL_DEVCOMM_V2_29_ASSERT_HEAD(ncclDevComm_v2_29_2_t, ginContextCount);
NCCL_DEVCOMM_V2_29_ASSERT_HEAD(ncclDevComm_v2_29_7_t, ginConnectionCount);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevComm_v2_29_2_t) == 200);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_29_7_t, ginContextCount) == 200);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_29_7_t, ginContextBase) == 204);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_29_7_t, ginIsRailed) == 208);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_29_7_t, abortFlag) == 216);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevComm_v2_29_7_t) == 224);
#undef NCCL_DEVCOMM_V2_29_ASSERT_HEAD

WEFT_DEVCOMM_ASSERT(sizeof(ncclWindowVidmem_v2_29_t) == 72);
WEFT_DEVCOMM_ASSERT(offsetof(ncclWindowVidmem_v2_29_t, ginWins) == 40);
/* A prefix of the window weft fills (every 2.29 field at its 2.32 offset). */
WEFT_DEVCOMM_ASSERT(offsetof(ncclWindowVidmem_v2_29_t, stride4G) ==
                    offsetof(ncclWindowVidmem_v2_30_t, stride4G));
WEFT_DEVCOMM_ASSERT(offsetof(ncclWindowVidmem_v2_29_t, ginWins) ==
                    offsetof(ncclWindowVidmem_v2_30_t, ginWins));

WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_2_t, lsaMultimem) == 32);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_2_t, barrierCount) == 36);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_2_t, lsaBarrierCount) == 40);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_2_t, railGinBarrierCount) == 44);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_2_t, ginForceEnable) == 56);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_2_t, ginCounterCount) == 68);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevCommRequirements_v2_29_2_t) == 72);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_7_t, ginConnectionType) == 72);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_29_7_t, ginQueueDepth) == 80);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevCommRequirements_v2_29_7_t) == 88);
/* Prefixes of 2.30's. */
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevCommRequirements_v2_30_t, ginQueueDepth) ==
                    offsetof(ncclDevCommRequirements_v2_29_7_t, ginQueueDepth));

WEFT_DEVCOMM_ASSERT(offsetof(ncclCommProperties_v2_29_2_t, deviceApiSupport) == 32);
WEFT_DEVCOMM_ASSERT(offsetof(ncclCommProperties_v2_29_2_t, multimemSupport) == 33);
WEFT_DEVCOMM_ASSERT(offsetof(ncclCommProperties_v2_29_2_t, ginType) == 34);
WEFT_DEVCOMM_ASSERT(sizeof(ncclCommProperties_v2_29_2_t) == 40);
#endif

#endif
