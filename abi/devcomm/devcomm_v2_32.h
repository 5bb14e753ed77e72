/* Device-API layout of NCCL 2.32.6. FROZEN, like devcomm_v2_30.h. Against 2.30:
 * - ncclDevComm: the inlined resource window shrinks to its three addressing fields (64 -> 16
 *   bytes), so every later field moves; hybridWorldGinBarrier is renamed hybridDenseGinBarrier;
 *   the GIN railing flags become strides; CFT (fabric) ranks, endpoint ids and barriers follow.
 * - The device window gains winFlags (in 2.30's padding), cftFlatRank, ucLeIdBase and
 *   lsaPeerDelta4G; every 2.30 field keeps its offset, so ncclWindowVidmem_v2_32_t is a layout
 *   superset of ncclWindowVidmem_v2_30_t and one device window serves callers of both.
 * - Kernels find a peer by world rank through lsaPeerDelta4G (ncclGetPeerPointer and the LSA
 *   barrier's inboxes read it through the resource window), not through lsaRank arithmetic.
 * - Requirements and properties gain fields at their end.
 * Layout on LP64: ncclDevComm_v2_32_t 248 bytes, ncclWindowVidmem_v2_32_t 104,
 * ncclResourceWindow_v2_32_t 16, ncclDevCommRequirements_v2_32_t 136,
 * ncclCommProperties_v2_32_t 152; the other structs are 2.30's. */
#ifndef WEFT_ABI_DEVCOMM_V2_32_H
#define WEFT_ABI_DEVCOMM_V2_32_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devcomm_v2_30.h"

/* Versions whose callers get this layout: only the release whose headers were checked. */
#define NCCL_DEVCOMM_V2_32_MIN_VERSION 23206
#define NCCL_DEVCOMM_V2_32_MAX_VERSION 23206

#define NCCL_DEVCOMM_V2_32_GIN_MAX_CONNECTIONS 4

/* lsaPeerDelta4G entry of a world rank that is not an LSA peer. */
#define NCCL_DEVCOMM_V2_32_PEER_DELTA4G_INVALID INT_MIN

/* ncclWindowVidmem_v2_32_t.winFlags: the window's registration flags (NCCL_WIN_*). */
#define NCCL_DEVCOMM_V2_32_WIN_CFT_COUNTED 0x08

typedef ncclDevResourceHandle_v2_30_t ncclDevResourceHandle_v2_32_t;
typedef ncclMultimemHandle_v2_30_t ncclMultimemHandle_v2_32_t;
typedef ncclLsaBarrierHandle_v2_30_t ncclLsaBarrierHandle_v2_32_t;
typedef ncclGinBarrierHandle_v2_30_t ncclGinBarrierHandle_v2_32_t;
typedef ncclDevWindowTableEntry_v2_30_t ncclDevWindowTableEntry_v2_32_t;
typedef ncclDevWindowTable_v2_30_t ncclDevWindowTable_v2_32_t;
typedef ncclDevResourceRequirements_v2_30_t ncclDevResourceRequirements_v2_32_t;
typedef ncclTeamRequirements_v2_30_t ncclTeamRequirements_v2_32_t;

/* A fabric (CFT) logical endpoint id. */
typedef uint32_t ncclCftLeId_v2_32_t;

/* A CFT barrier: same shape as the LSA one. */
typedef struct {
  ncclDevResourceHandle_v2_32_t bufHandle;
  int32_t nBarriers;
} ncclCftBarrierHandle_v2_32_t;

/* The device-side window. Kernels of 2.30 read its first 36 bytes, kernels of 2.32 also
 * lsaPeerDelta4G (and winFlags, ucLeIdBase for CFT). */
typedef struct {
  uintptr_t winHost;
  uintptr_t lsaFlatBase;
  int32_t lsaRank;
  int32_t worldRank;
  uint32_t stride4G;
  uint32_t mcOffset4K;
  uint32_t ginOffset4K;
  uint32_t winFlags;
  uintptr_t ginWinsDefaultBackend[NCCL_DEVCOMM_V2_32_GIN_MAX_CONNECTIONS];
  uintptr_t ginMultiSegmentWins;
  int32_t numSegments;
  int32_t cftFlatRank;
  ncclCftLeId_v2_32_t ucLeIdBase;
  /* device: int32_t[nRanks], indexed by world rank: that rank's copy of the window is at
   * lsaFlatBase + delta * 4 GiB; NCCL_DEVCOMM_V2_32_PEER_DELTA4G_INVALID when not an LSA peer */
  uintptr_t lsaPeerDelta4G;
} ncclWindowVidmem_v2_32_t;

/* The resource window's addressing fields, inlined in the device communicator. */
typedef struct {
  uintptr_t lsaFlatBase;
  uint32_t stride4G;
  uint32_t mcOffset4K;
} ncclResourceWindow_v2_32_t;

