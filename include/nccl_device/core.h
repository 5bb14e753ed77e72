/* weft's device API, the part to read first: the types a kernel gets from the library and the
 * functions that find ranks and memory with them. The struct definitions (their layout is the
 * binary contract, abi/nccl_devcomm.h) are in impl/core__types.h, the inline code in
 * impl/core__funcs.h. Include nccl_device.h, not this file.
 *
 * Who writes what: ncclDevCommCreate fills an ncclDevComm in the caller's memory, which the
 * caller passes to kernels by value; ncclCommWindowRegister makes the device-side window an
 * ncclWindow_t points to. Both stay unchanged until destroyed, so kernels only read them. */
#ifndef WEFT_NCCL_DEVICE_CORE_H
#define WEFT_NCCL_DEVICE_CORE_H

#include <stdint.h>

#include "nccl.h"
#include "impl/util__funcs.h"

/* ---- types ---------------------------------------------------------------------------- */

/* ncclDevComm, ncclTeam, ncclWindow_t, ncclMultimemHandle, ncclLsaBarrierHandle and the
 * requirement structs are declared by nccl.h; these are the device API's own. */
typedef uint32_t ncclDevResourceHandle;     /* a resource buffer, in 128-byte units */
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;
typedef struct ncclWindow_vidmem ncclWindow_vidmem_t;           /* what ncclWindow_t points to */
typedef struct ncclResourceWindow_vidmem ncclResourceWindow_vidmem_t;
struct ncclDevCommWindowTable;                                  /* windows by address */
typedef struct ncclDevCommWindowTable* ncclDevCommWindowTable_t;
struct ncclTeamRequirements;                                    /* a team wanting multimem */
typedef struct ncclTeamRequirements ncclTeamRequirements_t;

/* How GIN (network) connections are made. weft's library gives FULL (the proxy type, to kernels
 * built against NVIDIA's 2.30 headers; this header has no ncclGin yet) and refuses RAIL. */
typedef enum {
  NCCL_GIN_CONNECTION_NONE,
  NCCL_GIN_CONNECTION_FULL,
  NCCL_GIN_CONNECTION_RAIL
} ncclGinConnectionType_t;

#ifdef __cplusplus
/* Tags that name a team of the device communicator in constructors (the barrier's). */
struct ncclTeamTagWorld {};
struct ncclTeamTagLsa {};
struct ncclTeamTagRail {};
#endif

/* ---- host functions of the device API ------------------------------------------------ */
/* nccl.h declares the rest (ncclDevCommCreate/Destroy, teams of an ncclComm_t, barrier
 * requirements); these repeat nccl.h where it has them. */
#ifdef __cplusplus
extern "C" {
#endif
/* The communicator's device-API facts; props from NCCL_COMM_PROPERTIES_INITIALIZER. */
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);
/* Byte `offset` of window in LSA rank lsaRank's / world rank peer's copy, as a device address
 * of this GPU (what ncclGetLsaPointer / ncclGetPeerPointer compute in a kernel). */
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
/* Multicast addresses: NULL in weft (no multicast). */
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void** outPtr);
#ifdef __cplusplus
}
#endif

/* ---- teams ---------------------------------------------------------------------------- */
/* A team is nRanks ranks, this rank being `rank`, whose world ranks are `stride` apart. */

#ifdef __cplusplus
/* Every rank; the ranks that reach this one's memory by load/store (LSA); the ranks with this
 * rank's LSA index, one per LSA team (stride lsaSize). */
WEFT_HOST_DEVICE_INLINE ncclTeam ncclTeamWorld(ncclDevComm const& comm);
WEFT_HOST_DEVICE_INLINE ncclTeam ncclTeamLsa(ncclDevComm const& comm);
WEFT_HOST_DEVICE_INLINE ncclTeam ncclTeamRail(ncclDevComm const& comm);

/* Rank `rank` of team tm as a world rank / as an LSA rank. */
WEFT_HOST_DEVICE_INLINE int ncclTeamRankToWorld(ncclDevComm const& comm, ncclTeam tm, int rank);
WEFT_HOST_DEVICE_INLINE int ncclTeamRankToLsa(ncclDevComm const& comm, ncclTeam tm, int rank);
#endif

