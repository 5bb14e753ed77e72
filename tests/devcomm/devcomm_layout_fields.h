/* The structures and fields the device-API layout tests compare, as X-macros:
 * S(key) names a struct, F(key, field) one of its fields. Keys are mapped to a concrete type by
 * the probe (devcomm_layout_probe.c) for each side: NVIDIA's headers, weft's frozen C11 layouts
 * (abi/devcomm/), weft's own nccl_device.h. Every field of each struct is listed, not only the
 * ones the LSA functions read: the library writes them all. */
#ifndef WEFT_TEST_DEVCOMM_LAYOUT_FIELDS_H
#define WEFT_TEST_DEVCOMM_LAYOUT_FIELDS_H

/* Building blocks, each in every release named. */
/* 2.29 to 2.32: */
#define DEVCOMM_LAYOUT_EVERY(S, F)                                                               \
  S(DevComm) F(DevComm, rank) F(DevComm, nRanks) F(DevComm, nRanks_rcp32) F(DevComm, lsaRank)    \
  F(DevComm, lsaSize) F(DevComm, lsaSize_rcp32) F(DevComm, windowTable)                          \
  F(DevComm, resourceWindow) F(DevComm, resourceWindow_inlined) F(DevComm, lsaMultimem)          \
  F(DevComm, lsaBarrier) F(DevComm, railGinBarrier) F(DevComm, ginNetDeviceTypes)                \
  F(DevComm, ginHandles) F(DevComm, ginSignalCount) F(DevComm, ginCounterCount)                  \
  F(DevComm, ginSignalShadows) F(DevComm, ginContextCount)                                       \
  S(Window) F(Window, winHost) F(Window, lsaFlatBase) F(Window, lsaRank) F(Window, worldRank)    \
  F(Window, stride4G) F(Window, mcOffset4K) F(Window, ginOffset4K)                               \
  S(WindowTable) F(WindowTable, entries) F(WindowTable, next)                                    \
  S(WindowEntry) F(WindowEntry, base) F(WindowEntry, size) F(WindowEntry, window)                \
  S(Requirements) F(Requirements, size) F(Requirements, magic) F(Requirements, version)          \
  F(Requirements, resourceRequirementsList) F(Requirements, teamRequirementsList)                \
  F(Requirements, lsaMultimem) F(Requirements, barrierCount) F(Requirements, lsaBarrierCount)    \
  F(Requirements, railGinBarrierCount) F(Requirements, lsaLLA2ABlockCount)                       \
  F(Requirements, lsaLLA2ASlotCount) F(Requirements, ginForceEnable)                             \
  F(Requirements, ginContextCount) F(Requirements, ginSignalCount)                               \
  F(Requirements, ginCounterCount)                                                               \
  S(ResourceReq) F(ResourceReq, next) F(ResourceReq, bufferSize) F(ResourceReq, bufferAlign)     \
  F(ResourceReq, outBufferHandle) F(ResourceReq, ginSignalCount) F(ResourceReq, ginCounterCount) \
  F(ResourceReq, outGinSignalStart) F(ResourceReq, outGinCounterStart)                           \
  S(TeamReq) F(TeamReq, next) F(TeamReq, team) F(TeamReq, multimem)                              \
  F(TeamReq, outMultimemHandle)                                                                  \
  S(Properties) F(Properties, size) F(Properties, magic) F(Properties, version)                  \
  F(Properties, rank) F(Properties, nRanks) F(Properties, cudaDev) F(Properties, nvmlDev)        \
  F(Properties, deviceApiSupport) F(Properties, multimemSupport) F(Properties, ginType)          \
  S(LsaBarrier) F(LsaBarrier, bufHandle) F(LsaBarrier, nBarriers)                                \
  S(GinBarrier) F(GinBarrier, signal0)                                                           \
  S(Multimem) F(Multimem, mcBasePtr)                                                             \
  S(Team) F(Team, nRanks) F(Team, rank) F(Team, stride)

/* 2.29.7 to 2.32 (2.29.2 calls the byte at 136 ginContextCount and the GIN barrier's second
 * word bufHandle, weft's unused; its requirements and properties end earlier): */
