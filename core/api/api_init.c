/* Communicator creation entry points: GetVersion, GetUniqueId, CommInitRank(Config),
 * CommInitRankScalable, CommInitAll, and growing one (CommGetUniqueId, CommGrow). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "group/group.h"
#include "lifecycle/lifecycle.h"
#include "util/check.h"
#include "util/param.h"

WEFT_API(ncclResult_t, ncclGetVersion, int* version);
ncclResult_t ncclGetVersion(int* version) {
  WEFT_ARG_NONNULL("ncclGetVersion", version);
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  WEFT_ARG_NONNULL("ncclGetUniqueId", uniqueId);
  comm_print_banner();
  /* With NCCL_COMM_ID the id names a fixed address; rank 0 starts the root inside init. */
  if (param_is_set(WEFT_PARAM_COMM_ID)) return bootstrap_id_from_env(-1, uniqueId);
  return bootstrap_get_unique_id(uniqueId);
}

/* Validate, build the shell and start (or defer, inside a group) one rank's init. */
static ncclResult_t init_rank(const char* fn, ncclComm_t* out, int nranks, ncclUniqueId id,
                              int rank, const ncclConfig_t* config, int dev, int env_id) {
  WEFT_ARG_NONNULL(fn, out);
  if (nranks < 1) {
    WARN("%s: nranks = %d must be at least 1", fn, nranks);
    return ncclInvalidArgument;
  }
  if (rank < 0 || rank >= nranks) {
    WARN("%s: rank = %d is out of range [0, %d)", fn, rank, nranks);
    return ncclInvalidArgument;
  }
  ncclConfig_t c;
  WEFT_CHECK(comm_config_resolve(config, fn, &c));
  if (env_id && param_is_set(WEFT_PARAM_COMM_ID)) WEFT_CHECK(bootstrap_id_from_env(rank, &id));
  weft_bootstrap_id decoded;
  if (bootstrap_id_decode(&id, &decoded) != ncclSuccess) {
    WARN("%s: rank %d: the unique id is not one made by ncclGetUniqueId", fn, rank);
    return ncclInvalidArgument;
  }
  weft_mode mode;
  int cuda_dev;
  WEFT_CHECK(comm_choose_mode(dev, &mode, &cuda_dev));
  struct ncclComm* comm;
  WEFT_CHECK(comm_alloc(nranks, rank, &c, cuda_dev, &comm));
  if (group_depth() > 0) {
    ncclResult_t res = group_defer_init(comm, &id);
    if (res != ncclSuccess) {
      comm_free(comm);
      return res;
    }
    *out = comm;
    return ncclSuccess;
  }
  ncclResult_t res = comm_init_start(comm, &id);
  if (res != ncclSuccess && res != ncclInProgress) {
    comm_free(comm);
    return res;
  }
  *out = comm;
  return res;
}

WEFT_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank("ncclCommInitRank", comm, nranks, commId, rank, NULL, -1, 1);
}

WEFT_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks,
         ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return init_rank("ncclCommInitRankConfig", comm, nranks, commId, rank, config, -1, 1);
}

/* Several roots only spread the check-in load; every root can serve all ranks, so weft
 * checks in with the first. */
WEFT_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  const char* fn = "ncclCommInitRankScalable";
  WEFT_ARG_NONNULL(fn, commIds);
  if (nId < 1) {
    WARN("%s: nId = %d must be at least 1", fn, nId);
    return ncclInvalidArgument;
  }
  if (nId > 1) INFO(NCCL_INIT, "%s: %d ids given, checking in with the first", fn, nId);
  return init_rank(fn, newcomm, nranks, commIds[0], myrank, config, -1, 1);
}

