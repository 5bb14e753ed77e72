/* LSA barrier sessions (nccl_device/lsa_barrier.h). The protocol, on the words of
 * NCCL_LSA_BARRIER_* in abi/nccl_devcomm.h:
 * - arrive: the group syncs; unicast, each peer's inbox slot for this rank gets epoch + 1
 *   (relaxed stores, after a system-scope fence carrying the order's releasing part);
 *   multicast, one thread adds 1 to the multicast inbox (every member's copy at once).
 * - wait: unicast, this rank's inbox slot of every peer is polled (loads with the order's
 *   acquiring part) until it reaches epoch + 1, then epoch moves on by 1; multicast, one thread
 *   polls this rank's multicast inbox until it reaches epoch + team size, then moves epoch on
 *   by that. Counters wrap: "reaches" is a comparison on a 32-bit circle.
 * - the session's end stores epoch where its start read it from. */
#ifndef WEFT_NCCL_DEVICE_LSA_BARRIER__FUNCS_H
#define WEFT_NCCL_DEVICE_LSA_BARRIER__FUNCS_H

#include "../lsa_barrier.h"
#include "core__funcs.h"

#ifdef __CUDACC__
template <typename Coop>
WEFT_DEVICE_INLINE ncclLsaBarrierSession<Coop>::ncclLsaBarrierSession(
    Coop coop, ncclDevComm const& comm, ncclTeam team, ncclLsaBarrierHandle handle,
    uint32_t index, bool multimem, ncclMultimemHandle mmHandle)
    : ncclLsaBarrierSession_internal<Coop>{coop,     comm,     team, handle, (int)index,
                                           multimem, mmHandle, 0} {
  this->epoch = *this->localWord(this->epochWord());
}

template <typename Coop>
WEFT_DEVICE_INLINE ncclLsaBarrierSession<Coop>::ncclLsaBarrierSession(Coop coop,
                                                                      ncclDevComm const& comm,
                                                                      ncclTeamTagLsa,
                                                                      uint32_t index,
                                                                      bool multimem)
    : ncclLsaBarrierSession(coop, comm, ncclTeamLsa(comm), comm.lsaBarrier, index, multimem,
                            comm.lsaMultimem) {}

template <typename Coop>
WEFT_DEVICE_INLINE ncclLsaBarrierSession<Coop>::~ncclLsaBarrierSession() {
  if (this->coop.thread_rank() == 0) *this->localWord(this->epochWord()) = this->epoch;
  this->coop.sync();
}

template <typename Coop>
WEFT_DEVICE_INLINE void ncclLsaBarrierSession<Coop>::arrive(Coop, cuda::memory_order order) {
  this->coop.sync();
  int nBarriers = this->handle.nBarriers;
  if (this->multimem) {
#if __CUDA_ARCH__ >= 900
    if (this->coop.thread_rank() == 0) {
      uint32_t* box = this->multicastWord(NCCL_LSA_BARRIER_MC_INBOX(nBarriers, this->index));
      if (weft_dev::releasePart(order) != cuda::memory_order_relaxed)
        asm volatile("multimem.red.release.sys.add.u32 [%0], 1;" ::"l"(box) : "memory");
      else
        asm volatile("multimem.red.relaxed.sys.add.u32 [%0], 1;" ::"l"(box) : "memory");
    }
#endif
    return;
  }
  ncclTeam team = this->team;
  if (team.nRanks > 1)
    cuda::atomic_thread_fence(weft_dev::releasePart(order), cuda::thread_scope_system);
  uint32_t slot = NCCL_LSA_BARRIER_UC_INBOX(nBarriers, team.nRanks, this->index, team.rank);
#pragma unroll 1
  for (int i = this->coop.thread_rank(); i < team.nRanks - 1; i += this->coop.size()) {
    int peer = i < team.rank ? i : i + 1; /* every team rank but this one */
    cuda::atomic_ref<uint32_t, cuda::thread_scope_system> box(*this->peerWord(peer, slot));
    box.store(this->epoch + 1, cuda::memory_order_relaxed);
  }
}

