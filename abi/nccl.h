/* The application API weft answers to: NCCL's types, enums, macros and functions, in plain C.
 * No CUDA header is needed; cudaStream_t is declared the way the CUDA runtime declares it, so
 * cuda_runtime.h may be included before or after this file. Layouts and values match NCCL 2.30.7
 * bit for bit (tests/abi checks them against NVIDIA's header); the version macros say 2.27.7 on
 * purpose, because tools that see 2.28 or later also expect nccl_device.h.
 * Every ncclX has a pncclX twin with the same signature (profiling interposition, PMPI style). */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Compiled by nvcc, NVIDIA's header brings the runtime and the half/bfloat16 types along, and
 * applications (nccl-tests among them) rely on that; so does this one. Plain C needs nothing. */
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 27
#define NCCL_PATCH 7
#define NCCL_SUFFIX ""

/* Up to 2.8.x the code is X*1000+Y*100+Z; from 2.9 on it is X*10000+Y*100+Z. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE 22707

#ifdef __cplusplus
extern "C" {
#endif

/* Same spelling as the CUDA runtime's typedef, so the two may meet in one translation unit. */
typedef struct CUstream_st* cudaStream_t;

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

/* Opaque rendezvous token; self-contained, so it may be copied between processes as bytes. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

/* Config fields left at these values take the library default (or the environment's value). */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* The magic of ncclConfig_t (NCCL marks it internal; NCCL_CONFIG_INITIALIZER sets it). */
#define NCCL_API_MAGIC 0xcafebeef

/* ncclCommWindowRegister flags, and the alignment a symmetric window needs. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02 /* NIC registration ordering; no effect on LSA */
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flags: keep the parent running, or abort its pending work first. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flags; only 0 is defined. */
#define NCCL_REVOKE_DEFAULT 0x00

/* ncclCommSuspend flags: give the communicator's dynamic memory back until ncclCommResume. */
#define NCCL_SUSPEND_MEM 0x01

/* What ncclCommMemStats reports, in bytes except Suspended (1 while suspended, else 0). */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* memory that suspend releases */
  ncclStatGpuMemSuspended = 1, /* 1 while suspended */
  ncclStatGpuMemPersist = 2,   /* memory that stays while suspended */
  ncclStatGpuMemTotal = 3      /* Suspend + Persist */
} ncclCommMemStat_t;

/* Communicator options. The first three fields identify the caller's layout: the library copies
 * min(size, its own size), rejects a magic other than NCCL_API_MAGIC, and treats fields newer
 * than `version` as unset; the four fields NCCL 2.29-2.30 added are told apart by `size` alone
 * (this header's initializer says 2.27.7 in `version`), so a program built with NCCL 2.28's
 * 80-byte struct keeps working. Always start from NCCL_CONFIG_INITIALIZER. 96 bytes on LP64.
 * What weft makes of each field: docs/env.md, "Communicator config". */
typedef struct ncclConfig_v23000 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;      /* 0: no graphs, 1: one graph, 2: several graphs or mixed (2.29) */
  int numRmaCtx;           /* contexts for one-sided operations, >= 0 (2.29) */
  int maxP2pPeers;         /* peers a rank talks to at once by send/recv, > 0 (2.30) */
  int graphStreamOrdering; /* 1: serialize captured kernels, 0: the application orders (2.30.5) */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                         \
  {                                                                                     \
    sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_CONFIG_UNDEF_INT, /* blocking */                                           \
        NCCL_CONFIG_UNDEF_INT, /* cgaClusterSize */                                     \
        NCCL_CONFIG_UNDEF_INT, /* minCTAs */                                            \
        NCCL_CONFIG_UNDEF_INT, /* maxCTAs */                                            \
        NCCL_CONFIG_UNDEF_PTR, /* netName */                                            \
        NCCL_CONFIG_UNDEF_INT, /* splitShare */                                         \
        NCCL_CONFIG_UNDEF_INT, /* trafficClass */                                       \
        NCCL_CONFIG_UNDEF_PTR, /* commName */                                           \
        NCCL_CONFIG_UNDEF_INT, /* collnetEnable */                                      \
        NCCL_CONFIG_UNDEF_INT, /* CTAPolicy */                                          \
        NCCL_CONFIG_UNDEF_INT, /* shrinkShare */                                        \
        NCCL_CONFIG_UNDEF_INT, /* nvlsCTAs */                                           \
        NCCL_CONFIG_UNDEF_INT, /* nChannelsPerNetPeer */                                \
        NCCL_CONFIG_UNDEF_INT, /* nvlinkCentricSched */                                 \
        NCCL_CONFIG_UNDEF_INT, /* graphUsageMode */                                     \
        NCCL_CONFIG_UNDEF_INT, /* numRmaCtx */                                          \
        NCCL_CONFIG_UNDEF_INT, /* maxP2pPeers */                                        \
        NCCL_CONFIG_UNDEF_INT  /* graphStreamOrdering */                                \
  }

