/* ncclCommSuspend (NCCL_SUSPEND_MEM), ncclCommResume and ncclCommMemStats.
 *
 * Host mode: the dynamic memory of a communicator is its executor's per-channel scratch, which
 * suspend unmaps (the pages go back to the system) and resume maps again. The connection
 * FIFOs are shared memory that peers map too, and stay. MemStats counts in host mode what the
 * communicator allocated for the executor, in bytes of host memory: Suspend (what suspend gives
 * back), Persist (0: nothing else is tracked), Total.
 *
 * Device mode: the dynamic GPU memory is the p2p FIFOs, in cuMem memory whose addresses outlive
 * the suspend (transport/transport_suspend.c), so CUDA graphs captured before it replay after
 * the resume. As in NCCL, every rank calls suspend, and resume: the ranks first agree that
 * each can (a FIFO in cudaMalloc memory, under NCCL_CUMEM_ENABLE=0 or an old driver, cannot:
 * every rank then refuses with ncclInvalidUsage naming the rank and why, and nothing changes),
 * wait for their kernels, meet at a barrier so no peer still writes, release, and meet again:
 * when suspend returns anywhere, every rank's memory is released. Resume maps new memory at the
 * same addresses, the peers map it again, and the ranks agree it worked everywhere. Launches
 * of the communicator that were captured into a graph are not waited for: the application
 * must not replay one across suspend (as for any NCCL operation in flight). MemStats: Suspend
 * is the GPU memory suspend releases (also while suspended), Persist the communicator's GPU
 * memory that stays (transport_gpu_mem says which), Total both. A communicator with ranks of
 * both modes takes the collective path on every rank (a host rank releases its scratch).
 *
 * While suspended every operation is refused with ncclInvalidUsage and a WARN (comm_check;
 * NCCL leaves that undefined). Suspended answers in both modes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "host/host.h"
#include "lifecycle/lifecycle.h"
#include "plan/plan.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/names.h"
#ifdef WEFT_HAVE_CUDA
#include "device/device_exec.h"
#endif

/* Suspend and resume are collective when some rank runs in device mode (its peers map its
 * FIFOs); host-only communicators suspend each rank alone. */
static int collective(const struct ncclComm* comm) {
  for (int r = 0; r < comm->nranks; r++)
    if (comm->peers[r].mode == WEFT_MODE_DEVICE) return 1;
  return 0;
}

typedef struct {
  int32_t ok;
  char why[124];
} suspend_vote;

/* Every rank's ok (and why not); 1 when all are. Every rank WARNs each refusal. */
static ncclResult_t agree(struct ncclComm* comm, const char* fn, int ok, const char* why,
                          int* all_ok) {
  suspend_vote* v = calloc((size_t)comm->nranks, sizeof *v);
  if (!v) {
    WARN("%s: rank %d: out of memory for %d votes", fn, comm->rank, comm->nranks);
    return ncclSystemError;
  }
  v[comm->rank].ok = ok;
  snprintf(v[comm->rank].why, sizeof v[comm->rank].why, "%s", why);
  ncclResult_t res = bootstrap_allgather(comm->bootstrap, v, sizeof *v);
  *all_ok = res == ncclSuccess;
  for (int r = 0; r < comm->nranks && res == ncclSuccess; r++)
    if (!v[r].ok) {
      *all_ok = 0;
      WARN("%s: comm %p rank %d: rank %d cannot: %s", fn, (void*)comm, comm->rank, r,
           v[r].why);
    }
  free(v);
  return res;
}

static ncclResult_t suspend_collective(struct ncclComm* comm) {
  const char* fn = "ncclCommSuspend";
  char why[124] = "";
  int ok = transport_can_suspend(comm, why, sizeof why), all_ok = 0;
  WEFT_CHECK(agree(comm, fn, ok, why, &all_ok));
  if (!all_ok) return ncclInvalidUsage;
#ifdef WEFT_HAVE_CUDA
  if (comm->device) device_exec_wait_idle(comm, comm->device, 0);
#endif
  WEFT_CHECK(bootstrap_barrier(comm->bootstrap)); /* no kernel of any rank writes any more */
  uint64_t released = 0;
  ncclResult_t res = transport_suspend(comm, &released);
  size_t scratch = comm->host ? host_exec_suspend(comm->host) : 0;
  ncclResult_t b = bootstrap_barrier(comm->bootstrap); /* always: the peers wait for it */
  if (res == ncclSuccess) res = b;
  if (res == ncclSuccess)
    INFO(NCCL_INIT | NCCL_ALLOC, "comm %p rank %d suspended: %llu bytes of GPU memory and %zu "
         "of host scratch released", (void*)comm, comm->rank, (unsigned long long)released,
         scratch);
  return res;
}

ncclResult_t comm_suspend(struct ncclComm* comm) {
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
    } else if (collective(comm)) {
      res = suspend_collective(comm);
      /* Refused everywhere: nothing changed. Any other failure leaves it suspended (some of
       * its memory may be gone): destroy or abort it. */
      if (res == ncclInvalidUsage) __atomic_store_n(&comm->suspended, 0, __ATOMIC_SEQ_CST);
    } else {
      size_t freed = comm->host ? host_exec_suspend(comm->host) : 0;
      INFO(NCCL_INIT, "comm %p rank %d suspended: %zu bytes of scratch released", (void*)comm,
           comm->rank, freed);
    }
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

static ncclResult_t resume_collective(struct ncclComm* comm) {
  ncclResult_t res = comm->host ? host_exec_resume(comm->host) : ncclSuccess;
  /* Every rank takes part in the exchange even after a local failure: the others wait for its
   * offers. A failure anywhere leaves the communicator suspended everywhere (a second resume
   * retries what is not mapped yet). */
  if (res == ncclSuccess) res = transport_resume(comm);
  char why[124];
  snprintf(why, sizeof why, "resuming failed there (%s)", weft_result_str(res));
  int all_ok = 0;
  WEFT_CHECK(agree(comm, "ncclCommResume", res == ncclSuccess, why, &all_ok));
  return all_ok ? ncclSuccess : res != ncclSuccess ? res : ncclRemoteError;
}

ncclResult_t comm_resume(struct ncclComm* comm) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (!comm->suspended) {
    WARN("ncclCommResume: comm %p (rank %d) is not suspended", (void*)comm, comm->rank);
    res = ncclInvalidUsage;
  } else {
    if (collective(comm))
      res = resume_collective(comm);
    else if (comm->host)
      res = host_exec_resume(comm->host);
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
  uint64_t suspendable = 0, persist = 0;
  pthread_mutex_lock(&comm->lock);
  if (comm->mode == WEFT_MODE_DEVICE)
    transport_gpu_mem(comm, &suspendable, &persist);
  else
    suspendable = host_exec_mem_bytes(comm->host);
  pthread_mutex_unlock(&comm->lock);
  *value = stat == ncclStatGpuMemPersist ? persist
           : stat == ncclStatGpuMemSuspend ? suspendable
                                           : suspendable + persist;
  return ncclSuccess;
}