namespace weft_dev {
/* Polls word until it reaches target. Untimed, gives up only when the abort flag is set (and
 * still answers ncclSuccess); timed, answers WEFT_LSA_BARRIER_TIMEOUT once timeoutCycles have
 * passed since start. */
template <bool kTimed>
WEFT_DEVICE_INLINE ncclResult_t pollUntil(uint32_t* word, uint32_t target,
                                          cuda::memory_order acquire, uint64_t start,
                                          uint64_t timeoutCycles, uint32_t* abortFlag,
                                          uint32_t* polls) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> box(*word);
#pragma unroll 1
  while (!counterReached(box.load(acquire), target)) {
    if (kTimed) {
      if (clock64() - start >= timeoutCycles) return WEFT_LSA_BARRIER_TIMEOUT;
    } else if (aborted(abortFlag, polls)) {
      break;
    }
  }
  return ncclSuccess;
}
} // namespace weft_dev

/* A timed wait that runs out does not move the epoch. Either way the group syncs before
 * returning. */
template <typename Coop>
template <bool kTimed>
WEFT_DEVICE_INLINE ncclResult_t ncclLsaBarrierSession_internal<Coop>::waitFor(
    cuda::memory_order order, uint64_t timeoutCycles) {
  cuda::memory_order acquire = weft_dev::acquirePart(order);
  uint64_t start = kTimed ? clock64() : 0;
  uint32_t polls = 0;
  ncclResult_t res = ncclSuccess;
  if (multimem) {
#if __CUDA_ARCH__ >= 900
    if (coop.thread_rank() == 0) {
      uint32_t target = epoch + (uint32_t)team.nRanks;
      uint32_t* box = localWord(NCCL_LSA_BARRIER_MC_INBOX(handle.nBarriers, index));
      res = weft_dev::pollUntil<kTimed>(box, target, acquire, start, timeoutCycles,
                                        comm.abortFlag, &polls);
      if (res == ncclSuccess) epoch = target;
    }
#endif
  } else {
#pragma unroll 1
    for (int i = coop.thread_rank(); i < team.nRanks - 1 && res == ncclSuccess;
         i += coop.size()) {
      int peer = i < team.rank ? i : i + 1;
      uint32_t* box =
          localWord(NCCL_LSA_BARRIER_UC_INBOX(handle.nBarriers, team.nRanks, index, peer));
      res = weft_dev::pollUntil<kTimed>(box, epoch + 1, acquire, start, timeoutCycles,
                                        comm.abortFlag, &polls);
    }
    if (res == ncclSuccess) epoch += 1;
  }
  coop.sync();
  return res;
}

template <typename Coop>
WEFT_DEVICE_INLINE void ncclLsaBarrierSession<Coop>::wait(Coop, cuda::memory_order order) {
  (void)this->template waitFor<false>(order, 0);
}

template <typename Coop>
WEFT_DEVICE_INLINE ncclResult_t ncclLsaBarrierSession<Coop>::wait(Coop, cuda::memory_order order,
                                                                  uint64_t timeoutCycles) {
  this->coop.sync();
  return this->template waitFor<true>(order, timeoutCycles);
}

template <typename Coop>
WEFT_DEVICE_INLINE void ncclLsaBarrierSession<Coop>::sync(Coop coop, cuda::memory_order order) {
  arrive(coop, order);
  wait(coop, order);
}

template <typename Coop>
WEFT_DEVICE_INLINE ncclResult_t ncclLsaBarrierSession<Coop>::sync(Coop coop,
                                                                  cuda::memory_order order,
                                                                  uint64_t timeoutCycles) {
  arrive(coop, order);
  return wait(coop, order, timeoutCycles);
}
#endif

#endif