#define DEVCOMM_LAYOUT_FROM_V2_29_7(S, F)                                                        \
  F(DevComm, ginConnectionCount) F(DevComm, abortFlag) F(GinBarrier, unused)                     \
  F(Requirements, ginConnectionType) F(Requirements, ginExclusiveContexts)                       \
  F(Requirements, ginQueueDepth) F(Properties, nLsaTeams) F(Properties, hostRmaSupport)          \
  F(Properties, railedGinType)

/* In 2.30 and 2.32 alike. */
#define DEVCOMM_LAYOUT_COMMON(S, F)                                                              \
  DEVCOMM_LAYOUT_EVERY(S, F)                                                                     \
  DEVCOMM_LAYOUT_FROM_V2_29_7(S, F)                                                              \
  F(DevComm, magic) F(DevComm, version) F(DevComm, ginStrongLegacySignals)                       \
  F(DevComm, hybridLsaBarrier) F(DevComm, hybridRailGinBarrier) F(DevComm, worldGinBarrier)      \
  S(ResourceWindow) F(ResourceWindow, lsaFlatBase) F(ResourceWindow, stride4G)                   \
  F(ResourceWindow, mcOffset4K)                                                                  \
  F(Window, ginMultiSegmentWins) F(Window, numSegments)                                          \
  F(Requirements, ginTrafficClass) F(Requirements, worldGinBarrierCount)                         \
  F(Requirements, ginStrongSignalsRequired) F(Requirements, ginVaSignalsRequired)

/* 2.30 only. */
#define DEVCOMM_LAYOUT_ONLY_V2_30(S, F)                                                          \
  F(DevComm, hybridWorldGinBarrier) F(DevComm, ginConnectionsRailed)                             \
  F(DevComm, ginContextsRailed) F(Window, ginWins)

/* 2.32 only. */
#define DEVCOMM_LAYOUT_ONLY_V2_32(S, F)                                                          \
  F(DevComm, hybridDenseGinBarrier) F(DevComm, backendIndex) F(DevComm, ginConnectionStride)     \
  F(DevComm, ginContextStride) F(DevComm, ginConnectionStride_rcp32) F(DevComm, cftRank)         \
  F(DevComm, cftSize) F(DevComm, cftMultimemRank) F(DevComm, cftMultimemSize)                    \
  F(DevComm, cftMultimemSize_rcp32) F(DevComm, ucLeId) F(DevComm, mcLeId)                        \
  F(DevComm, cftBarrier) F(DevComm, cftMultimemBarrier)                                          \
  F(Window, winFlags) F(Window, ginWinsDefaultBackend) F(Window, cftFlatRank)                    \
  F(Window, ucLeIdBase) F(Window, lsaPeerDelta4G)                                                \
  F(Requirements, ginCustomStride) F(Requirements, ginType) F(Requirements, useRuntimeVersion)  \
  F(Requirements, cftCaps) F(Requirements, cftBarrierCount) F(Requirements, ginCustomArray)      \
  F(Requirements, ginCustomArrayCount)                                                           \
  F(Properties, commHash) F(Properties, ginMinStride) F(Properties, ginConnectionType)           \
  F(Properties, ginSupport) F(Properties, devCommRuntimeVersionSize) F(Properties, cftSupport)   \
  F(Properties, cftMulticastSupport) F(Properties, cftCountedSupport)                            \
  S(CftBarrier) F(CftBarrier, bufHandle) F(CftBarrier, nBarriers)

/* 2.29 (2.29.2 and 2.29.7): no magic, no version, a whole window inlined. */
#define DEVCOMM_LAYOUT_V2_29_SHARED(S, F)                                                        \
  DEVCOMM_LAYOUT_EVERY(S, F)                                                                     \
  F(DevComm, ginSignalBase) F(DevComm, ginCounterBase) F(Window, ginWins)

#define DEVCOMM_LAYOUT_ONLY_V2_29_7(S, F)                                                        \
  DEVCOMM_LAYOUT_FROM_V2_29_7(S, F) F(DevComm, ginContextBase) F(DevComm, ginIsRailed)

#endif
