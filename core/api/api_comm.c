/* Communicator lifecycle and queries: Finalize, Destroy, Abort, Split, Revoke, Shrink,
 * GetAsyncError, Count, CuDevice, UserRank. */
#include "api/api.h"
#ifdef WEFT_HAVE_CUDA
#include "device/device_exec.h"
#endif
#include "group/group.h"
#include "lifecycle/lifecycle.h"
#include "util/check.h"

WEFT_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  WEFT_CHECK(comm_check_handle(comm, "ncclCommFinalize"));
  return comm_finalize(comm);
}

/* NULL is accepted as a no-op, as NCCL does (cleanup paths call destroy unconditionally). */
WEFT_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  WEFT_CHECK(comm_check_handle(comm, "ncclCommDestroy"));
  group_forget_comm(comm, "ncclCommDestroy");
  api_devapi_free(comm);
  return comm_destroy(comm);
}

WEFT_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  WEFT_CHECK(comm_check_handle(comm, "ncclCommAbort"));
  group_forget_comm(comm, "ncclCommAbort");
  api_devapi_free(comm);
  return comm_abort(comm);
}

WEFT_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, newcomm);
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    WARN("%s: color = %d must be >= 0 or NCCL_SPLIT_NOCOLOR", fn, color);
    return ncclInvalidArgument;
  }
  if (group_depth() > 0) return api_not_available(fn, "ncclCommSplit inside a group");
  ncclConfig_t c = comm->config; /* a NULL config inherits the parent's */
  if (config != NULL) WEFT_CHECK(comm_config_resolve(config, fn, &c));
  return comm_split(comm, color, key, &c, newcomm);
}

WEFT_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  WEFT_CHECK(comm_check(comm, "ncclCommRevoke"));
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    WARN("ncclCommRevoke: revokeFlags = %d, expected NCCL_REVOKE_DEFAULT", revokeFlags);
    return ncclInvalidArgument;
  }
  return api_not_available("ncclCommRevoke", "revoking a communicator");
}

WEFT_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  const char* fn = "ncclCommShrink";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, newcomm);
  if (excludeRanksCount < 0 || excludeRanksCount >= comm->nranks) {
    WARN("%s: excludeRanksCount = %d is out of range [0, %d)", fn, excludeRanksCount,
         comm->nranks);
    return ncclInvalidArgument;
  }
  if (excludeRanksCount > 0) WEFT_ARG_NONNULL(fn, excludeRanksList);
  for (int i = 0; i < excludeRanksCount; i++)
    WEFT_CHECK(arg_check_root(fn, comm, "excludeRanksList[i]", excludeRanksList[i]));
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    WARN("%s: shrinkFlags = %d is not NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT", fn,
         shrinkFlags);
    return ncclInvalidArgument;
  }
  (void)config;
  return api_not_available(fn, "shrinking a communicator");
}

WEFT_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  WEFT_CHECK(comm_check_handle(comm, "ncclCommGetAsyncError"));
  WEFT_ARG_NONNULL("ncclCommGetAsyncError", asyncError);
  ncclResult_t r = (ncclResult_t)__atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
  if (r != ncclInProgress) comm_join_init(comm); /* reap a finished non-blocking init */
#ifdef WEFT_HAVE_CUDA
  if (r == ncclSuccess && comm->device) {
    /* A kernel that gave up waiting (peer gone, WEFT_TIMEOUT_MS, abort) said so here. */
    ncclResult_t e = device_exec_error(comm);
    int ok = ncclSuccess;
    if (e != ncclSuccess &&
        __atomic_compare_exchange_n(&comm->async_error, &ok, (int)e, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      __atomic_store_n(&comm->state, WEFT_COMM_FAILED, __ATOMIC_RELEASE);
      WARN("rank %d: a kernel stopped waiting for a peer (%s); the communicator has failed",
           comm->rank, e == ncclRemoteError ? "aborted" : "no progress within WEFT_TIMEOUT_MS");
    }
    if (e != ncclSuccess) r = (ncclResult_t)__atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
  }
#endif
  *asyncError = r;
  return ncclSuccess;
}

/* Queries answer for initialized and finalized communicators. */
static ncclResult_t check_queryable(const struct ncclComm* comm, const char* fn) {
  WEFT_CHECK(comm_check_handle(comm, fn));
  int state = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  if (state == WEFT_COMM_READY || state == WEFT_COMM_FINALIZED) return ncclSuccess;
  return comm_check(comm, fn); /* WARNs why */
}

WEFT_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  WEFT_CHECK(check_queryable(comm, "ncclCommCount"));
  WEFT_ARG_NONNULL("ncclCommCount", count);
  *count = comm->nranks;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  WEFT_CHECK(check_queryable(comm, "ncclCommCuDevice"));
  WEFT_ARG_NONNULL("ncclCommCuDevice", device);
  *device = comm->cuda_dev; /* -1 for a host-mode communicator */
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  WEFT_CHECK(check_queryable(comm, "ncclCommUserRank"));
  WEFT_ARG_NONNULL("ncclCommUserRank", rank);
  *rank = comm->rank;
  return ncclSuccess;
}