WEFT_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist);
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  WEFT_ARG_NONNULL(fn, comms);
  if (ndev < 1) {
    WARN("%s: ndev = %d must be at least 1", fn, ndev);
    return ncclInvalidArgument;
  }
  if (devlist) {
    for (int i = 0; i < ndev; i++) {
      if (devlist[i] < 0) {
        WARN("%s: devlist[%d] = %d is not a device number", fn, i, devlist[i]);
        return ncclInvalidArgument;
      }
      for (int j = 0; j < i; j++)
        if (devlist[j] == devlist[i]) {
          WARN("%s: devlist[%d] and devlist[%d] both name device %d", fn, j, i, devlist[i]);
          return ncclInvalidUsage;
        }
    }
  }
  ncclUniqueId id;
  WEFT_CHECK(bootstrap_get_unique_id(&id));
  ncclComm_t* made = calloc((size_t)ndev, sizeof *made);
  if (!made) {
    WARN("%s: out of memory for %d communicators", fn, ndev);
    return ncclSystemError;
  }
  ncclResult_t res = ncclSuccess;
  group_start();
  for (int i = 0; i < ndev && res == ncclSuccess; i++)
    res = init_rank(fn, &made[i], ndev, id, i, NULL, devlist ? devlist[i] : i, 1);
  ncclResult_t end = group_end();
  if (res == ncclSuccess) res = end;
  if (res != ncclSuccess) {
    for (int i = 0; i < ndev; i++)
      if (made[i]) comm_abort(made[i]);
  } else {
    memcpy(comms, made, (size_t)ndev * sizeof *made);
  }
  free(made);
  return res;
}

WEFT_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  WEFT_CHECK(comm_check(comm, "ncclCommGetUniqueId"));
  WEFT_ARG_NONNULL("ncclCommGetUniqueId", uniqueId);
  return comm_grow_unique_id(comm, uniqueId);
}

/* An existing rank's grow queued in a group (freed by group/ once run or dropped). */
typedef struct {
  int nranks, has_id;
  ncclUniqueId id;
  ncclConfig_t config;
  ncclComm_t* newcomm;
} grow_job;

static ncclResult_t grow_run(struct ncclComm* parent, void* arg) {
  grow_job* j = arg;
  return comm_grow(parent, j->nranks, j->has_id ? &j->id : NULL, &j->config, j->newcomm);
}

WEFT_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
         int rank, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config) {
  const char* fn = "ncclCommGrow";
  WEFT_ARG_NONNULL(fn, newcomm);
  if (comm == NULL) { /* a new rank: an ordinary init of the larger size, with the root's id */
    if (uniqueId == NULL) {
      WARN("%s: a new rank (comm = NULL) must pass the uniqueId from ncclCommGetUniqueId", fn);
      return ncclInvalidArgument;
    }
    return init_rank(fn, newcomm, nRanks, *uniqueId, rank, config, -1, 0);
  }
  WEFT_CHECK(comm_check(comm, fn));
  if (rank != -1) {
    WARN("%s: rank = %d: an existing rank (comm != NULL) keeps its rank and passes -1", fn, rank);
    return ncclInvalidArgument;
  }
  if (nRanks <= comm->nranks) {
    WARN("%s: nRanks = %d must be larger than the communicator's %d ranks", fn, nRanks,
         comm->nranks);
    return ncclInvalidArgument;
  }
  ncclConfig_t c = comm->config; /* a NULL config inherits the parent's */
  if (config != NULL) WEFT_CHECK(comm_config_resolve(config, fn, &c));
  if (group_depth() == 0) return comm_grow(comm, nRanks, uniqueId, &c, newcomm);
  /* Inside a group, as NCCL (its grow is a child init that waits for the outermost
   * ncclGroupEnd): the existing rank's grow runs there, each parent on a thread of its own,
   * and a new rank's init (comm = NULL, above) is deferred like any init in a group, so one
   * thread can grow several ranks; *newcomm stays NULL until then, and the id's checks and
   * their errors come at that End. */
  grow_job* j = malloc(sizeof *j);
  if (!j) {
    WARN("%s: rank %d: out of memory queueing a grow in a group", fn, comm->rank);
    return ncclSystemError;
  }
  j->nranks = nRanks;
  j->has_id = uniqueId != NULL;
  if (uniqueId) j->id = *uniqueId;
  j->config = c;
  j->newcomm = newcomm;
  *newcomm = NULL;
  ncclResult_t res = group_defer_job_owned(comm, grow_run, j);
  if (res != ncclSuccess) free(j);
  return res;
}