typedef struct {
  uint32_t magic;
  uint32_t version;
  int32_t rank, nRanks;
  uint32_t nRanks_rcp32;
  int32_t lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  uintptr_t windowTable;    /* device: ncclDevWindowTable_v2_32_t */
  uintptr_t resourceWindow; /* device: ncclWindowVidmem_v2_32_t (2.32 kernels read its
                               lsaPeerDelta4G) */
  ncclResourceWindow_v2_32_t resourceWindow_inlined;
  ncclGinBarrierHandle_v2_32_t hybridDenseGinBarrier;
  ncclMultimemHandle_v2_32_t lsaMultimem;
  ncclLsaBarrierHandle_v2_32_t lsaBarrier;
  ncclGinBarrierHandle_v2_32_t railGinBarrier;
  uint8_t ginConnectionCount;
  uint8_t backendIndex;
  uint8_t ginNetDeviceTypes[NCCL_DEVCOMM_V2_32_GIN_MAX_CONNECTIONS];
  uintptr_t ginHandles[NCCL_DEVCOMM_V2_32_GIN_MAX_CONNECTIONS];
  int32_t ginSignalCount;
  int32_t ginCounterCount;
  uintptr_t ginSignalShadows;
  uint32_t ginContextCount;
  int32_t ginConnectionStride;
  int32_t ginContextStride;
  bool ginStrongLegacySignals;
  uintptr_t abortFlag;
  ncclLsaBarrierHandle_v2_32_t hybridLsaBarrier;
  ncclGinBarrierHandle_v2_32_t hybridRailGinBarrier;
  ncclGinBarrierHandle_v2_32_t worldGinBarrier;
  uint32_t ginConnectionStride_rcp32;
  int32_t cftRank, cftSize;
  int32_t cftMultimemRank, cftMultimemSize;
  uint32_t cftMultimemSize_rcp32;
  ncclCftLeId_v2_32_t ucLeId;
  ncclCftLeId_v2_32_t mcLeId;
  ncclCftBarrierHandle_v2_32_t cftBarrier;
  ncclCftBarrierHandle_v2_32_t cftMultimemBarrier;
} ncclDevComm_v2_32_t;

typedef struct {
  size_t size;
  uint32_t magic;
  uint32_t version;
  ncclDevResourceRequirements_v2_32_t* resourceRequirementsList;
  ncclTeamRequirements_v2_32_t* teamRequirementsList;
  bool lsaMultimem;
  int32_t barrierCount;
  int32_t lsaBarrierCount;
  int32_t railGinBarrierCount;
  int32_t lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int32_t ginContextCount;
  int32_t ginSignalCount;
  int32_t ginCounterCount;
  int32_t ginConnectionType;
  bool ginExclusiveContexts;
  int32_t ginQueueDepth;
  int32_t ginTrafficClass;
  int32_t worldGinBarrierCount;
  bool ginStrongSignalsRequired;
  bool ginVaSignalsRequired;
  /* new in 2.32 */
  int32_t ginCustomStride;
  int32_t ginType;          /* ncclGinType_t; 0 = any */
  bool useRuntimeVersion;   /* fill the library's own newest layout, sized by
                               ncclCommProperties.devCommRuntimeVersionSize */
  int32_t cftCaps;          /* ncclCftCap_t bits */
  int32_t cftBarrierCount;
  int32_t* ginCustomArray;
  int32_t ginCustomArrayCount;
} ncclDevCommRequirements_v2_32_t;

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
  int32_t ginType;
  int32_t nLsaTeams;
  bool hostRmaSupport;
  int32_t railedGinType;
  /* new in 2.32 */
  uint64_t commHash;
  int32_t ginMinStride;
  int32_t ginConnectionType;
  bool ginSupport[64];              /* [t]: GIN type t usable */
  size_t devCommRuntimeVersionSize; /* bytes of the library's own ncclDevComm */
  bool cftSupport;
  bool cftMulticastSupport;
  bool cftCountedSupport;
} ncclCommProperties_v2_32_t;

#if UINTPTR_MAX == UINT64_MAX
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevComm_v2_32_t) == 248);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_32_t, resourceWindow_inlined) == 48);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_32_t, lsaMultimem) == 72);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_32_t, lsaBarrier) == 80);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_32_t, abortFlag) == 168);
WEFT_DEVCOMM_ASSERT(sizeof(ncclWindowVidmem_v2_32_t) == 104);
WEFT_DEVCOMM_ASSERT(offsetof(ncclWindowVidmem_v2_32_t, lsaPeerDelta4G) == 96);
WEFT_DEVCOMM_ASSERT(sizeof(ncclResourceWindow_v2_32_t) == 16);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevCommRequirements_v2_32_t) == 136);
WEFT_DEVCOMM_ASSERT(sizeof(ncclCommProperties_v2_32_t) == 152);
/* The 2.32 window is a superset of the 2.30 one: same offsets for every 2.30 field. */
WEFT_DEVCOMM_ASSERT(offsetof(ncclWindowVidmem_v2_32_t, ginOffset4K) ==
                    offsetof(ncclWindowVidmem_v2_30_t, ginOffset4K));
WEFT_DEVCOMM_ASSERT(offsetof(ncclWindowVidmem_v2_32_t, ginWinsDefaultBackend) ==
                    offsetof(ncclWindowVidmem_v2_30_t, ginWins));
WEFT_DEVCOMM_ASSERT(offsetof(ncclWindowVidmem_v2_32_t, numSegments) ==
                    offsetof(ncclWindowVidmem_v2_30_t, numSegments));
#endif

#endif
