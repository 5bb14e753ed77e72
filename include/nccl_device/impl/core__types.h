/* The structures the library fills and kernels read, laid out as NCCL 2.30 lays them out (the
 * frozen layout abi/devcomm/devcomm_v2_30.h, which the static_asserts below tie this file to;
 * tests/devcomm compares both with NVIDIA's headers). Field by field, who writes it:
 * everything here is written by the library (ncclDevCommCreate, ncclCommWindowRegister)
 * except the requirement structs, which the caller fills before ncclDevCommCreate. */
#ifndef WEFT_NCCL_DEVICE_CORE__TYPES_H
#define WEFT_NCCL_DEVICE_CORE__TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "nccl_devcomm.h"

#define WEFT_DEV_GIN_MAX_CONNECTIONS 4

/* The device-side window: LSA rank i's copy of it starts at lsaFlatBase + i * stride4G * 4 GiB.
 * weft allocates the larger 2.32 form of this struct; the fields below keep their offsets. */
struct ncclWindow_vidmem {
  void* winHost;      /* the library's host-side object */
  char* lsaFlatBase;  /* LSA rank 0's first byte */
  int lsaRank;        /* this rank in the LSA team */
  int worldRank;      /* this rank in the communicator */
  uint32_t stride4G;  /* LSA rank to LSA rank, in 4 GiB units */
  uint32_t mcOffset4K;
  uint32_t ginOffset4K;
  void* ginWins[WEFT_DEV_GIN_MAX_CONNECTIONS];
  void* ginMultiSegmentWins;
  int numSegments;
};

/* The resource window's addressing fields, copied into the device communicator at the offsets
 * they have in the window (the rest is not read). */
struct ncclResourceWindow_vidmem {
  char unread0[8];
  char* lsaFlatBase;
  char unread1[8];
  uint32_t stride4G;
  uint32_t mcOffset4K;
  char unread2[32];
};

#ifdef __cplusplus
/* Registered windows by this rank's address: 32 entries (0/0/NULL when free) and the next
 * chunk (NULL at the end). */
struct ncclDevCommWindowTable {
  struct Entry {
    uintptr_t base, size;
    ncclWindow_t window;
  } entries[32];
  struct ncclDevCommWindowTable* next;
};
#endif

/* An LSA barrier set: nBarriers barriers in resource buffer bufHandle (word layout in
 * abi/nccl_devcomm.h, NCCL_LSA_BARRIER_*). */
struct ncclLsaBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
};

/* A GIN barrier set (not in weft yet: zero). */
struct ncclGinBarrierHandle {
  ncclGinSignal_t signal0;
  ncclDevResourceHandle_t unused;
};

/* The device communicator. */
struct ncclDevComm {
  unsigned int magic;   /* NCCL_API_MAGIC */
  unsigned int version; /* the requirements' version: which layout this is */
  int rank, nRanks;     /* in the communicator */
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize; /* in this rank's LSA team */
  uint32_t lsaSize_rcp32;
  ncclDevCommWindowTable_t windowTable;
  ncclWindow_t resourceWindow;                  /* holds every resource buffer */
  ncclResourceWindow_vidmem_t resourceWindow_inlined;
  ncclGinBarrierHandle_t hybridWorldGinBarrier;
  ncclMultimemHandle_t lsaMultimem;             /* mcBasePtr NULL: weft has no multicast */
  ncclLsaBarrierHandle_t lsaBarrier;            /* reqs.lsaBarrierCount barriers of the LSA team */
  ncclGinBarrierHandle_t railGinBarrier;
  uint8_t ginConnectionCount;                   /* 0 in weft (no GIN yet) */
  uint8_t ginNetDeviceTypes[WEFT_DEV_GIN_MAX_CONNECTIONS];
  void* ginHandles[WEFT_DEV_GIN_MAX_CONNECTIONS];
  int ginSignalCount;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
  uint32_t ginContextCount;
  bool ginConnectionsRailed;
  bool ginStrongLegacySignals;
  bool ginContextsRailed;
  uint32_t* abortFlag;                          /* nonzero: waits give up; may be NULL */
  ncclLsaBarrierHandle_t hybridLsaBarrier;      /* reqs.barrierCount barriers of the LSA team */
  ncclGinBarrierHandle_t hybridRailGinBarrier;
  ncclGinBarrierHandle_t worldGinBarrier;
};

/* A resource buffer a kernel wants: bufferSize bytes aligned to bufferAlign in every LSA rank's
 * copy of the resource window; its handle goes to *outBufferHandle. Chained through next. */
