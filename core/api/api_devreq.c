/* The device API's requirement functions: each says how much of the device communicator's
 * resource buffer (and how many GIN signals) one device-side object needs, and where
 * ncclDevCommCreate writes the object's place in it. They answer exactly as NCCL 2.30 answers
 * (sizes, alignments, rounding), whether or not this communicator can honour them: that is
 * ncclDevCommCreate's decision. The structures they fill are the caller's, in NVIDIA's layout,
 * which has not changed from 2.28 to 2.32. */
#include <stdint.h>
#include <string.h>

#include "api/api.h"
#include "nccl_devcomm.h"
#include "util/check.h"

/* Completing nccl.h's opaque types with their NVIDIA layouts (abi/devcomm/, unchanged from
 * 2.28 to 2.32). */
struct ncclDevResourceRequirements {
  ncclDevResourceRequirements_v2_30_t v;
};
struct ncclLsaBarrierHandle {
  ncclLsaBarrierHandle_v2_30_t v;
};
struct ncclGinBarrierHandle {
  ncclGinBarrierHandle_v2_30_t v;
};
struct ncclLLA2AHandle {
  ncclLLA2AHandle_v2_30_t v;
};
struct ncclGinOutboxHandle {
  ncclGinOutboxHandle_v2_30_t v;
};
struct ncclGinInboxA2AHandle {
  ncclGinInboxA2AHandle_v2_30_t v;
};

/* The GIN scratch buffers' fixed parts (NVIDIA's gin_scratch types): a 128-byte state per
 * block, an outbox's 512 request slots of 16 bytes, and 512 buffers at most. */
enum { GIN_STATE_BYTES = 128, GIN_OUTBOX_REQUEST_BYTES = 16 * 512, GIN_MAX_BUFS_LOG2 = 9 };

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* 2^32 / x rounded as NCCL's idivRcp32 rounds it (x >= 1). */
static uint32_t rcp32(uint32_t x) { return UINT32_MAX / x + ((x & (x - 1)) == 0); }

static ncclResult_t check_count(const char* fn, const char* what, int n) {
  if (n < 0) {
    WARN("%s: %s = %d is negative", fn, what, n);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static ncclResult_t check_log2(const char* fn, int size_log2) {
  if (size_log2 < 0 || size_log2 > 30) {
    WARN("%s: size_log2 = %d is outside 0..30", fn, size_log2);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclLsaBarrierCreateRequirement";
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  WEFT_CHECK(check_count(fn, "nBarriers", nBarriers));
  WEFT_CHECK(check_count(fn, "team.nRanks", team.nRanks));
  memset(outReq, 0, sizeof *outReq);
  outHandle->v.nBarriers = nBarriers;
  /* Three words per barrier, then one inbox word per barrier and team rank. */
  outReq->v.bufferSize = (size_t)(3 + team.nRanks) * (size_t)nBarriers * sizeof(uint32_t);
  outReq->v.bufferAlign = sizeof(uint32_t);
  outReq->v.outBufferHandle = &outHandle->v.bufHandle;
  return ncclSuccess;
}

/* Answered as NCCL answers whether or not GIN exists: the requirement only counts signals;
 * ncclDevCommCreate refuses GIN resources on a communicator without GIN. */
WEFT_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team,
         int nBarriers, ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclGinBarrierCreateRequirement";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  WEFT_CHECK(check_count(fn, "nBarriers", nBarriers));
  WEFT_CHECK(check_count(fn, "team.nRanks", team.nRanks));
  memset(outReq, 0, sizeof *outReq);
  outReq->v.ginSignalCount = nBarriers * team.nRanks;
  outReq->v.outGinSignalStart = &outHandle->v.signal0;
  return ncclSuccess;
}

WEFT_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  /* Each slot carries 8 bytes of payload (and 8 of flags). */
  return maxElts * ((maxEltSize + 7) / 8);
}

WEFT_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots,
         ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclLLA2ACreateRequirement";
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  WEFT_CHECK(check_count(fn, "nBlocks", nBlocks));
  WEFT_CHECK(check_count(fn, "nSlots", nSlots));
  outHandle->v.nSlots = (uint32_t)nSlots;
  memset(outReq, 0, sizeof *outReq);
  /* Per block: a 16-byte epoch line, then two phases of nSlots 16-byte lines. */
  outReq->v.bufferSize = (size_t)nBlocks * (1 + 2 * (size_t)nSlots) * 16;
  outReq->v.bufferAlign = 16;
  outReq->v.outBufferHandle = &outHandle->v.bufHandle;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int size_log2,
         struct ncclGinOutboxHandle* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                            struct ncclGinOutboxHandle* outHandle,
                                            ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclGinOutboxCreateRequirement";
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  WEFT_CHECK(check_count(fn, "nBlocks", nBlocks));
  WEFT_CHECK(check_log2(fn, size_log2));
  memset(outReq, 0, sizeof *outReq);
  if (size_log2 < 7) size_log2 = 7; /* 128 bytes at least */
  outHandle->v.size_log2 = (uint32_t)size_log2;
  outReq->v.bufferSize = (size_t)nBlocks * (GIN_STATE_BYTES + GIN_OUTBOX_REQUEST_BYTES +
                                          align_up((size_t)1 << size_log2, GIN_STATE_BYTES));
  outReq->v.bufferAlign = 128;
  outReq->v.outBufferHandle = &outHandle->v.bufHandle;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks,
         int size_log2, struct ncclGinInboxA2AHandle* outHandle,
         ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                              struct ncclGinInboxA2AHandle* outHandle,
                                              ncclDevResourceRequirements_t* outReq) {
  const char* fn = "ncclGinInboxA2ACreateRequirement";
  WEFT_ARG_NONNULL(fn, outHandle);
  WEFT_ARG_NONNULL(fn, outReq);
  WEFT_CHECK(check_count(fn, "nBlocks", nBlocks));
  WEFT_CHECK(check_log2(fn, size_log2));
  if (peers.nRanks < 2) { /* an all-to-all inbox needs a peer besides this rank */
    WARN("%s: peers.nRanks = %d must be at least 2", fn, peers.nRanks);
    return ncclInvalidArgument;
  }
  int npeers = peers.nRanks - 1;
  memset(outReq, 0, sizeof *outReq);
  outHandle->v.size_log2 = (uint32_t)size_log2;
  outHandle->v.nPeers_rcp32 = rcp32((uint32_t)npeers);
  outReq->v.bufferSize =
      (size_t)nBlocks * (GIN_STATE_BYTES + align_up((size_t)1 << size_log2, GIN_STATE_BYTES));
  outReq->v.bufferAlign = 128;
  outReq->v.outBufferHandle = &outHandle->v.bufHandle;
  outReq->v.ginSignalCount = nBlocks * 4 * (npeers + (1 << GIN_MAX_BUFS_LOG2));
  outReq->v.outGinSignalStart = &outHandle->v.signals;
  return ncclSuccess;
}
