/* abi_headers_plain_c: weft's ABI headers compile as plain C11 with no CUDA header anywhere,
 * and their layouts and values are NCCL 2.28's on LP64, written down here from NCCL's published
 * headers. Almost everything is checked at compile time; main checks the initializers. These
 * facts do not need NVIDIA's header on the machine (abi_matches_nvidia_header compares against
 * it where it is installed). */
#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nccl.h"
#include "nccl_net.h"
#include "nccl_tuner.h"
#include "nccl_env.h"
#include "weft.h"
#include "testutil.h"

#if defined(__CUDA_RUNTIME_H__) || defined(__DRIVER_TYPES_H__) || defined(CUDA_VERSION)
#error "weft's ABI headers must not pull in CUDA headers"
#endif

#define SIZE_IS(T, n) static_assert(sizeof(T) == (n), "sizeof(" #T ") != " #n)
#define OFF_IS(T, f, n) static_assert(offsetof(T, f) == (n), "offsetof(" #T ", " #f ") != " #n)
#define VAL_IS(x, n) static_assert((x) == (n), #x " != " #n)
/* A struct member has exactly function-pointer type F. */
#define MEMBER_TYPE_IS(T, m, F) \
  static_assert(_Generic(((T*)0)->m, F: 1, default: 0), #T "." #m " is not " #F)
/* Member number i of a table of pointers. */
#define SLOT_IS(T, m, i) OFF_IS(T, m, (i) * sizeof(void*))

static_assert(sizeof(void*) == 8, "the reference layouts are for LP64");

/* --- nccl.h: versions ------------------------------------------------------------------ */
VAL_IS(NCCL_MAJOR, 2);
VAL_IS(NCCL_MINOR, 27);
VAL_IS(NCCL_PATCH, 7);
VAL_IS(NCCL_VERSION_CODE, 22707);
VAL_IS(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_VERSION_CODE);
VAL_IS(NCCL_VERSION(2, 8, 4), 2804);     /* old encoding up to 2.8 */
VAL_IS(NCCL_VERSION(2, 9, 0), 20900);    /* new encoding from 2.9 */
VAL_IS(NCCL_VERSION(2, 28, 9), 22809);
VAL_IS(NCCL_VERSION(3, 0, 0), 30000);

/* --- nccl.h: types --------------------------------------------------------------------- */
SIZE_IS(ncclUniqueId, 128);
VAL_IS(NCCL_UNIQUE_ID_BYTES, 128);
SIZE_IS(ncclComm_t, 8);
SIZE_IS(ncclWindow_t, 8);
SIZE_IS(cudaStream_t, 8);

SIZE_IS(ncclConfig_t, 96);
SIZE_IS(struct ncclConfig_v23000, 96);
OFF_IS(ncclConfig_t, size, 0);
OFF_IS(ncclConfig_t, magic, 8);
OFF_IS(ncclConfig_t, version, 12);
OFF_IS(ncclConfig_t, blocking, 16);
OFF_IS(ncclConfig_t, cgaClusterSize, 20);
OFF_IS(ncclConfig_t, minCTAs, 24);
OFF_IS(ncclConfig_t, maxCTAs, 28);
OFF_IS(ncclConfig_t, netName, 32);
OFF_IS(ncclConfig_t, splitShare, 40);
OFF_IS(ncclConfig_t, trafficClass, 44);
OFF_IS(ncclConfig_t, commName, 48);
OFF_IS(ncclConfig_t, collnetEnable, 56);
OFF_IS(ncclConfig_t, CTAPolicy, 60);
OFF_IS(ncclConfig_t, shrinkShare, 64);
OFF_IS(ncclConfig_t, nvlsCTAs, 68);
OFF_IS(ncclConfig_t, nChannelsPerNetPeer, 72);
OFF_IS(ncclConfig_t, nvlinkCentricSched, 76);
OFF_IS(ncclConfig_t, graphUsageMode, 80);
OFF_IS(ncclConfig_t, numRmaCtx, 84);
OFF_IS(ncclConfig_t, maxP2pPeers, 88);
OFF_IS(ncclConfig_t, graphStreamOrdering, 92);

SIZE_IS(ncclSimInfo_t, 24);
OFF_IS(ncclSimInfo_t, size, 0);
OFF_IS(ncclSimInfo_t, magic, 8);
OFF_IS(ncclSimInfo_t, version, 12);
OFF_IS(ncclSimInfo_t, estimatedTime, 16);

SIZE_IS(ncclTeam_t, 12);
OFF_IS(ncclTeam_t, nRanks, 0);
OFF_IS(ncclTeam_t, rank, 4);
OFF_IS(ncclTeam_t, stride, 8);

/* --- nccl.h: enums (all 4 bytes) ------------------------------------------------------- */
SIZE_IS(ncclResult_t, 4);
VAL_IS(ncclSuccess, 0);
VAL_IS(ncclUnhandledCudaError, 1);
VAL_IS(ncclSystemError, 2);
VAL_IS(ncclInternalError, 3);
VAL_IS(ncclInvalidArgument, 4);
VAL_IS(ncclInvalidUsage, 5);
VAL_IS(ncclRemoteError, 6);
VAL_IS(ncclInProgress, 7);
VAL_IS(ncclTimeout, 8);
VAL_IS(ncclNumResults, 9);

SIZE_IS(ncclDataType_t, 4);
VAL_IS(ncclInt8, 0);
VAL_IS(ncclChar, 0);
VAL_IS(ncclUint8, 1);
VAL_IS(ncclInt32, 2);
VAL_IS(ncclInt, 2);
VAL_IS(ncclUint32, 3);
VAL_IS(ncclInt64, 4);
VAL_IS(ncclUint64, 5);
VAL_IS(ncclFloat16, 6);
VAL_IS(ncclHalf, 6);
VAL_IS(ncclFloat32, 7);
VAL_IS(ncclFloat, 7);
VAL_IS(ncclFloat64, 8);
VAL_IS(ncclDouble, 8);
VAL_IS(ncclBfloat16, 9);
VAL_IS(ncclFloat8e4m3, 10);
VAL_IS(ncclFloat8e5m2, 11);
VAL_IS(ncclNumTypes, 12);

SIZE_IS(ncclRedOp_t, 4);
VAL_IS(ncclSum, 0);
VAL_IS(ncclProd, 1);
VAL_IS(ncclMax, 2);
VAL_IS(ncclMin, 3);
VAL_IS(ncclAvg, 4);
VAL_IS(ncclNumOps, 5);
VAL_IS(ncclMaxRedOp, 0x7fffffff);

SIZE_IS(ncclScalarResidence_t, 4);
VAL_IS(ncclScalarDevice, 0);
VAL_IS(ncclScalarHostImmediate, 1);

/* --- nccl.h: macros -------------------------------------------------------------------- */
VAL_IS(NCCL_CONFIG_UNDEF_INT, INT_MIN);
VAL_IS(NCCL_SPLIT_NOCOLOR, -1);
VAL_IS(NCCL_WIN_DEFAULT, 0);
VAL_IS(NCCL_WIN_COLL_SYMMETRIC, 1);
VAL_IS(NCCL_WIN_REQUIRED_ALIGNMENT, 4096);
VAL_IS(NCCL_CTA_POLICY_DEFAULT, 0);
VAL_IS(NCCL_CTA_POLICY_EFFICIENCY, 1);
VAL_IS(NCCL_CTA_POLICY_ZERO, 2);
VAL_IS(NCCL_SHRINK_DEFAULT, 0);
VAL_IS(NCCL_SHRINK_ABORT, 1);
VAL_IS(NCCL_REVOKE_DEFAULT, 0);
/* NCCL 2.30's suspend flag and memory statistics (nccl.h of 2.30.7). */
VAL_IS(NCCL_SUSPEND_MEM, 1);
VAL_IS(ncclStatGpuMemSuspend, 0);
VAL_IS(ncclStatGpuMemSuspended, 1);
VAL_IS(ncclStatGpuMemPersist, 2);
VAL_IS(ncclStatGpuMemTotal, 3);

/* --- nccl_common.h --------------------------------------------------------------------- */
VAL_IS(NCCL_LOG_NONE, 0);
VAL_IS(NCCL_LOG_VERSION, 1);
VAL_IS(NCCL_LOG_WARN, 2);
VAL_IS(NCCL_LOG_INFO, 3);
VAL_IS(NCCL_LOG_ABORT, 4);
VAL_IS(NCCL_LOG_TRACE, 5);
VAL_IS(NCCL_INIT, 0x1);
VAL_IS(NCCL_COLL, 0x2);
VAL_IS(NCCL_P2P, 0x4);
VAL_IS(NCCL_SHM, 0x8);
VAL_IS(NCCL_NET, 0x10);
VAL_IS(NCCL_GRAPH, 0x20);
VAL_IS(NCCL_TUNING, 0x40);
VAL_IS(NCCL_ENV, 0x80);
VAL_IS(NCCL_ALLOC, 0x100);
VAL_IS(NCCL_CALL, 0x200);
VAL_IS(NCCL_PROXY, 0x400);
VAL_IS(NCCL_NVLS, 0x800);
VAL_IS(NCCL_BOOTSTRAP, 0x1000);
VAL_IS(NCCL_REG, 0x2000);
VAL_IS(NCCL_PROFILE, 0x4000);
VAL_IS(NCCL_RAS, 0x8000);
VAL_IS(NCCL_ALL, ~0);
VAL_IS(ncclFuncBroadcast, 0);
VAL_IS(ncclFuncReduce, 1);
VAL_IS(ncclFuncAllGather, 2);
VAL_IS(ncclFuncReduceScatter, 3);
VAL_IS(ncclFuncAllReduce, 4);
VAL_IS(ncclFuncSendRecv, 5);
VAL_IS(ncclFuncSend, 6);
VAL_IS(ncclFuncRecv, 7);
VAL_IS(ncclFuncAlltoAll, 8);
VAL_IS(ncclFuncScatter, 9);
VAL_IS(ncclFuncGather, 10);
VAL_IS(NCCL_NUM_ALGORITHMS, 7);
VAL_IS(NCCL_ALGO_TREE, 0);
VAL_IS(NCCL_ALGO_RING, 1);
VAL_IS(NCCL_ALGO_COLLNET_DIRECT, 2);
VAL_IS(NCCL_ALGO_COLLNET_CHAIN, 3);
VAL_IS(NCCL_ALGO_NVLS, 4);
VAL_IS(NCCL_ALGO_NVLS_TREE, 5);
VAL_IS(NCCL_ALGO_PAT, 6);
VAL_IS(NCCL_NUM_PROTOCOLS, 3);
VAL_IS(NCCL_PROTO_LL, 0);
VAL_IS(NCCL_PROTO_LL128, 1);
VAL_IS(NCCL_PROTO_SIMPLE, 2);
MEMBER_TYPE_IS(struct { ncclProfilerCallback_t f; }, f,
               ncclResult_t (*)(void**, int, void*, int64_t, void*));

/* --- nccl_net.h: constants ------------------------------------------------------------- */
VAL_IS(NCCL_NET_HANDLE_MAXSIZE, 128);
VAL_IS(NCCL_PTR_HOST, 1);
VAL_IS(NCCL_PTR_CUDA, 2);
VAL_IS(NCCL_PTR_DMABUF, 4);
VAL_IS(NCCL_NET_MAX_REQUESTS, 32);
VAL_IS(NCCL_NET_MAX_REQUESTS_V6, 8);
VAL_IS(NCCL_NET_OPTIONAL_RECV_COMPLETION, 0x1);
VAL_IS(NCCL_NET_MULTI_REQUEST, 0x2);
VAL_IS(NCCL_NET_MAX_PLUGINS, 16);
VAL_IS(NCCL_NET_MAX_DEVS_PER_NIC, 8);
VAL_IS(NCCL_NET_MAX_DEVS_PER_NIC_V11, 4);
VAL_IS(NCCL_NET_ID_UNDEF, -1);
VAL_IS(MAX_NET_SIZE, 1024L * 1024 * 1024);
VAL_IS(MAX_COLLNET_SIZE, 512L * 1024 * 1024);
VAL_IS(NCCL_NET_TRAFFIC_CLASS_UNDEF, -1);
VAL_IS(NCCL_NET_DEVICE_HOST, 0);
VAL_IS(NCCL_NET_DEVICE_UNPACK, 1);
VAL_IS(NCCL_NET_DEVICE_GIN_PROXY, 2);
VAL_IS(NCCL_NET_DEVICE_GIN_GDAKI, 3);
VAL_IS(NCCL_NET_DEVICE_UNPACK_VERSION, 0x7);
SIZE_IS(ncclNetDeviceHandle_v7_t, 32);

/* --- nccl_net.h: per-version sizes ----------------------------------------------------- */
SIZE_IS(ncclNet_v6_t, 136);
SIZE_IS(ncclNet_v7_t, 152);
SIZE_IS(ncclNet_v8_t, 152);
SIZE_IS(ncclNet_v9_t, 160);
SIZE_IS(ncclNet_v10_t, 160);
SIZE_IS(ncclNet_v11_t, 176);
SIZE_IS(ncclNetProperties_v6_t, 48);
SIZE_IS(ncclNetProperties_v7_t, 56);
SIZE_IS(ncclNetProperties_v8_t, 64);
SIZE_IS(ncclNetProperties_v9_t, 104);
SIZE_IS(ncclNetProperties_v10_t, 104);
SIZE_IS(ncclNetProperties_v11_t, 112);
SIZE_IS(ncclNetVDeviceProps_v11_t, 20);

SIZE_IS(ncclNet_v12_t, 176);
SIZE_IS(ncclNetProperties_v12_t, 128);
SIZE_IS(ncclNetVDeviceProps_v12_t, 36);
SIZE_IS(ncclNetAttr_v12_t, 44);
SIZE_IS(ncclNetCommConfig_v12_t, 4);

/* The current view is v12. */
SIZE_IS(ncclNet_t, 176);
SIZE_IS(ncclNetProperties_t, 128);
static_assert(_Generic((ncclNet_t*)0, ncclNet_v12_t*: 1, default: 0), "ncclNet_t is v12");

/* v12 properties: v11's up to vProps, which grows to 8 devices, then the rail and plane ids. */
OFF_IS(ncclNetProperties_v12_t, netDeviceVersion, 60);
OFF_IS(ncclNetProperties_v12_t, vProps, 64);
OFF_IS(ncclNetProperties_v12_t, maxP2pBytes, 104);
OFF_IS(ncclNetProperties_v12_t, maxCollBytes, 112);
OFF_IS(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
OFF_IS(ncclNetProperties_v12_t, railId, 124);
OFF_IS(ncclNetProperties_v12_t, planeId, 126);
static_assert(_Generic(((ncclNetProperties_v12_t*)0)->railId, int16_t: 1, default: 0),
              "railId is int16_t");
/* The v12 table has v11's slots; only the property and virtual-device types change. */
SLOT_IS(ncclNet_v12_t, getProperties, 3);
SLOT_IS(ncclNet_v12_t, makeVDevice, 19);
SLOT_IS(ncclNet_v12_t, finalize, 20);
SLOT_IS(ncclNet_v12_t, setNetAttr, 21);
MEMBER_TYPE_IS(ncclNet_v12_t, getProperties, ncclResult_t (*)(int, ncclNetProperties_v12_t*));
MEMBER_TYPE_IS(ncclNet_v12_t, makeVDevice, ncclResult_t (*)(int*, ncclNetVDeviceProps_v12_t*));
MEMBER_TYPE_IS(ncclNet_v12_t, isend,
               ncclResult_t (*)(void*, void*, size_t, int, void*, void*, void**));

/* v11 properties, offset by offset. */
OFF_IS(ncclNetProperties_v11_t, name, 0);
OFF_IS(ncclNetProperties_v11_t, pciPath, 8);
OFF_IS(ncclNetProperties_v11_t, guid, 16);
OFF_IS(ncclNetProperties_v11_t, ptrSupport, 24);
OFF_IS(ncclNetProperties_v11_t, regIsGlobal, 28);
OFF_IS(ncclNetProperties_v11_t, forceFlush, 32);
OFF_IS(ncclNetProperties_v11_t, speed, 36);
OFF_IS(ncclNetProperties_v11_t, port, 40);
OFF_IS(ncclNetProperties_v11_t, latency, 44);
OFF_IS(ncclNetProperties_v11_t, maxComms, 48);
OFF_IS(ncclNetProperties_v11_t, maxRecvs, 52);
OFF_IS(ncclNetProperties_v11_t, netDeviceType, 56);
OFF_IS(ncclNetProperties_v11_t, netDeviceVersion, 60);
OFF_IS(ncclNetProperties_v11_t, vProps, 64);
OFF_IS(ncclNetProperties_v11_t, maxP2pBytes, 88);
OFF_IS(ncclNetProperties_v11_t, maxCollBytes, 96);
OFF_IS(ncclNetProperties_v11_t, maxMultiRequestSize, 104);

/* v11 member order. */
SLOT_IS(ncclNet_v11_t, name, 0);
SLOT_IS(ncclNet_v11_t, init, 1);
SLOT_IS(ncclNet_v11_t, devices, 2);
SLOT_IS(ncclNet_v11_t, getProperties, 3);
SLOT_IS(ncclNet_v11_t, listen, 4);
SLOT_IS(ncclNet_v11_t, connect, 5);
SLOT_IS(ncclNet_v11_t, accept, 6);
SLOT_IS(ncclNet_v11_t, regMr, 7);
SLOT_IS(ncclNet_v11_t, regMrDmaBuf, 8);
SLOT_IS(ncclNet_v11_t, deregMr, 9);
SLOT_IS(ncclNet_v11_t, isend, 10);
SLOT_IS(ncclNet_v11_t, irecv, 11);
SLOT_IS(ncclNet_v11_t, iflush, 12);
SLOT_IS(ncclNet_v11_t, test, 13);
SLOT_IS(ncclNet_v11_t, closeSend, 14);
SLOT_IS(ncclNet_v11_t, closeRecv, 15);
SLOT_IS(ncclNet_v11_t, closeListen, 16);
SLOT_IS(ncclNet_v11_t, getDeviceMr, 17);
SLOT_IS(ncclNet_v11_t, irecvConsumed, 18);
SLOT_IS(ncclNet_v11_t, makeVDevice, 19);
SLOT_IS(ncclNet_v11_t, finalize, 20);
SLOT_IS(ncclNet_v11_t, setNetAttr, 21);

/* Where the older versions differ (each abi/net/net_vN.h says what changed against vN-1). */
SLOT_IS(ncclNet_v6_t, closeListen, 16);
SLOT_IS(ncclNet_v7_t, getDeviceMr, 17);
SLOT_IS(ncclNet_v7_t, irecvConsumed, 18);
SLOT_IS(ncclNet_v9_t, makeVDevice, 19);
SLOT_IS(ncclNet_v10_t, makeVDevice, 19);
OFF_IS(ncclNetProperties_v7_t, netDeviceType, 48);
OFF_IS(ncclNetProperties_v8_t, regIsGlobal, 28);
OFF_IS(ncclNetProperties_v9_t, forceFlush, 32);
OFF_IS(ncclNetProperties_v9_t, vProps, 64);
OFF_IS(ncclNetProperties_v9_t, maxCollBytes, 96);

/* Argument types that changed between versions. */
MEMBER_TYPE_IS(ncclNet_v6_t, init, ncclResult_t (*)(ncclDebugLogger_t));
MEMBER_TYPE_IS(ncclNet_v6_t, connect, ncclResult_t (*)(int, void*, void**));
MEMBER_TYPE_IS(ncclNet_v6_t, accept, ncclResult_t (*)(void*, void**));
MEMBER_TYPE_IS(ncclNet_v6_t, regMr, ncclResult_t (*)(void*, void*, int, int, void**));
MEMBER_TYPE_IS(ncclNet_v6_t, isend, ncclResult_t (*)(void*, void*, int, int, void*, void**));
MEMBER_TYPE_IS(ncclNet_v6_t, irecv,
               ncclResult_t (*)(void*, int, void**, int*, int*, void**, void**));
MEMBER_TYPE_IS(ncclNet_v7_t, connect,
               ncclResult_t (*)(int, void*, void**, ncclNetDeviceHandle_v7_t**));
MEMBER_TYPE_IS(ncclNet_v7_t, regMr, ncclResult_t (*)(void*, void*, int, int, void**));
MEMBER_TYPE_IS(ncclNet_v8_t, regMr, ncclResult_t (*)(void*, void*, size_t, int, void**));
MEMBER_TYPE_IS(ncclNet_v8_t, isend, ncclResult_t (*)(void*, void*, int, int, void*, void**));
MEMBER_TYPE_IS(ncclNet_v9_t, isend,
               ncclResult_t (*)(void*, void*, size_t, int, void*, void**));
MEMBER_TYPE_IS(ncclNet_v9_t, irecv,
               ncclResult_t (*)(void*, int, void**, size_t*, int*, void**, void**));
MEMBER_TYPE_IS(ncclNet_v9_t, init, ncclResult_t (*)(ncclDebugLogger_t));
MEMBER_TYPE_IS(ncclNet_v10_t, init, ncclResult_t (*)(ncclDebugLogger_t, ncclProfilerCallback_t));
MEMBER_TYPE_IS(ncclNet_v10_t, connect,
               ncclResult_t (*)(int, ncclNetCommConfig_v10_t*, void*, void**,
                                ncclNetDeviceHandle_v10_t**));
MEMBER_TYPE_IS(ncclNet_v10_t, isend,
               ncclResult_t (*)(void*, void*, size_t, int, void*, void*, void**));
MEMBER_TYPE_IS(ncclNet_v10_t, irecv,
               ncclResult_t (*)(void*, int, void**, size_t*, int*, void**, void**, void**));
MEMBER_TYPE_IS(ncclNet_v11_t, init,
               ncclResult_t (*)(void**, uint64_t, ncclNetCommConfig_v11_t*, ncclDebugLogger_t,
                                ncclProfilerCallback_t));
MEMBER_TYPE_IS(ncclNet_v11_t, listen, ncclResult_t (*)(void*, int, void*, void**));
MEMBER_TYPE_IS(ncclNet_v11_t, connect,
               ncclResult_t (*)(void*, int, void*, void**, ncclNetDeviceHandle_v11_t**));
MEMBER_TYPE_IS(ncclNet_v11_t, test, ncclResult_t (*)(void*, int*, int*));
MEMBER_TYPE_IS(ncclNet_v11_t, iflush,
               ncclResult_t (*)(void*, int, void**, int*, void**, void**));
MEMBER_TYPE_IS(ncclNet_v11_t, regMrDmaBuf,
               ncclResult_t (*)(void*, void*, size_t, int, uint64_t, int, void**));
MEMBER_TYPE_IS(ncclNet_v11_t, makeVDevice, ncclResult_t (*)(int*, ncclNetVDeviceProps_v11_t*));
MEMBER_TYPE_IS(ncclNet_v11_t, finalize, ncclResult_t (*)(void*));
MEMBER_TYPE_IS(ncclNet_v11_t, setNetAttr, ncclResult_t (*)(void*, ncclNetAttr_v11_t*));

/* --- nccl_tuner.h ---------------------------------------------------------------------- */
SIZE_IS(ncclTuner_v2_t, 32);
SIZE_IS(ncclTuner_v3_t, 32);
SIZE_IS(ncclTuner_v4_t, 32);
SIZE_IS(ncclTuner_v5_t, 32);
SIZE_IS(ncclTunerConstants_v5_t, 1152);
SIZE_IS(ncclNvlDomainInfo_v5_t, 12);
SIZE_IS(ncclTuner_v6_t, 40);
SIZE_IS(ncclTuner_t, 40);
static_assert(_Generic((ncclTuner_t*)0, ncclTuner_v6_t*: 1, default: 0), "ncclTuner_t is v6");
SLOT_IS(ncclTuner_v6_t, finalize, 3);
SLOT_IS(ncclTuner_v6_t, getChunkSize, 4);
MEMBER_TYPE_IS(ncclTuner_v6_t, getChunkSize,
               ncclResult_t (*)(void*, ncclFunc_t, size_t, int, int, int, size_t*));
MEMBER_TYPE_IS(ncclTuner_v6_t, init,
               ncclResult_t (*)(void**, uint64_t, size_t, size_t, ncclDebugLogger_t,
                                ncclNvlDomainInfo_v5_t*, ncclTunerConstants_v5_t*));
OFF_IS(ncclTunerConstants_v5_t, baseLatencies, 0);
OFF_IS(ncclTunerConstants_v5_t, hwLatencies, 7 * 3 * 8);
OFF_IS(ncclTunerConstants_v5_t, llMaxBws, (21 + 63) * 8);
OFF_IS(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws, (21 + 63 + 4 * 12) * 8);
VAL_IS(NCCL_HW_NVLINK, 0);
VAL_IS(NCCL_HW_PCI, 1);
VAL_IS(NCCL_HW_NET, 2);
VAL_IS(NCCL_VOLTA_COMPCAP_IDX, 0);
VAL_IS(NCCL_BLACKWELL_COMPCAP_IDX, 3);
VAL_IS(NCCL_TUNING_SCALE_1NODE, 0);
VAL_IS(NCCL_TUNING_SCALE_4NODES, 2);
MEMBER_TYPE_IS(ncclTuner_v2_t, getCollInfo,
               ncclResult_t (*)(void*, ncclFunc_t, size_t, int, int, int, int*, int*, int*));
MEMBER_TYPE_IS(ncclTuner_v3_t, getCollInfo,
               ncclResult_t (*)(void*, ncclFunc_t, size_t, int, float**, int, int, int*));
MEMBER_TYPE_IS(ncclTuner_v4_t, getCollInfo,
               ncclResult_t (*)(void*, ncclFunc_t, size_t, int, float**, int, int, int, int*));
MEMBER_TYPE_IS(ncclTuner_v4_t, init,
               ncclResult_t (*)(size_t, size_t, ncclDebugLogger_t, void**));
MEMBER_TYPE_IS(ncclTuner_v5_t, init,
               ncclResult_t (*)(void**, uint64_t, size_t, size_t, ncclDebugLogger_t,
                                ncclNvlDomainInfo_v5_t*, ncclTunerConstants_v5_t*));
MEMBER_TYPE_IS(ncclTuner_v5_t, finalize, ncclResult_t (*)(void*));

/* --- nccl_env.h ------------------------------------------------------------------------ */
SIZE_IS(ncclEnv_v1_t, 32);
SIZE_IS(ncclEnv_v2_t, 32);
SIZE_IS(ncclEnv_t, 32);
static_assert(_Generic((ncclEnv_t*)0, ncclEnv_v2_t*: 1, default: 0), "ncclEnv_t is v2");
SLOT_IS(ncclEnv_v1_t, init, 1);
SLOT_IS(ncclEnv_v1_t, finalize, 2);
SLOT_IS(ncclEnv_v1_t, getEnv, 3);
SLOT_IS(ncclEnv_v2_t, getEnv, 3);
MEMBER_TYPE_IS(ncclEnv_v1_t, init, ncclResult_t (*)(uint8_t, uint8_t, uint8_t, const char*));
MEMBER_TYPE_IS(ncclEnv_v2_t, init,
               ncclResult_t (*)(uint8_t, uint8_t, uint8_t, const char*, ncclDebugLogger_t));
MEMBER_TYPE_IS(ncclEnv_v2_t, getEnv, const char* (*)(const char*));

/* --- weft.h ---------------------------------------------------------------------------- */
VAL_IS(weftMemHost, 0);
VAL_IS(weftMemDevice, 1);
VAL_IS(weftMemManaged, 2);

int main(void) {
  test_require_weft_lib();

  /* The initializers fill exactly the header fields and leave the rest unset. */
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ_INT(cfg.size, 96);
  EXPECT_EQ_INT(cfg.magic, 0xcafebeef);
  EXPECT_EQ_INT(cfg.version, 22707);
  const int* ints[] = {&cfg.blocking,      &cfg.cgaClusterSize, &cfg.minCTAs,
                       &cfg.maxCTAs,       &cfg.splitShare,     &cfg.trafficClass,
                       &cfg.collnetEnable, &cfg.CTAPolicy,      &cfg.shrinkShare,
                       &cfg.nvlsCTAs,      &cfg.nChannelsPerNetPeer, &cfg.nvlinkCentricSched,
                       &cfg.graphUsageMode, &cfg.numRmaCtx,   &cfg.maxP2pPeers,
                       &cfg.graphStreamOrdering};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) EXPECT_EQ_INT(*ints[i], INT_MIN);
  EXPECT(cfg.netName == NULL);
  EXPECT(cfg.commName == NULL);

  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ_INT(sim.size, 24);
  EXPECT_EQ_INT(sim.magic, 0x74685283);
  EXPECT_EQ_INT(sim.version, 22707);
  EXPECT(sim.estimatedTime == -1.0f);

  ncclNetAttr_t attr = NCCL_NET_ATTR_INIT;
  EXPECT_EQ_INT(attr.sendCommAttr.maxConcurrentPeers, -1);
  EXPECT_EQ_INT(attr.recvCommAttr.minFlowsPerPeer, -1);
  EXPECT_EQ_INT((int32_t)attr.proto, -1);

  EXPECT(NCCL_UNDEF_FLOAT == -1.0f);
  EXPECT(NCCL_ALGO_PROTO_IGNORE == -1.0);

#define WEFT_STR2(x) #x
#define WEFT_STR(x) WEFT_STR2(x)
  EXPECT(strcmp(WEFT_STR(NCCL_NET_PLUGIN_SYMBOL), "ncclNetPlugin_v12") == 0);
  EXPECT(strcmp(NCCL_TUNER_PLUGIN_SYMBOL, "ncclTunerPlugin_v6") == 0);
  EXPECT(strcmp(WEFT_STR(NCCL_ENV_PLUGIN_SYMBOL), "ncclEnvPlugin_v2") == 0);
  EXPECT(strcmp(NCCL_SUFFIX, "") == 0);
  return 0;
}