struct ncclDevResourceRequirements {
  ncclDevResourceRequirements_t* next;
  size_t bufferSize, bufferAlign;
  ncclDevResourceHandle_t* outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinSignal_t* outGinSignalStart;
  ncclGinCounter_t* outGinCounterStart;
};

/* A team that wants a multicast object (weft refuses multimem). */
struct ncclTeamRequirements {
  ncclTeamRequirements_t* next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_t* outMultimemHandle;
};

/* What ncclDevCommCreate is asked for. Start from NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER:
 * size, magic and version tell the library which layout the caller has. */
struct ncclDevCommRequirements {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem;        /* refused by weft */
  int barrierCount;        /* hybrid (LSA + rail) barriers: hybridLsaBarrier */
  int lsaBarrierCount;     /* LSA barriers: lsaBarrier */
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinConnectionType_t ginConnectionType;
  bool ginExclusiveContexts;
  int ginQueueDepth;
  int ginTrafficClass;
  int worldGinBarrierCount;
  bool ginStrongSignalsRequired;
  bool ginVaSignalsRequired;
};

/* NCCL's defaults: nothing asked for, 4 GIN contexts hinted, GIN signals of both kinds. */
#define NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER                                                  \
  {                                                                                             \
    sizeof(ncclDevCommRequirements_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,                       \
        NULL /* resourceRequirementsList */, NULL /* teamRequirementsList */,                   \
        false /* lsaMultimem */, 0 /* barrierCount */, 0 /* lsaBarrierCount */,                \
        0 /* railGinBarrierCount */, 0 /* lsaLLA2ABlockCount */, 0 /* lsaLLA2ASlotCount */,   \
        false /* ginForceEnable */, 4 /* ginContextCount */, 0 /* ginSignalCount */,           \
        0 /* ginCounterCount */, NCCL_GIN_CONNECTION_NONE, false /* ginExclusiveContexts */,   \
        0 /* ginQueueDepth */, NCCL_CONFIG_UNDEF_INT /* ginTrafficClass */,                     \
        0 /* worldGinBarrierCount */, true /* ginStrongSignalsRequired */,                      \
        true /* ginVaSignalsRequired */                                                         \
  }

/* This file's layout is the frozen 2.30 one. */
#if UINTPTR_MAX == UINT64_MAX
#define WEFT_DEV_SAME_LAYOUT(T, F, V)                                                           \
  WEFT_DEVCOMM_ASSERT(offsetof(T, F) == offsetof(V, F) && sizeof(((T*)0)->F) == sizeof(((V*)0)->F))
WEFT_DEVCOMM_ASSERT(sizeof(struct ncclDevComm) == sizeof(ncclDevComm_v2_30_t));
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, rank, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, nRanks, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, lsaRank, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, lsaSize, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, lsaSize_rcp32, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, windowTable, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, resourceWindow, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, resourceWindow_inlined, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, lsaMultimem, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, lsaBarrier, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, abortFlag, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevComm, hybridLsaBarrier, ncclDevComm_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclWindow_vidmem, lsaFlatBase, ncclWindowVidmem_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclWindow_vidmem, lsaRank, ncclWindowVidmem_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclWindow_vidmem, worldRank, ncclWindowVidmem_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclWindow_vidmem, stride4G, ncclWindowVidmem_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclWindow_vidmem, mcOffset4K, ncclWindowVidmem_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclResourceWindow_vidmem, lsaFlatBase, ncclResourceWindow_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclResourceWindow_vidmem, stride4G, ncclResourceWindow_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclResourceWindow_vidmem, mcOffset4K, ncclResourceWindow_v2_30_t);
WEFT_DEVCOMM_ASSERT(sizeof(struct ncclDevCommRequirements) ==
                    sizeof(ncclDevCommRequirements_v2_30_t));
WEFT_DEV_SAME_LAYOUT(struct ncclDevCommRequirements, lsaBarrierCount,
                     ncclDevCommRequirements_v2_30_t);
WEFT_DEV_SAME_LAYOUT(struct ncclDevCommRequirements, barrierCount,
                     ncclDevCommRequirements_v2_30_t);
WEFT_DEVCOMM_ASSERT(sizeof(struct ncclDevResourceRequirements) ==
                    sizeof(ncclDevResourceRequirements_v2_30_t));
#ifdef __cplusplus
WEFT_DEVCOMM_ASSERT(sizeof(struct ncclDevCommWindowTable) == sizeof(ncclDevWindowTable_v2_30_t));
#endif
#undef WEFT_DEV_SAME_LAYOUT
#endif

#endif
