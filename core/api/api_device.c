/* Device-API host functions: teams, the communicator's properties, device communicators.
 * Teams are answered from what the communicator has: the LSA team is every rank when all run
 * on one host and reach each other peer to peer (device mode, transport/transport_lsa.c),
 * else each rank alone; the rail is the world divided by it.
 * The requirement functions are in api_devreq.c, the window pointer queries in api_devptr.c,
 * device communicators in api_devcomm.c.
 *
 * Versions: a caller's ncclCommProperties_t and ncclDevCommRequirements_t open with size, magic
 * and the NCCL_VERSION_CODE of the headers it was compiled against. The properties are written
 * field by field as far as the caller's size reaches (their prefix is the same in every
 * version but 2.29.2's, whose ginType is one byte), and 2.32's additions for a 2.32 caller;
 * device communicators are laid out per version (abi/nccl_devcomm.h), and one weft does not
 * know is refused naming both versions. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "gin/gin_comm.h"
#include "nccl_devcomm.h"
#include "topo/pci_path.h"
#include "transport/transport.h"
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

/* The LSA team is a block of consecutive world ranks holding this rank (transport/). */
WEFT_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (!team_ok(comm, "ncclTeamLsa")) return t;
  int size, rank;
  transport_lsa_team(comm, &size, &rank);
  return (ncclTeam_t){size, rank, 1};
}

/* The ranks at this rank's place in every LSA team (NCCL's outer factor of the world). */
WEFT_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  if (!team_ok(comm, "ncclTeamRail")) return t;
  int size, rank;
  transport_lsa_team(comm, &size, &rank);
  return (ncclTeam_t){comm->nranks / size, comm->rank / size, size};
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

/* LSA rank of member `rank` of team; -1 when that rank is outside this rank's LSA team. */
WEFT_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  int world = ncclTeamRankToWorld(comm, team, rank);
  if (world < 0) return -1;
  int size, me;
  transport_lsa_team(comm, &size, &me);
  int i = me + (world - comm->rank);
  return i >= 0 && i < size ? i : -1;
}

/* The newest headers whose device-API layouts weft knows (NVIDIA 2.32's). */
#define DEVAPI_NEWEST NCCL_VERSION(2, 32, 99)

