/* Communicator lifecycle and queries: Finalize, Destroy, Abort, Split, Revoke, Shrink,
 * Suspend, Resume, MemStats, GetAsyncError, Count, CuDevice, UserRank. */
#include "api/api.h"
#ifdef WEFT_HAVE_CUDA
#include "device/device_exec.h"
#endif
#include "gin/gin_comm.h"
#include "group/group.h"
#include "lifecycle/lifecycle.h"
#include "util/check.h"

#include <stdlib.h>
#include <string.h>

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
  gin_comm_destroy(comm); /* a device communicator with GIN not destroyed by the caller */
  api_devapi_free(comm);
  return comm_destroy(comm);
}

WEFT_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  WEFT_CHECK(comm_check_handle(comm, "ncclCommAbort"));
  group_forget_comm(comm, "ncclCommAbort");
#ifdef WEFT_HAVE_CUDA
  /* Device-API kernels' GIN waits end on the abort word before their proxy goes away. */
  if (gin_comm_active(comm)) device_exec_stop(comm->device);
#endif
  gin_comm_destroy(comm);
  api_devapi_free(comm);
  return comm_abort(comm);
}

/* A split queued in a group (freed by group/ once run or dropped). */
typedef struct {
  int color, key;
  ncclConfig_t config;
  ncclComm_t* newcomm;
} split_job;

static ncclResult_t split_run(struct ncclComm* parent, void* arg) {
  split_job* j = arg;
  return comm_split(parent, j->color, j->key, &j->config, j->newcomm);
}

WEFT_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  WEFT_CHECK(comm_check_manage(comm, fn, 0)); /* a revoked comm splits (NCCL) */
  WEFT_ARG_NONNULL(fn, newcomm);
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    WARN("%s: color = %d must be >= 0 or NCCL_SPLIT_NOCOLOR", fn, color);
    return ncclInvalidArgument;
  }
  ncclConfig_t c = comm->config; /* a NULL config inherits the parent's */
  if (config != NULL) WEFT_CHECK(comm_config_resolve(config, fn, &c));
  if (group_depth() == 0) return comm_split(comm, color, key, &c, newcomm);
  /* Inside a group, as NCCL: the split runs at the outermost ncclGroupEnd (beside the group's
   * other splits, inits and window mappings, each parent on a thread of its own), and
   * *newcomm stays NULL until then, so newcomm must stay valid until that End. */
  split_job* j = malloc(sizeof *j);
  if (!j) {
    WARN("%s: rank %d: out of memory queueing a split in a group", fn, comm->rank);
    return ncclSystemError;
  }
  *j = (split_job){color, key, c, newcomm};
  *newcomm = NULL;
  ncclResult_t res = group_defer_job_owned(comm, split_run, j);
  if (res != ncclSuccess) free(j);
  return res;
}

WEFT_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  WEFT_CHECK(comm_check_handle(comm, "ncclCommRevoke"));
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    WARN("ncclCommRevoke: revokeFlags = %d, expected NCCL_REVOKE_DEFAULT", revokeFlags);
    return ncclInvalidArgument;
  }
  ncclResult_t res = comm_revoke(comm, comm->config.blocking);
  gin_comm_stop(comm); /* device-API kernels left on the abort word revoke raised */
  return res;
}

/* A shrink queued in a group (freed by group/ once run or dropped). */
typedef struct {
  int count, abort;
  ncclConfig_t config;
  ncclComm_t* newcomm;
  int exclude[]; /* the caller's list, copied */
} shrink_job;

static ncclResult_t shrink_run(struct ncclComm* parent, void* arg) {
  shrink_job* j = arg;
  return comm_shrink(parent, j->exclude, j->count, &j->config, j->abort, j->newcomm);
}

