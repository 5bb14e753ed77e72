/* Finalize, destroy and abort. Abort never waits without a bound: it raises the abort flag,
 * which every bootstrap wait polls, before it joins anything. */
#include <stdlib.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "plan/plan.h"
#include "util/check.h"
#include "util/names.h"

ncclResult_t comm_finalize(struct ncclComm* comm) {
  comm_join_init(comm);
  int state = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  if (state == WEFT_COMM_FINALIZED) {
    WARN("ncclCommFinalize: comm %p (rank %d) is already finalized", (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  if (__atomic_load_n(&comm->revoked, __ATOMIC_ACQUIRE)) {
    WARN("ncclCommFinalize: comm %p (rank %d) was revoked; only destroy, split and shrink "
         "remain (NCCL forbids finalize after revoke)", (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  if (state != WEFT_COMM_READY) {
    WARN("ncclCommFinalize: comm %p (rank %d) is not initialized (%s)", (void*)comm, comm->rank,
         weft_result_str((ncclResult_t)comm->async_error));
    return ncclInvalidUsage;
  }
  /* Host operations are complete when their call returns; what may still be in flight are net
   * sends the proxy has not finished handing to the plugin. */
  ncclResult_t res = comm_datapath_quiesce(comm);
  if (res != ncclSuccess) {
    WARN("ncclCommFinalize: comm %p (rank %d): data still in flight could not be delivered (%s)",
         (void*)comm, comm->rank, weft_result_str(res));
    return res;
  }
  __atomic_store_n(&comm->state, WEFT_COMM_FINALIZED, __ATOMIC_RELEASE);
  INFO(NCCL_INIT, "comm %p rank %d finalized", (void*)comm, comm->rank);
  return ncclSuccess;
}

/* Destroy never frees under another thread's operation: while one runs on comm (another
 * thread blocked in a collective, say) it refuses, and the comm stays usable; ncclCommAbort is
 * the call that stops such an operation and frees the comm. */
ncclResult_t comm_destroy(struct ncclComm* comm) {
  comm_join_init(comm);
  if (!plan_close(comm)) {
    WARN("ncclCommDestroy: comm %p (rank %d): another thread has an operation in flight on it; "
         "not destroyed (let that call return first, or stop it with ncclCommAbort)",
         (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  /* A revoked comm's connections are out of step: close them as an abort does, without
   * flushing or waiting for peers. */
  if (__atomic_load_n(&comm->revoked, __ATOMIC_ACQUIRE))
    __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
  INFO(NCCL_INIT, "comm %p rank %d nranks %d - Destroy COMPLETE", (void*)comm, comm->rank,
       comm->nranks);
  comm_free(comm);
  return ncclSuccess;
}

ncclResult_t comm_abort(struct ncclComm* comm) {
  __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
  comm_join_init(comm); /* a non-blocking init polls the flag and returns promptly */
  /* A revoke that was still waiting lowered the flag as it ended: raise it again. */
  __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
  if (comm->bootstrap) bootstrap_abort(comm->bootstrap);
  INFO(NCCL_INIT, "comm %p rank %d nranks %d - Abort COMPLETE", (void*)comm, comm->rank,
       comm->nranks);
  comm_free(comm);
  return ncclSuccess;
}
