/* LSA barriers: the ranks of a team that reach each other's memory by load/store wait for each
 * other. A session is one cooperative group's use of barrier `index` of a handle (the
 * communicator's lsaBarrier, or one from ncclLsaBarrierCreateRequirement) for the length of a
 * kernel; members of the group construct it together and it must not outlive the kernel.
 *
 * arrive(coop, order): tells every peer this rank reached the barrier; with a releasing order
 *   (release, acq_rel, seq_cst) the group's writes before it are visible to a peer that waits.
 * wait(coop, order): returns once every peer has arrived as often as this rank has; with an
 *   acquiring order (acquire, acq_rel, seq_cst) peers' writes before their arrive are visible
 *   after it. Gives up when the library's abort flag is set. The form with timeoutCycles
 *   returns ncclSuccess, or NCCL's ncclTimeout (8) once that many clock64 cycles have passed.
 * sync(coop, order): arrive then wait.
 * The session keeps its epoch in the barrier's memory at its end, so the next kernel's session
 * on the same barrier continues from it (CUDA graph replays included). The memory layout and
 * protocol are NCCL's (abi/nccl_devcomm.h, NCCL_LSA_BARRIER_*): kernels built against NCCL's
 * header and against this one may share a barrier. multimem = true needs a multicast object,
 * which weft does not make. */
#ifndef WEFT_NCCL_DEVICE_LSA_BARRIER_H
#define WEFT_NCCL_DEVICE_LSA_BARRIER_H

#include "core.h"

/* ncclLsaBarrierCreateRequirement (host) is declared by nccl.h. */

#ifdef __CUDACC__
#include <cuda/atomic>

/* NCCL 2.30's ncclTimeout, which a timed wait returns; weft's nccl.h, which keeps 2.28's result
 * codes, does not name it yet. */
#define WEFT_LSA_BARRIER_TIMEOUT ((ncclResult_t)8)

template <typename Coop>
struct ncclLsaBarrierSession_internal;

template <typename Coop>
struct ncclLsaBarrierSession : ncclLsaBarrierSession_internal<Coop> {
  /* Barrier `index` of handle, among the ranks of team (which contains this rank). */
  WEFT_DEVICE_INLINE ncclLsaBarrierSession(Coop coop, ncclDevComm const& comm, ncclTeam team,
                                           ncclLsaBarrierHandle handle, uint32_t index,
                                           bool multimem = false, ncclMultimemHandle mmHandle = {});
  /* Barrier `index` of the communicator's lsaBarrier, among its LSA team. */
  WEFT_DEVICE_INLINE ncclLsaBarrierSession(Coop coop, ncclDevComm const& comm, ncclTeamTagLsa,
                                           uint32_t index, bool multimem = false);
  WEFT_DEVICE_INLINE ~ncclLsaBarrierSession();
  ncclLsaBarrierSession(ncclLsaBarrierSession const&) = delete;

  WEFT_DEVICE_INLINE void arrive(Coop coop, cuda::memory_order order);
  WEFT_DEVICE_INLINE void wait(Coop coop, cuda::memory_order order);
  WEFT_DEVICE_INLINE void sync(Coop coop, cuda::memory_order order);
  WEFT_DEVICE_INLINE ncclResult_t wait(Coop coop, cuda::memory_order order, uint64_t timeoutCycles);
  WEFT_DEVICE_INLINE ncclResult_t sync(Coop coop, cuda::memory_order order, uint64_t timeoutCycles);
};
#endif

#include "impl/lsa_barrier__types.h"

#endif