WEFT_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  const char* fn = "ncclCommShrink";
  /* A failed comm (a peer died) shrinks: that is what shrink is for. */
  WEFT_CHECK(comm_check_manage(comm, fn, 1));
  WEFT_ARG_NONNULL(fn, newcomm);
  if (excludeRanksCount < 0 || excludeRanksCount >= comm->nranks) {
    WARN("%s: excludeRanksCount = %d is out of range [0, %d)", fn, excludeRanksCount,
         comm->nranks);
    return ncclInvalidArgument;
  }
  if (excludeRanksCount > 0) WEFT_ARG_NONNULL(fn, excludeRanksList);
  for (int i = 0; i < excludeRanksCount; i++) {
    int r = excludeRanksList[i];
    WEFT_CHECK(arg_check_root(fn, comm, "excludeRanksList[i]", r));
    for (int j = 0; j < i; j++)
      if (excludeRanksList[j] == r) {
        WARN("%s: excludeRanksList[%d] and excludeRanksList[%d] both name rank %d", fn, j, i, r);
        return ncclInvalidArgument;
      }
    if (r == comm->rank) {
      WARN("%s: rank %d is in its own excludeRanksList (excludeRanksList[%d]); excluded ranks "
           "do not call ncclCommShrink", fn, r, i);
      return ncclInvalidArgument;
    }
  }
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    WARN("%s: shrinkFlags = %d is not NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT", fn,
         shrinkFlags);
    return ncclInvalidArgument;
  }
  ncclConfig_t c = comm->config; /* a NULL config inherits the parent's */
  if (config != NULL) WEFT_CHECK(comm_config_resolve(config, fn, &c));
  if (group_depth() == 0)
    return comm_shrink(comm, excludeRanksList, excludeRanksCount, &c,
                       shrinkFlags == NCCL_SHRINK_ABORT, newcomm);
  /* Inside a group, as NCCL (its shrink is a child init that waits for the outermost
   * ncclGroupEnd, like split): the shrink runs there, each parent on a thread of its own, so
   * one thread can shrink the communicators of several ranks; *newcomm stays NULL until then.
   * NCCL_SHRINK_ABORT's revoke runs there too: nothing of the group has been launched before. */
  shrink_job* j = malloc(sizeof *j + (size_t)excludeRanksCount * sizeof(int));
  if (!j) {
    WARN("%s: rank %d: out of memory queueing a shrink in a group", fn, comm->rank);
    return ncclSystemError;
  }
  j->count = excludeRanksCount;
  j->abort = shrinkFlags == NCCL_SHRINK_ABORT;
  j->config = c;
  j->newcomm = newcomm;
  if (excludeRanksCount > 0)
    memcpy(j->exclude, excludeRanksList, (size_t)excludeRanksCount * sizeof(int));
  *newcomm = NULL;
  ncclResult_t res = group_defer_job_owned(comm, shrink_run, j);
  if (res != ncclSuccess) free(j);
  return res;
}

static ncclResult_t suspend_run(struct ncclComm* comm, void* arg) {
  (void)arg;
  return comm_suspend(comm);
}

static ncclResult_t resume_run(struct ncclComm* comm, void* arg) {
  (void)arg;
  return comm_resume(comm);
}

WEFT_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags);
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) {
  const char* fn = "ncclCommSuspend";
  WEFT_CHECK(comm_check_handle(comm, fn));
  if (flags & ~NCCL_SUSPEND_MEM) {
    WARN("%s: flags = 0x%x has bits other than NCCL_SUSPEND_MEM (0x%x)", fn, (unsigned)flags,
         NCCL_SUSPEND_MEM);
    return ncclInvalidArgument;
  }
  if (__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE)) {
    WARN("%s: comm %p (rank %d) is already suspended", fn, (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  WEFT_CHECK(comm_check(comm, fn));
  if (!(flags & NCCL_SUSPEND_MEM)) return ncclSuccess; /* nothing asked, as in NCCL */
  /* Inside a group, as NCCL: at the outermost ncclGroupEnd, each communicator on a thread of
   * its own, so one thread can suspend several ranks of a device-mode communicator (their
   * suspends wait for each other). */
  if (group_depth() > 0) return group_defer_job(comm, suspend_run, NULL);
  return comm_suspend(comm);
}

WEFT_API(ncclResult_t, ncclCommResume, ncclComm_t comm);
ncclResult_t ncclCommResume(ncclComm_t comm) {
  WEFT_CHECK(comm_check_handle(comm, "ncclCommResume"));
  if (group_depth() > 0) return group_defer_job(comm, resume_run, NULL); /* as suspend */
  return comm_resume(comm);
}

WEFT_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat,
         uint64_t* value);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* fn = "ncclCommMemStats";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, value);
  int state = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  if (state != WEFT_COMM_READY) WEFT_CHECK(comm_check(comm, fn)); /* WARNs why */
  return comm_mem_stat(comm, (int)stat, value);
}

WEFT_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  WEFT_CHECK(comm_check_handle(comm, "ncclCommGetAsyncError"));
  WEFT_ARG_NONNULL("ncclCommGetAsyncError", asyncError);
  ncclResult_t r = (ncclResult_t)__atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
  if (r != ncclInProgress) comm_join_init(comm); /* reap a finished non-blocking init */
#ifdef WEFT_HAVE_CUDA
  if (r == ncclSuccess && comm->device && !__atomic_load_n(&comm->revoked, __ATOMIC_ACQUIRE)) {
    /* A kernel that gave up waiting (peer gone, WEFT_TIMEOUT_MS, abort) said so here. */
    ncclResult_t e = device_exec_error(comm);
    int ok = ncclSuccess;
    if (e != ncclSuccess &&
        __atomic_compare_exchange_n(&comm->async_error, &ok, (int)e, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      __atomic_store_n(&comm->state, WEFT_COMM_FAILED, __ATOMIC_RELEASE);
      int peer = device_exec_error_peer(comm);
      const char* why = e == ncclRemoteError ? "aborted" : "no progress within WEFT_TIMEOUT_MS";
      if (peer >= 0)
        WARN("rank %d: ncclWaitSignal stopped waiting for rank %d's signals (%s); the "
             "communicator has failed", comm->rank, peer, why);
      else
        WARN("rank %d: a kernel stopped waiting for a peer (%s); the communicator has failed",
             comm->rank, why);
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
