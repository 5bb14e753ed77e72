/* Device-API host functions (NCCL 2.28). Teams are answered from what the communicator knows:
 * with no load/store peers yet (no P2P data path), a rank's LSA team is itself and its rail is
 * the world. Resource requirements need the device API, which weft does not have yet. */
#include "api/api.h"
#include "util/check.h"

static int team_ok(ncclComm_t comm, const char* fn) {
  return comm_check_handle(comm, fn) == ncclSuccess;
}

WEFT_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm);
ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (team_ok(comm, "ncclTeamWorld")) t = (ncclTeam_t){comm->nranks, comm->rank, 1};
  return t;
}

WEFT_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (team_ok(comm, "ncclTeamLsa")) t = (ncclTeam_t){1, 0, 1};
  return t;
}

WEFT_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (team_ok(comm, "ncclTeamRail")) t = (ncclTeam_t){comm->nranks, comm->rank, 1};
  return t;
}

/* World rank of member `rank` of team: members are stride apart around this rank. */
WEFT_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  if (!team_ok(comm, "ncclTeamRankToWorld")) return -1;
  if (rank < 0 || rank >= team.nRanks) {
    WARN("ncclTeamRankToWorld: rank = %d is out of range for a team of %d", rank, team.nRanks);
    return -1;
  }
  return comm->rank + (rank - team.rank) * team.stride;
}

WEFT_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  int world = ncclTeamRankToWorld(comm, team, rank);
  if (world < 0) return -1;
  return world == comm->rank ? 0 : -1; /* only this rank is in its LSA team */
}

WEFT_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
         ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                               ncclDevComm_t* outDevComm) {
  const char* fn = "ncclDevCommCreate";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, reqs);
  WEFT_ARG_NONNULL(fn, outDevComm);
  return api_not_available(fn, "the device API");
}

WEFT_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm) {
  const char* fn = "ncclDevCommDestroy";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, devComm);
  return api_not_available(fn, "the device API");
}

WEFT_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclLsaBarrierCreateRequirement";
  (void)team;
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  if (nBarriers < 1) {
    WARN("%s: nBarriers = %d must be at least 1", fn, nBarriers);
    return ncclInvalidArgument;
  }
  return api_not_available(fn, "the device API");
}

WEFT_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team,
         int nBarriers, ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclGinBarrierCreateRequirement";
  (void)team;
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  if (nBarriers < 1) {
    WARN("%s: nBarriers = %d must be at least 1", fn, nBarriers);
    return ncclInvalidArgument;
  }
  return api_not_available(fn, "the device API");
}

WEFT_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  (void)maxElts;
  (void)maxEltSize;
  api_not_available("ncclLLA2ACalcSlots", "the device API");
  return -1;
}

WEFT_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots,
         ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclLLA2ACreateRequirement";
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  if (nBlocks < 1 || nSlots < 1) {
    WARN("%s: nBlocks = %d and nSlots = %d must be at least 1", fn, nBlocks, nSlots);
    return ncclInvalidArgument;
  }
  return api_not_available(fn, "the device API");
}
