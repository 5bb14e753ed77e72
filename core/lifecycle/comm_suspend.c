/* ncclCommSuspend (NCCL_SUSPEND_MEM), ncclCommResume and ncclCommMemStats.
 *
 * Host mode: the dynamic memory of a communicator is its executor's per-channel scratch, which
 * suspend unmaps (the pages go back to the system) and resume maps again. The connection
 * FIFOs are shared memory that peers map too, and stay. While suspended every operation is
 * refused with ncclInvalidUsage and a WARN (comm_check; NCCL leaves that undefined). MemStats
 * counts in host mode what the communicator allocated for the executor, in bytes of host
 * memory: Suspend (what suspend gives back), Persist (0: nothing else is tracked), Total.
 *
 * Device mode: giving GPU memory back needs the FIFOs and staging buffers on cuMem mappings
 * whose virtual addresses outlive the suspend (graphs captured before it hold them); that is
 * not built yet, and suspend and the byte counts say so (ncclInvalidUsage) instead of
 * pretending. Suspended answers in both modes. */
#include "comm/comm.h"
#include "host/host.h"
#include "lifecycle/lifecycle.h"
#include "plan/plan.h"
#include "util/check.h"

static ncclResult_t device_not_built(const struct ncclComm* comm, const char* fn) {
  WARN("%s: comm %p (rank %d) runs in device mode; releasing its GPU memory on suspend is not "
       "built yet in weft (host mode only)", fn, (void*)comm, comm->rank);
  return ncclInvalidUsage;
}

ncclResult_t comm_suspend(struct ncclComm* comm) {
  if (comm->mode == WEFT_MODE_DEVICE) return device_not_built(comm, "ncclCommSuspend");
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (comm->suspended) {
    WARN("ncclCommSuspend: comm %p (rank %d) is already suspended", (void*)comm, comm->rank);
    res = ncclInvalidUsage;
  } else {
    /* Refuse operations first, then look for one in flight: plan_launch counts itself in
     * flight, then reads the mark, so either it sees the mark or this sees it (all four
     * accesses sequentially consistent). */
    __atomic_store_n(&comm->suspended, 1, __ATOMIC_SEQ_CST);
    if (comm->plan && __atomic_load_n(&comm->plan->inflight, __ATOMIC_SEQ_CST) > 0) {
      __atomic_store_n(&comm->suspended, 0, __ATOMIC_SEQ_CST);
      WARN("ncclCommSuspend: comm %p (rank %d) has an operation in flight on another thread",
           (void*)comm, comm->rank);
      res = ncclInvalidUsage;
    } else {
      size_t freed = comm->host ? host_exec_suspend(comm->host) : 0;
      INFO(NCCL_INIT, "comm %p rank %d suspended: %zu bytes of scratch released", (void*)comm,
           comm->rank, freed);
    }
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

ncclResult_t comm_resume(struct ncclComm* comm) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (!comm->suspended) {
    WARN("ncclCommResume: comm %p (rank %d) is not suspended", (void*)comm, comm->rank);
    res = ncclInvalidUsage;
  } else {
    if (comm->host) res = host_exec_resume(comm->host);
    if (res == ncclSuccess) {
      __atomic_store_n(&comm->suspended, 0, __ATOMIC_RELEASE);
      INFO(NCCL_INIT, "comm %p rank %d resumed", (void*)comm, comm->rank);
    }
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

ncclResult_t comm_mem_stat(struct ncclComm* comm, int stat, uint64_t* value) {
  if (stat == ncclStatGpuMemSuspended) {
    *value = __atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE) ? 1 : 0;
    return ncclSuccess;
  }
  if (stat != ncclStatGpuMemSuspend && stat != ncclStatGpuMemPersist &&
      stat != ncclStatGpuMemTotal) {
    WARN("ncclCommMemStats: stat = %d is not an ncclCommMemStat_t value", stat);
    return ncclInvalidArgument;
  }
  if (comm->mode == WEFT_MODE_DEVICE) return device_not_built(comm, "ncclCommMemStats");
  pthread_mutex_lock(&comm->lock);
  uint64_t suspendable = host_exec_mem_bytes(comm->host);
  pthread_mutex_unlock(&comm->lock);
  *value = stat == ncclStatGpuMemPersist ? 0 : suspendable;
  return ncclSuccess;
}