/* What ncclGroupSimulateEnd reports. Same size/magic/version rules as ncclConfig_t, with magic
 * 0x74685283. Start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime; /* microseconds */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER                                                       \
  {                                                                                     \
    sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_UNDEF_FLOAT                                                                \
  }

/* Reduction operators. Values from ncclNumOps up to ncclMaxRedOp are handles returned by
 * ncclRedOpCreate* and are only valid with the communicator that made them. */
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives: in device memory, read when the
 * collective runs; or in host memory, read before the create call returns. */
typedef enum {
  ncclScalarDevice = 0,
  ncclScalarHostImmediate = 1
} ncclScalarResidence_t;

/* Types of the device-API host functions. NCCL defines most of them in the nccl_device
 * headers; here they are opaque, except ncclTeam, which is returned by value. */
struct ncclDevComm;
typedef struct ncclDevComm ncclDevComm_t;
struct ncclDevCommRequirements;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
struct ncclDevResourceRequirements;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
struct ncclLsaBarrierHandle;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
struct ncclGinBarrierHandle;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
struct ncclLLA2AHandle;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

struct ncclGinOutboxHandle;
struct ncclGinInboxA2AHandle;

/* What ncclCommQueryProperties reports (NCCL 2.30's fields). Initialize with
 * NCCL_COMM_PROPERTIES_INITIALIZER: size, magic and version say which fields the caller has. */
#define NCCL_API_MAGIC 0xcafebeef
typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
  NCCL_GIN_TYPE_GPI = 4
} ncclGinType_t;
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
} ncclCommProperties_t;
#define NCCL_COMM_PROPERTIES_INITIALIZER                                                        \
  {                                                                                             \
    sizeof(ncclCommProperties_t), NCCL_API_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        0, 0, 0, 0, false, false, NCCL_GIN_TYPE_NONE, 0, false, NCCL_GIN_TYPE_NONE              \
  }

/* A multicast object of a team; mcBasePtr is NULL where multicast is off (always, in weft). */
typedef struct ncclMultimemHandle {
  void* mcBasePtr;
} ncclMultimemHandle_t;

/* A set of ranks: rank `rank` of `nRanks`, world ranks spaced `stride` apart. */
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;

#if defined(__GNUC__) || defined(__clang__)
#define NCCL_WEFT_DEPRECATED_ __attribute__((deprecated))
#else
#define NCCL_WEFT_DEPRECATED_
#endif

/* --- Version, ids, memory ------------------------------------------------------------------ */

/* *version = NCCL_VERSION(major, minor, patch) of the library actually loaded. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* Creates the token one rank hands to all others before ncclCommInitRank. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* Memory suitable for registration, IPC and RDMA; the size may be rounded up internally. */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* --- Communicator lifecycle ---------------------------------------------------------------- */

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

/* As ncclCommInitRank; config may be NULL (all defaults). */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);

/* As ncclCommInitRankConfig with nId root tokens; ranks are spread evenly over the roots. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);

/* ndev communicators in this process; devlist NULL means devices 0..ndev-1. */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Flushes outstanding work; a non-blocking communicator reports ncclInProgress until done. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/* Frees the communicator, finalizing it first when the caller has not. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/* Stops everything the communicator is doing and frees it; must return promptly. */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);

/* Cancels in-flight work; afterwards destroy, split and shrink are allowed, finalize is not.
 * revokeFlags must be NCCL_REVOKE_DEFAULT. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Collective over comm; ranks with equal color form a new communicator ordered by key.
 * NCCL_SPLIT_NOCOLOR yields *newcomm == NULL; a NULL config inherits the parent's. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config);

/* A new communicator without the listed ranks; shrinkFlags is an NCCL_SHRINK_* value. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

/* An id for growing comm (ncclCommGrow); at most one unconsumed id per communicator, and each
 * id is consumed by the grow that uses it. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);

/* A communicator of nRanks ranks: comm's ranks keep their numbers, new processes take the rest.
 * Existing ranks pass comm and rank -1 (the root the id from ncclCommGetUniqueId, the others
 * NULL); new ranks pass comm NULL, the id and their rank. */
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                           ncclComm_t* newcomm, ncclConfig_t* config);

/* Release the communicator's dynamic memory (flags: NCCL_SUSPEND_MEM); operations are refused
 * until ncclCommResume restores it. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);

/* --- Errors and queries -------------------------------------------------------------------- */

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

/* A static, human-readable string for result. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);

/* The last error message logged in this process; comm is accepted but not used. */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Deprecated: re-reads NCCL_DEBUG* on the next log call. */
NCCL_WEFT_DEPRECATED_ void ncclResetDebugInit(void);
NCCL_WEFT_DEPRECATED_ void pncclResetDebugInit(void);

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* --- Buffer registration ------------------------------------------------------------------- */

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Collective registration of a window; winFlags is an NCCL_WIN_* value. */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
/* The buffer a window was registered with (NCCL 2.30). */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);