/* Whether rank brank of team b is a member of team a (both containing this rank). */
WEFT_HOST_DEVICE_INLINE bool ncclTeamRankIsMember(ncclTeam_t a, ncclTeam_t b, int brank);
/* Rank brank of team b as a rank of team a (meaningful when it is a member). */
WEFT_HOST_DEVICE_INLINE int ncclTeamRankToTeam(ncclTeam_t a, ncclTeam_t b, int brank);
/* parent cut into blocks of innerSize consecutive ranks: the block holding this rank (inner),
 * and the ranks at this rank's position in every block (outer). */
WEFT_HOST_DEVICE_INLINE ncclTeam_t ncclTeamInnerFactor(ncclTeam_t parent, int innerSize);
WEFT_HOST_DEVICE_INLINE ncclTeam_t ncclTeamOuterFactor(ncclTeam_t parent, int innerSize);
/* The index-th rank of parent that is not in subset (subset contains this rank), counted in
 * parent's order; index < parent.nRanks - subset.nRanks. */
WEFT_HOST_DEVICE_INLINE int ncclTeamRankInDifference(ncclTeam_t parent, ncclTeam_t subset,
                                                     int index);

/* ---- windows -------------------------------------------------------------------------- */

/* Byte offset of resource buffer h in the resource window. */
WEFT_HOST_DEVICE_INLINE size_t ncclGetResourceBufferOffset(ncclDevResourceHandle_t h);

#ifdef __CUDACC__
/* Where byte `offset` of window w is: in this rank's copy; in LSA rank `peer`'s copy; in world
 * rank `peer`'s copy (peer must be an LSA peer); in rank `peer` of team tm's copy (tm must
 * contain this rank, peer must be an LSA peer). The address is a load/store address of this
 * GPU. */
WEFT_DEVICE_INLINE void* ncclGetLocalPointer(ncclWindow_t w, size_t offset);
WEFT_DEVICE_INLINE void* ncclGetLsaPointer(ncclWindow_t w, size_t offset, int peer);
WEFT_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, int peer);
WEFT_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, ncclTeam tm, int peer);

/* Byte `offset` of w in the multicast object mm / the LSA team's one. weft makes none: a
 * communicator with lsaMultimem is refused, so these are not reachable in practice. */
WEFT_DEVICE_INLINE void* ncclGetMultimemPointer(ncclWindow_t w, size_t offset,
                                                ncclMultimemHandle mm);
WEFT_DEVICE_INLINE void* ncclGetLsaMultimemPointer(ncclWindow_t w, size_t offset,
                                                   ncclDevComm const& comm);

/* The registered window whose local copy holds address ptr (an address of this rank's
 * buffer), looked up by the threads of coop together; every thread gets the answer. NULL when
 * no window of the communicator holds it. */
template <typename Coop>
WEFT_DEVICE_INLINE ncclWindow_t ncclFindWindow(Coop coop, ncclDevComm const& comm,
                                               void const* ptr);

/* Resource buffer h (ncclDevResourceRequirements.outBufferHandle): this rank's copy, LSA rank
 * peer's, rank peer of team's, and its multicast addresses (not in weft). */
WEFT_DEVICE_INLINE void* ncclGetResourceBufferLocalPointer(ncclDevComm const& comm,
                                                           ncclDevResourceHandle h);
WEFT_DEVICE_INLINE void* ncclGetResourceBufferLsaPointer(ncclDevComm const& comm,
                                                         ncclDevResourceHandle h, int peer);
WEFT_DEVICE_INLINE void* ncclGetResourceBufferPeerPointer(ncclDevComm const& comm,
                                                          ncclDevResourceHandle h, ncclTeam team,
                                                          int peer);
WEFT_DEVICE_INLINE void* ncclGetResourceBufferMultimemPointer(ncclDevComm const& comm,
                                                              ncclDevResourceHandle h,
                                                              ncclMultimemHandle mm);
WEFT_DEVICE_INLINE void* ncclGetResourceBufferLsaMultimemPointer(ncclDevComm const& comm,
                                                                 ncclDevResourceHandle h);
#endif

#include "impl/core__types.h"

#endif
