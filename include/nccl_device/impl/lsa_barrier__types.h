/* The state of an LSA barrier session (nccl_device/lsa_barrier.h): what it was built from and
 * the epoch, its count of completed waits, which this group keeps in registers and stores back
 * into the barrier's memory at its end. */
#ifndef WEFT_NCCL_DEVICE_LSA_BARRIER__TYPES_H
#define WEFT_NCCL_DEVICE_LSA_BARRIER__TYPES_H

#include "core__types.h"

#ifdef __CUDACC__
template <typename Coop>
struct ncclLsaBarrierSession_internal {
  Coop coop;
  ncclDevComm const& comm;
  ncclTeam team;
  ncclLsaBarrierHandle handle;
  int index;
  bool multimem;
  ncclMultimemHandle mmHandle;
  uint32_t epoch;

  /* Word w of this rank's copy of the barrier buffer. */
  WEFT_DEVICE_INLINE uint32_t* localWord(uint32_t w) const {
    return (uint32_t*)ncclGetResourceBufferLocalPointer(comm, handle.bufHandle) + w;
  }
  /* Word w of team rank `owner`'s copy. */
  WEFT_DEVICE_INLINE uint32_t* peerWord(int owner, uint32_t w) const {
    return (uint32_t*)ncclGetResourceBufferPeerPointer(comm, handle.bufHandle, team, owner) + w;
  }
  /* Word w of the multicast copy (reaches every member's at once). */
  WEFT_DEVICE_INLINE uint32_t* multicastWord(uint32_t w) const {
    return (uint32_t*)ncclGetResourceBufferMultimemPointer(comm, handle.bufHandle, mmHandle) + w;
  }
  /* Where this session's epoch is kept between kernels. */
  WEFT_DEVICE_INLINE uint32_t epochWord() const {
    return multimem ? NCCL_LSA_BARRIER_MC_EPOCH(handle.nBarriers, index)
                    : NCCL_LSA_BARRIER_UC_EPOCH(handle.nBarriers, index);
  }

  template <bool kTimed>
  WEFT_DEVICE_INLINE ncclResult_t waitFor(cuda::memory_order order, uint64_t timeoutCycles);
};
#endif

#endif