/* --- Custom reduction operators ------------------------------------------------------------ */

/* An operator that multiplies each input by *scalar, then sums; valid for comm and datatype. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* --- Collectives (stream-ordered, asynchronous; count 0 is a no-op) ------------------------ */

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream);

/* Deprecated in-place broadcast; same as ncclBroadcast(buff, buff, ...). */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream);

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);

/* recvcount elements per rank; in place when sendbuff + rank*recvcount == recvbuff. */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream);

/* sendcount elements per rank; in place when recvbuff + rank*sendcount == sendbuff. */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* count elements to and from each peer. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* count elements from each rank into root's recvbuff, in rank order. */
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream);

/* count elements from root's sendbuff to each rank, in rank order. */
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm,
                          cudaStream_t stream);

/* --- Point to point ------------------------------------------------------------------------ */

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);

/* --- One-sided communication (NCCL 2.30; docs/one-sided.md) -------------------------------- */

/* Write count elements from localbuff (inside a symmetric window of comm) into peer's copy of
 * the symmetric window peerWin at byte offset peerWinOffset, then raise signal sigIdx there;
 * sigIdx, ctx and flags must be 0. Stream-ordered; inside a group it runs at ncclGroupEnd. */
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype,
                           int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx,
                           int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype,
                            int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx,
                            int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
/* Raise signal sigIdx on peer, with no data. */
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                         cudaStream_t stream);
/* Wait for opCnt signals (index sigIdx, context ctx) from peer. */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;
/* Wait, on the stream, until every descriptor's signals arrived (counted from the last wait). */
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                            cudaStream_t stream);
ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                             cudaStream_t stream);

/* --- Groups -------------------------------------------------------------------------------- */

/* Calls between Start and End are queued and issued together at the outermost End. */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);

/* Like ncclGroupEnd, but only estimates the group's time into simInfo; nothing runs. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* --- Parameters (2.30) ---------------------------------------------------------------------- */
/* The settings the library uses, by name (NCCL's names for NCCL's settings, WEFT_* for weft's;
 * docs/env.md lists them and says where a value comes from). An unknown key is
 * ncclInvalidArgument. A handle is the library's and is never freed. Returned strings and key
 * tables stay valid until the same function is called again on the same thread. */
typedef struct ncclParamHandle* ncclParamHandle_t;
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key);
/* Integer settings are 64-bit signed; a narrower getter answers when the value fits its type. */
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t pncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t pncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t pncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t pncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t pncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t pncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t pncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t pncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
/* A string setting's value. */
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char** out);
/* The value's bytes: an int64_t, or a string with its terminating NUL; *len says how many. */
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t pncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
/* Any setting's value as text (an integer in decimal). */
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen);
/* Every key (weft lists them all, so NCCL_PARAM_DUMP_ALL changes nothing). */
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen);
ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen);
/* Print every setting, its value, where it came from and its default, on stdout. */
void ncclParamDumpAll(void);
void pncclParamDumpAll(void);

/* --- Device-API host functions (2.28; NCCL declares them in the nccl_device headers) ------ */

ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                               ncclDevComm_t* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                                ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);

/* All ranks; the ranks sharing load/store access with this one; this rank's rail peers. */
ncclTeam_t ncclTeamWorld(ncclComm_t comm);
ncclTeam_t pncclTeamWorld(ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm);
ncclTeam_t pncclTeamLsa(ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm);
ncclTeam_t pncclTeamRail(ncclComm_t comm);

/* Translate rank `rank` of team into a world rank or an LSA-team rank. */
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);

ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                              ncclLsaBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);

int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                         ncclDevResourceRequirements_t* outReq);

/* The communicator's device-API facts; props must come from NCCL_COMM_PROPERTIES_INITIALIZER. */
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);
ncclResult_t pncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);

/* Where a window's byte `offset` is for LSA rank lsaRank / world rank peer (NULL: peer not
 * reachable by load/store), and its multicast address (NULL: no multicast, always in weft). */
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void** outPtr);
ncclResult_t pncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                      void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t pncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                       void** outPtr);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t pncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void** outPtr);
ncclResult_t pncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                           ncclMultimemHandle_t multimem, void** outPtr);

/* Resource requirements of the GIN scratch buffers (filled as NCCL fills them). */
ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                            struct ncclGinOutboxHandle* outHandle,
                                            ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                             struct ncclGinOutboxHandle* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                              struct ncclGinInboxA2AHandle* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                               struct ncclGinInboxA2AHandle* outHandle,
                                               ncclDevResourceRequirements_t* outReq);

#ifdef __cplusplus
}
#endif

#endif
