/* Handle validation: a communicator pointer from the user is looked up among the live ones
 * (comm_registry.c) before any byte of it is read, then its magics are checked, so a destroyed
 * or corrupted handle is an error, not a read of freed memory or a crash. */
#include "comm/comm.h"
#include "util/check.h"
#include "util/names.h"
#include "util/tsan.h"

ncclResult_t comm_check_handle(const struct ncclComm* comm, const char* fn) {
  if (comm == NULL) {
    WARN("%s: comm is NULL", fn);
    return ncclInvalidArgument;
  }
  if (!comm_registry_live(comm)) {
    WARN("%s: comm %p is not a live communicator (destroyed, aborted or never created)", fn,
         (void*)comm);
    return ncclInvalidArgument;
  }
  if (comm->magic_start != WEFT_COMM_MAGIC_START || comm->magic_end != WEFT_COMM_MAGIC_END) {
    WARN("%s: comm %p is not a valid communicator (destroyed or corrupted)", fn, (void*)comm);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t comm_check(const struct ncclComm* comm, const char* fn) {
  WEFT_CHECK(comm_check_handle(comm, fn));
  if (__atomic_load_n(&comm->revoked, __ATOMIC_ACQUIRE)) {
    WARN("%s: comm %p (rank %d) was revoked; only ncclCommDestroy, ncclCommAbort, "
         "ncclCommSplit and ncclCommShrink are allowed", fn, (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  if (__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE)) {
    WARN("%s: comm %p (rank %d) is suspended (ncclCommSuspend); call ncclCommResume first", fn,
         (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  /* What this thread did before a call on comm comes before whatever a peer does once it has
   * heard from this call, such as a put the one-sided thread writes into a window here
   * (rma_service.c acquires comm): an order through other processes, which TSan cannot see.
   * An RMA plugin's own thread writes a put into a window without weft: weft's socket plugin
   * acquires the window's address instead (plugins/net-socket/rma_socket_ops.c), so each window
   * is released here too (the caller's thread owns comm->regs between calls). */
  WEFT_TSAN_RELEASE(comm);
#ifdef WEFT_TSAN
  for (const weft_mem_reg* r = comm->regs; r; r = r->next)
    if (r->window) WEFT_TSAN_RELEASE(r->buff);
#endif
  int state = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  switch (state) {
    case WEFT_COMM_READY: return ncclSuccess;
    case WEFT_COMM_INITIALIZING:
      WARN("%s: comm %p (rank %d) is still initializing; poll ncclCommGetAsyncError first", fn,
           (void*)comm, comm->rank);
      return ncclInvalidUsage;
    case WEFT_COMM_FINALIZED:
      WARN("%s: comm %p (rank %d) was finalized; only ncclCommDestroy is allowed", fn,
           (void*)comm, comm->rank);
      return ncclInvalidUsage;
    default:
      WARN("%s: comm %p (rank %d) failed earlier (%s); abort or destroy it", fn, (void*)comm,
           comm->rank, weft_result_str((ncclResult_t)comm->async_error));
      return ncclInvalidUsage;
  }
}

ncclResult_t comm_check_manage(const struct ncclComm* comm, const char* fn, int accept_failed) {
  WEFT_CHECK(comm_check_handle(comm, fn));
  if (__atomic_load_n(&comm->revoked, __ATOMIC_ACQUIRE)) {
    if (__atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE) == ncclInProgress) {
      WARN("%s: comm %p (rank %d) is still being revoked; poll ncclCommGetAsyncError until it "
           "is no longer ncclInProgress", fn, (void*)comm, comm->rank);
      return ncclInvalidUsage;
    }
    return ncclSuccess;
  }
  if (accept_failed && __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE) == WEFT_COMM_FAILED &&
      comm->bootstrap != NULL && comm->peers != NULL)
    return ncclSuccess;
  return comm_check(comm, fn);
}