static void version_text(unsigned v, char* buf, size_t len) {
  snprintf(buf, len, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
}

/* ncclInvalidUsage with a WARN naming both versions when headers of `version` are newer than
 * what weft knows. */
static ncclResult_t check_version(const char* fn, const char* what, unsigned version) {
  if (version <= DEVAPI_NEWEST) return ncclSuccess;
  char theirs[24], ours[24];
  version_text(version, theirs, sizeof theirs);
  version_text(DEVAPI_NEWEST, ours, sizeof ours);
  WARN("%s: %s was compiled against NCCL %s headers; weft knows the device-API layouts up to "
       "NCCL %s", fn, what, theirs, ours);
  return ncclInvalidUsage;
}

/* props->field = value when the caller's structure (size bytes, type T) reaches that far. */
#define PROP_SET_T(T, props, size, field, value)                                     \
  do {                                                                               \
    if ((size) >= offsetof(T, field) + sizeof((props)->field))                       \
      (props)->field = (value);                                                      \
  } while (0)
#define PROP_SET(props, size, field, value) \
  PROP_SET_T(ncclCommProperties_t, props, size, field, value)

WEFT_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props);
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props) {
  const char* fn = "ncclCommQueryProperties";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, props);
  ncclDevVersionedHead_t h;
  memcpy(&h, props, sizeof h);
  if (h.magic != NCCL_API_MAGIC) {
    WARN("%s: props->magic = 0x%x is not NCCL_API_MAGIC: initialize props with "
         "NCCL_COMM_PROPERTIES_INITIALIZER", fn, h.magic);
    return ncclInvalidUsage;
  }
  if (h.size < offsetof(ncclCommProperties_t, deviceApiSupport)) {
    WARN("%s: props->size = %zu is smaller than any version's ncclCommProperties_t", fn, h.size);
    return ncclInvalidArgument;
  }
  WEFT_CHECK(check_version(fn, "ncclCommProperties_t", h.version));
  ncclDevCommLayout_t layout = ncclDevCommLayoutOf(h.version);
  if (h.version / 100 == 229 && layout == NCCL_DEVCOMM_LAYOUT_UNKNOWN) {
    char theirs[24];
    version_text(h.version, theirs, sizeof theirs);
    WARN("%s: props comes from NCCL %s headers; of 2.29 weft knows the layouts of 2.29.2, "
         "2.29.3 and 2.29.5 - 2.29.7 only (as NCCL 2.30)", fn, theirs);
    return ncclInvalidUsage;
  }
  int nvml = -1;
  if (comm->mode == WEFT_MODE_DEVICE) nvml = pci_gpu_index("/sys", comm->peers[comm->rank].p2p.bus);
  ncclTeam_t lsa = ncclTeamLsa(comm);
  size_t n = h.size;
  /* Device communicators exist in device mode (api_devcomm.c); for 2.29 headers only where
   * the LSA team is the whole communicator (2.29 callers get LSA and no GIN, as NCCL 2.30
   * serves them). */
  bool device_api = comm->mode == WEFT_MODE_DEVICE;
  if (layout == NCCL_DEVCOMM_LAYOUT_V2_29_2 || layout == NCCL_DEVCOMM_LAYOUT_V2_29_7)
    device_api = device_api && lsa.nRanks == comm->nranks;
  props->rank = comm->rank;
  props->nRanks = comm->nranks;
  props->cudaDev = comm->cuda_dev;
  props->nvmlDev = nvml;
  if (layout == NCCL_DEVCOMM_LAYOUT_V2_29_2) {
    /* Ends after a one-byte ginType. */
    ncclCommProperties_v2_29_2_t* p = (ncclCommProperties_v2_29_2_t*)(void*)props;
    PROP_SET_T(ncclCommProperties_v2_29_2_t, p, n, deviceApiSupport, device_api);
    PROP_SET_T(ncclCommProperties_v2_29_2_t, p, n, multimemSupport, false);
    PROP_SET_T(ncclCommProperties_v2_29_2_t, p, n, ginType, NCCL_DEVCOMM_V2_29_2_GIN_TYPE_NONE);
    return ncclSuccess;
  }
  /* Multicast is never used. GIN: the proxy type, for NCCL 2.30 callers (gin/gin_comm.h; the
   * descriptors of other releases differ), over every rank (no railed GIN). */
  bool gin = layout == NCCL_DEVCOMM_LAYOUT_V2_30 && gin_comm_possible(comm);
  PROP_SET(props, n, deviceApiSupport, device_api);
  PROP_SET(props, n, multimemSupport, false);
  PROP_SET(props, n, ginType, gin ? NCCL_GIN_TYPE_PROXY : NCCL_GIN_TYPE_NONE);
  PROP_SET(props, n, nLsaTeams, comm->nranks / lsa.nRanks);
  PROP_SET(props, n, hostRmaSupport, false);
  PROP_SET(props, n, railedGinType, NCCL_GIN_TYPE_NONE);
  /* 2.32's additions, where the caller has them: no GIN (2.32 descriptors are not spoken) and
   * no fabric (zero says so). */
  if (layout == NCCL_DEVCOMM_LAYOUT_V2_32 &&
      n >= sizeof(ncclCommProperties_v2_32_t)) {
    ncclCommProperties_v2_32_t* p = (ncclCommProperties_v2_32_t*)(void*)props;
    p->commHash = comm->comm_hash;
    p->ginMinStride = 0;
    p->ginConnectionType = 0;
    memset(p->ginSupport, 0, sizeof p->ginSupport);
    p->devCommRuntimeVersionSize = sizeof(ncclDevComm_v2_32_t);
    p->cftSupport = p->cftMulticastSupport = p->cftCountedSupport = false;
  }
  return ncclSuccess;
}
