/* Device-API layout of NCCL 2.30 (2.30.0 to 2.30.7): the structures that kernels compiled
 * against NVIDIA's 2.30 nccl_device.h read, and the host-side requirement and property structs
 * their callers pass in. FROZEN: kernels already compiled carry these offsets; a later NCCL
 * layout is a new file (devcomm_v2_32.h). weft's own nccl_device.h uses this layout too.
 *
 * Plain C11, no CUDA header. Addresses the kernel dereferences (device memory) are uintptr_t,
 * so host code cannot use them by mistake; pointers the host reads stay pointers. Who writes
 * what: the library fills ncclDevComm_v2_30_t in ncclDevCommCreate (the caller's memory, passed
 * to kernels by value), the device window (ncclWindowVidmem_v2_32_t, a superset of the 2.30
 * one, see below) and the window table live in device memory the library owns; the caller
 * fills the requirement structs and reads the properties.
 *
 * Layout on LP64 (checked below and, against NVIDIA's headers, by tests/devcomm):
 * ncclDevComm_v2_30_t 240 bytes, ncclWindowVidmem_v2_30_t 88, ncclResourceWindow_v2_30_t 64,
 * ncclDevCommRequirements_v2_30_t 96, ncclCommProperties_v2_30_t 56,
 * ncclDevResourceRequirements_v2_30_t 56, ncclTeamRequirements_v2_30_t 32,
 * ncclDevWindowTable_v2_30_t 776, ncclLLA2AHandle_v2_30_t 8, ncclGinOutboxHandle_v2_30_t 8,
 * ncclGinInboxA2AHandle_v2_30_t 16. */
#ifndef WEFT_ABI_DEVCOMM_V2_30_H
#define WEFT_ABI_DEVCOMM_V2_30_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"

/* Versions whose callers get this layout (NVIDIA's 2.30.7 library converts none of them). */
#define NCCL_DEVCOMM_V2_30_MIN_VERSION 23000
#define NCCL_DEVCOMM_V2_30_MAX_VERSION 23007

/* GIN connections a device communicator and a window describe (array lengths below). */
#define NCCL_DEVCOMM_V2_30_GIN_MAX_CONNECTIONS 4

/* Entries in one chunk of the device window table. */
#define NCCL_DEVCOMM_V2_30_WINDOW_TABLE_ENTRIES 32

typedef uint32_t ncclDevResourceHandle_v2_30_t;

/* A multicast object's base address (device); 0 when the team has no multimem. */
typedef struct {
  uintptr_t mcBasePtr;
} ncclMultimemHandle_v2_30_t;

/* An LSA barrier: resource buffer `bufHandle` holds nBarriers barriers (layout in
 * nccl_devcomm.h, NCCL_LSA_BARRIER_*). */
typedef struct {
  ncclDevResourceHandle_v2_30_t bufHandle;
  int32_t nBarriers;
} ncclLsaBarrierHandle_v2_30_t;

/* A GIN barrier: its first signal; the second word is not read. */
typedef struct {
  uint32_t signal0;
  ncclDevResourceHandle_v2_30_t unused;
} ncclGinBarrierHandle_v2_30_t;

/* The handles the scratch-object requirement functions fill (ncclLLA2ACreateRequirement,
 * ncclGin{Outbox,InboxA2A}CreateRequirement): NVIDIA's struct ncclLLA2AHandle,
 * ncclGinOutboxHandle and ncclGinInboxA2AHandle (alike in 2.30.7 and 2.32.6). An LL
 * all-to-all: resource buffer bufHandle holds nSlots slots per block. */
typedef struct {
  ncclDevResourceHandle_v2_30_t bufHandle;
  uint32_t nSlots;
} ncclLLA2AHandle_v2_30_t;

/* A GIN outbox: per block a state, the request slots and a buffer of 2^size_log2 bytes. */
typedef struct {
  ncclDevResourceHandle_v2_30_t bufHandle;
  uint32_t size_log2;
} ncclGinOutboxHandle_v2_30_t;

/* A GIN all-to-all inbox: its buffer, its first GIN signal, 2^size_log2 bytes per peer, and
 * 2^32 / (peers - 1) rounded up as NCCL's idivRcp32 (nPeers_rcp32). */
typedef struct {
  ncclDevResourceHandle_v2_30_t bufHandle;
  uint32_t signals; /* ncclGinSignal_t */
  uint32_t size_log2;
  uint32_t nPeers_rcp32;
} ncclGinInboxA2AHandle_v2_30_t;

