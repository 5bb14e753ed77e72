/* ncclCommRevoke: stop a communicator's work without freeing it, so that destroy, split and
 * shrink can follow. Revoke marks the communicator revoked (every later operation is refused
 * with ncclInvalidUsage, and a launch that was about to start sees the mark, plan_launch) and
 * raises the abort flag: host work items fail at once (host_exec.c), kernels stop (the device
 * abort word), the proxy stops waiting. Once no launch is left on the communicator the abort
 * flag is lowered again, so the bootstrap that split and shrink talk over works, and
 * ncclCommGetAsyncError turns from ncclInProgress to ncclSuccess. The connections are out of
 * step from then on; they are only ever closed (destroy treats a revoked comm as aborted). */
#include <pthread.h>
#include <string.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "plan/plan.h"
#include "util/check.h"
#include "util/param.h"
#ifdef WEFT_HAVE_CUDA
#include "device/device_exec.h"
#endif

/* Wait for the launches in flight to leave, then lower the abort flag. Returns the outcome that
 * ncclCommGetAsyncError reports from then on. */
static ncclResult_t revoke_quiesce(struct ncclComm* comm) {
#ifdef WEFT_HAVE_CUDA
  if (comm->device) device_exec_wait_idle(comm, comm->device, 1);
#endif
  /* Host items fail on the flag within one worker turn; a launch between its entry and its
   * first item leaves within WEFT_TIMEOUT_MS at worst (a connection setup polls the flag). */
  int bound = (int)param_int(WEFT_PARAM_TIMEOUT_MS) + 1000;
  ncclResult_t res = ncclSuccess;
  if (!plan_wait_idle(comm, bound)) {
    WARN("rank %d: ncclCommRevoke: an operation on comm %p did not stop within %d ms",
         comm->rank, (void*)comm, bound);
    res = ncclInternalError;
  }
  __atomic_store_n(&comm->abort_flag, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&comm->async_error, (int)res, __ATOMIC_RELEASE);
  INFO(NCCL_INIT, "comm %p rank %d nranks %d - Revoke COMPLETE (%s)", (void*)comm, comm->rank,
       comm->nranks, res == ncclSuccess ? "quiescent" : "not quiescent");
  return res;
}

static void* revoke_thread_main(void* arg) {
  struct ncclComm* comm = arg;
  weft_log_set_thread_rank(comm->rank, comm->cuda_dev);
  revoke_quiesce(comm);
  return NULL;
}

ncclResult_t comm_revoke(struct ncclComm* comm, int wait) {
  comm_join_init(comm); /* a non-blocking init, split or shrink of this comm ends first */
  pthread_mutex_lock(&comm->lock);
  int state = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  const char* refused = NULL;
  if (comm->revoked)
    refused = "was already revoked";
  else if (state == WEFT_COMM_FINALIZED)
    refused = "was finalized";
  else if (state == WEFT_COMM_INITIALIZING || comm->bootstrap == NULL)
    refused = "never finished its init";
  if (refused) {
    pthread_mutex_unlock(&comm->lock);
    WARN("ncclCommRevoke: comm %p (rank %d) %s; revoke is refused", (void*)comm, comm->rank,
         refused);
    return ncclInvalidArgument;
  }
  INFO(NCCL_INIT, "comm %p rank %d nranks %d - Revoke START", (void*)comm, comm->rank,
       comm->nranks);
  /* Order: revoked and the flag are visible before the in-flight count is read (plan_launch
   * increments the count, then reads revoked: one of the two sees the other). Every one of
   * those accesses is sequentially consistent (plan_wait_idle's read too), which is all that
   * takes; no fence (ThreadSanitizer does not model fences). */
  __atomic_store_n(&comm->async_error, ncclInProgress, __ATOMIC_SEQ_CST);
  __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&comm->revoked, 1, __ATOMIC_SEQ_CST);
#ifdef WEFT_HAVE_CUDA
  if (comm->device) device_exec_stop(comm->device);
#endif
  ncclResult_t res = ncclSuccess;
  if (wait) {
    pthread_mutex_unlock(&comm->lock);
    return revoke_quiesce(comm);
  }
  /* Non-blocking: the wait runs on the comm's init thread slot, which GetAsyncError, destroy
   * and abort reap. */
  int rc = pthread_create(&comm->init_thread, NULL, revoke_thread_main, comm);
  if (rc == 0) {
    comm->init_thread_live = 1;
    res = ncclInProgress;
  }
  pthread_mutex_unlock(&comm->lock);
  if (rc != 0) {
    WARN("rank %d: ncclCommRevoke: cannot start a thread (%s); waiting here", comm->rank,
         strerror(rc));
    return revoke_quiesce(comm);
  }
  return res;
}