/* The device-side window ncclWindow_t points to (NVIDIA's struct ncclWindow_vidmem). Peer
 * `i` of the LSA team has its copy of the window at lsaFlatBase + i * stride4G * 4 GiB. */
typedef struct {
  uintptr_t winHost;      /* the library's host-side window object (opaque to kernels) */
  uintptr_t lsaFlatBase;  /* device: LSA rank 0's first byte */
  int32_t lsaRank;
  int32_t worldRank;
  uint32_t stride4G;      /* distance between consecutive LSA ranks, in 4 GiB units */
  uint32_t mcOffset4K;    /* offset in the multicast object, in 4 KiB units */
  uint32_t ginOffset4K;
  uint32_t unread0;       /* padding in 2.30 (2.32 puts winFlags here) */
  uintptr_t ginWins[NCCL_DEVCOMM_V2_30_GIN_MAX_CONNECTIONS];
  uintptr_t ginMultiSegmentWins;
  int32_t numSegments;
} ncclWindowVidmem_v2_30_t;

/* The resource window's addressing fields copied into the device communicator, at the
 * offsets they have in ncclWindowVidmem_v2_30_t (the other bytes are not read). */
typedef struct {
  uint8_t unread0[8];
  uintptr_t lsaFlatBase;
  uint8_t unread1[8];
  uint32_t stride4G;
  uint32_t mcOffset4K;
  uint8_t unread2[32];
} ncclResourceWindow_v2_30_t;

/* One registered window: a kernel finds the window holding address p where
 * p - base < size (all three nonzero). */
typedef struct {
  uintptr_t base, size;
  uintptr_t window; /* device: its ncclWindowVidmem */
} ncclDevWindowTableEntry_v2_30_t;

/* A chunk of the table; `next` (device) chains further chunks, 0 ends it. */
typedef struct {
  ncclDevWindowTableEntry_v2_30_t entries[NCCL_DEVCOMM_V2_30_WINDOW_TABLE_ENTRIES];
  uintptr_t next;
} ncclDevWindowTable_v2_30_t;

/* The device communicator, passed to kernels by value. */
typedef struct {
  uint32_t magic;   /* NCCL_API_MAGIC */
  uint32_t version; /* the requirements' version: which layout this is */
  int32_t rank, nRanks;
  uint32_t nRanks_rcp32; /* ncclDevCommRcp32(nRanks) */
  int32_t lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  uintptr_t windowTable;    /* device: ncclDevWindowTable_v2_30_t */
  uintptr_t resourceWindow; /* device: the resource buffers' ncclWindowVidmem */
  ncclResourceWindow_v2_30_t resourceWindow_inlined;
  ncclGinBarrierHandle_v2_30_t hybridWorldGinBarrier;
  ncclMultimemHandle_v2_30_t lsaMultimem;
  ncclLsaBarrierHandle_v2_30_t lsaBarrier;
  ncclGinBarrierHandle_v2_30_t railGinBarrier;
  uint8_t ginConnectionCount;
  uint8_t ginNetDeviceTypes[NCCL_DEVCOMM_V2_30_GIN_MAX_CONNECTIONS];
  uintptr_t ginHandles[NCCL_DEVCOMM_V2_30_GIN_MAX_CONNECTIONS];
  int32_t ginSignalCount;
  int32_t ginCounterCount;
  uintptr_t ginSignalShadows;
  uint32_t ginContextCount;
  bool ginConnectionsRailed;
  bool ginStrongLegacySignals;
  bool ginContextsRailed;
  uintptr_t abortFlag; /* device: uint32_t, nonzero aborts waits; 0 = none */
  ncclLsaBarrierHandle_v2_30_t hybridLsaBarrier;
  ncclGinBarrierHandle_v2_30_t hybridRailGinBarrier;
  ncclGinBarrierHandle_v2_30_t worldGinBarrier;
} ncclDevComm_v2_30_t;

/* Host side: one resource buffer (and GIN signals/counters) a kernel wants. */
typedef struct ncclDevResourceRequirements_v2_30 {
  struct ncclDevResourceRequirements_v2_30* next;
  size_t bufferSize, bufferAlign;
  ncclDevResourceHandle_v2_30_t* outBufferHandle; /* set by ncclDevCommCreate when non-NULL */
  int32_t ginSignalCount;
  int32_t ginCounterCount;
  uint32_t* outGinSignalStart;
  uint32_t* outGinCounterStart;
} ncclDevResourceRequirements_v2_30_t;

/* Host side: a team that wants a multicast object. */
typedef struct ncclTeamRequirements_v2_30 {
  struct ncclTeamRequirements_v2_30* next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_v2_30_t* outMultimemHandle; /* set by ncclDevCommCreate when non-NULL */
} ncclTeamRequirements_v2_30_t;

/* Host side: what ncclDevCommCreate is asked for. size/magic/version are the initializer's. */
typedef struct {
  size_t size;
  uint32_t magic;
  uint32_t version;
  ncclDevResourceRequirements_v2_30_t* resourceRequirementsList;
  ncclTeamRequirements_v2_30_t* teamRequirementsList;
  bool lsaMultimem;
  int32_t barrierCount;
  int32_t lsaBarrierCount;
  int32_t railGinBarrierCount;
  int32_t lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int32_t ginContextCount;
  int32_t ginSignalCount;
  int32_t ginCounterCount;
  int32_t ginConnectionType; /* ncclGinConnectionType_t */
  bool ginExclusiveContexts;
  int32_t ginQueueDepth;
  int32_t ginTrafficClass;
  int32_t worldGinBarrierCount;
  bool ginStrongSignalsRequired;
  bool ginVaSignalsRequired;
} ncclDevCommRequirements_v2_30_t;

/* Host side: what ncclCommQueryProperties answers. */
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
  int32_t ginType; /* ncclGinType_t */
  int32_t nLsaTeams;
  bool hostRmaSupport;
  int32_t railedGinType; /* ncclGinType_t */
} ncclCommProperties_v2_30_t;

/* Layout checks on LP64, in C11 and C++11 alike. */
#ifndef WEFT_DEVCOMM_ASSERT
#ifdef __cplusplus
#define WEFT_DEVCOMM_ASSERT(e) static_assert(e, #e)
#else
#define WEFT_DEVCOMM_ASSERT(e) _Static_assert(e, #e)
#endif
#endif

#if UINTPTR_MAX == UINT64_MAX
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevComm_v2_30_t) == 240);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_30_t, resourceWindow_inlined) == 48);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_30_t, lsaMultimem) == 120);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_30_t, lsaBarrier) == 128);
WEFT_DEVCOMM_ASSERT(offsetof(ncclDevComm_v2_30_t, abortFlag) == 208);
WEFT_DEVCOMM_ASSERT(sizeof(ncclWindowVidmem_v2_30_t) == 88);
WEFT_DEVCOMM_ASSERT(sizeof(ncclResourceWindow_v2_30_t) == 64);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevWindowTable_v2_30_t) == 776);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevCommRequirements_v2_30_t) == 96);
WEFT_DEVCOMM_ASSERT(sizeof(ncclCommProperties_v2_30_t) == 56);
WEFT_DEVCOMM_ASSERT(sizeof(ncclDevResourceRequirements_v2_30_t) == 56);
WEFT_DEVCOMM_ASSERT(sizeof(ncclTeamRequirements_v2_30_t) == 32);
#endif
/* The scratch handles hold 32-bit words only: the same on every ABI. */
WEFT_DEVCOMM_ASSERT(sizeof(ncclLLA2AHandle_v2_30_t) == 8);
WEFT_DEVCOMM_ASSERT(offsetof(ncclLLA2AHandle_v2_30_t, nSlots) == 4);
WEFT_DEVCOMM_ASSERT(sizeof(ncclGinOutboxHandle_v2_30_t) == 8);
WEFT_DEVCOMM_ASSERT(offsetof(ncclGinOutboxHandle_v2_30_t, size_log2) == 4);
WEFT_DEVCOMM_ASSERT(sizeof(ncclGinInboxA2AHandle_v2_30_t) == 16);
WEFT_DEVCOMM_ASSERT(offsetof(ncclGinInboxA2AHandle_v2_30_t, signals) == 4);
WEFT_DEVCOMM_ASSERT(offsetof(ncclGinInboxA2AHandle_v2_30_t, size_log2) == 8);
WEFT_DEVCOMM_ASSERT(offsetof(ncclGinInboxA2AHandle_v2_30_t, nPeers_rcp32) == 12);

#endif
