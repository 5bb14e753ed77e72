/* The inline code of nccl_device/core.h: teams, window pointers, window lookup, resource
 * buffers. Each computes what NCCL's own header computes from the same fields, so a kernel
 * built against either reaches the same bytes. */
#ifndef WEFT_NCCL_DEVICE_CORE__FUNCS_H
#define WEFT_NCCL_DEVICE_CORE__FUNCS_H

#include "../core.h"
#include "../coop.h"

/* ---- teams ---------------------------------------------------------------------------- */

#ifdef __cplusplus
namespace weft_dev {
WEFT_HOST_DEVICE_INLINE ncclTeam makeTeam(int nRanks, int rank, int stride) {
  ncclTeam t;
  t.nRanks = nRanks;
  t.rank = rank;
  t.stride = stride;
  return t;
}
} // namespace weft_dev

WEFT_HOST_DEVICE_INLINE ncclTeam ncclTeamWorld(ncclDevComm const& comm) {
  return weft_dev::makeTeam(comm.nRanks, comm.rank, 1);
}

WEFT_HOST_DEVICE_INLINE ncclTeam ncclTeamLsa(ncclDevComm const& comm) {
  return weft_dev::makeTeam(comm.lsaSize, comm.lsaRank, 1);
}

/* LSA teams are consecutive world ranks, lsaSize each: the rail is every lsaSize-th rank. */
WEFT_HOST_DEVICE_INLINE ncclTeam ncclTeamRail(ncclDevComm const& comm) {
  uint32_t size = (uint32_t)comm.lsaSize, rcp = comm.lsaSize_rcp32;
  return weft_dev::makeTeam((int)weft_dev::divByRcp((uint32_t)comm.nRanks, size, rcp),
                            (int)weft_dev::divByRcp((uint32_t)comm.rank, size, rcp), comm.lsaSize);
}

WEFT_HOST_DEVICE_INLINE int ncclTeamRankToWorld(ncclDevComm const& comm, ncclTeam tm, int rank) {
  return comm.rank + (rank - tm.rank) * tm.stride;
}

WEFT_HOST_DEVICE_INLINE int ncclTeamRankToLsa(ncclDevComm const& comm, ncclTeam tm, int rank) {
  return comm.lsaRank + (rank - tm.rank) * tm.stride;
}
#endif

/* Distances are measured in world ranks from this rank, which both teams contain. */
WEFT_HOST_DEVICE_INLINE bool ncclTeamRankIsMember(ncclTeam_t a, ncclTeam_t b, int brank) {
  int worldDelta = (brank - b.rank) * b.stride;
  uint32_t steps = (uint32_t)(worldDelta / a.stride);
  uint32_t rest = (uint32_t)(worldDelta % a.stride);
  int arank = a.rank + (int)steps;
  return arank >= 0 && arank < a.nRanks && rest == 0;
}

WEFT_HOST_DEVICE_INLINE int ncclTeamRankToTeam(ncclTeam_t a, ncclTeam_t b, int brank) {
  int worldDelta = (brank - b.rank) * b.stride;
  return a.rank + (int)(uint32_t)(worldDelta / a.stride);
}

WEFT_HOST_DEVICE_INLINE ncclTeam_t ncclTeamInnerFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = innerSize;
  t.rank = parent.rank % innerSize;
  t.stride = parent.stride;
  return t;
}

WEFT_HOST_DEVICE_INLINE ncclTeam_t ncclTeamOuterFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = parent.nRanks / innerSize;
  t.rank = parent.rank / innerSize;
  t.stride = parent.stride * innerSize;
  return t;
}

/* subset's members sit in parent every `step` ranks starting at `first` (in parent ranks);
 * the ranks of parent outside it are: those before first, then step-1 in every gap, then
 * those after the last member. */
WEFT_HOST_DEVICE_INLINE int ncclTeamRankInDifference(ncclTeam_t parent, ncclTeam_t subset,
                                                     int index) {
  int step = subset.stride / parent.stride;
  int first = parent.rank - subset.rank * step;
  if (step < 0) { /* subset runs backwards through parent: walk it from its other end */
    step = -step;
    first -= (subset.nRanks - 1) * step;
  }
  if (index < first) return index;
  int k = index - first;                     /* index among the ranks from first on */
  int inGaps = (subset.nRanks - 1) * (step - 1);
  if (k < inGaps) return first + 1 + (k / (step - 1)) * step + k % (step - 1);
  return first + 1 + (subset.nRanks - 1) * step + (k - inGaps);
}

WEFT_HOST_DEVICE_INLINE size_t ncclGetResourceBufferOffset(ncclDevResourceHandle_t h) {
  return (size_t)h * NCCL_DEVCOMM_RESOURCE_UNIT;
}

/* ---- window pointers ------------------------------------------------------------------ */

#ifdef __CUDACC__
namespace weft_dev {
/* LSA rank i's copy of window w. */
WEFT_DEVICE_INLINE char* lsaCopy(ncclWindow_t w, int i) {
  char* base = loadRO(&w->lsaFlatBase);
  return add4G(base, i * (int)loadRO(&w->stride4G));
}
} // namespace weft_dev

WEFT_DEVICE_INLINE void* ncclGetLocalPointer(ncclWindow_t w, size_t offset) {
  return weft_dev::lsaCopy(w, weft_dev::loadRO(&w->lsaRank)) + offset;
}

WEFT_DEVICE_INLINE void* ncclGetLsaPointer(ncclWindow_t w, size_t offset, int peer) {
  return weft_dev::lsaCopy(w, peer) + offset;
}

/* LSA teams are consecutive world ranks: world rank peer is LSA rank
 * lsaRank + (peer - worldRank). */
WEFT_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, int peer) {
  int lsaPeer = weft_dev::loadRO(&w->lsaRank) + (peer - weft_dev::loadRO(&w->worldRank));
  return weft_dev::lsaCopy(w, lsaPeer) + offset;
}

WEFT_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, ncclTeam tm,
                                            int peer) {
  int lsaPeer = weft_dev::loadRO(&w->lsaRank) + (peer - tm.rank) * tm.stride;
  return weft_dev::lsaCopy(w, lsaPeer) + offset;
}

WEFT_DEVICE_INLINE void* ncclGetMultimemPointer(ncclWindow_t w, size_t offset,
                                                ncclMultimemHandle mm) {
  char* mc = (char*)mm.mcBasePtr;
  return mc + (size_t)weft_dev::loadRO(&w->mcOffset4K) * 4096 + offset;
}

WEFT_DEVICE_INLINE void* ncclGetLsaMultimemPointer(ncclWindow_t w, size_t offset,
                                                   ncclDevComm const& comm) {
  return ncclGetMultimemPointer(w, offset, comm.lsaMultimem);
}

/* Each lane of the coalesced group looks at every size-th entry of a chunk; the lowest lane
 * with a hit shares the entry's index. Windows do not overlap, so at most one entry holds
 * ptr. */
template <typename Coop>
WEFT_DEVICE_INLINE ncclWindow_t ncclFindWindow(Coop coop, ncclDevComm const& comm,
                                               void const* ptr) {
  auto lanes = ncclCoopCoalesced(coop);
  uint32_t mask = ncclCoopGetLaneMask(lanes);
  uintptr_t addr = reinterpret_cast<uintptr_t>(ptr);
  ncclDevCommWindowTable* chunk = comm.windowTable;
  while (chunk != nullptr) {
    int hit = -1;
#pragma unroll 1
    for (int i = lanes.thread_rank(); i < 32; i += lanes.size()) {
      ncclDevCommWindowTable::Entry const* e = &chunk->entries[i];
      uintptr_t base = weft_dev::loadRO(&e->base);
      uintptr_t size = weft_dev::loadRO(&e->size);
      ncclWindow_t win = weft_dev::loadRO(&e->window);
      if (base != 0 && size != 0 && win != nullptr && addr - base < size) {
        hit = i;
        break;
      }
    }
    uint32_t found = __ballot_sync(mask, hit >= 0);
    if (found != 0) {
      int srcLane = __ffs(found) - 1;
      int index = __shfl_sync(mask, hit, srcLane);
      return weft_dev::loadRO(&chunk->entries[index].window);
    }
    chunk = weft_dev::loadRO(&chunk->next);
  }
  return nullptr;
}

/* ---- resource buffers ----------------------------------------------------------------- */

namespace weft_dev {
/* LSA rank i's copy of resource buffer h, from the window fields inlined in comm. */
WEFT_DEVICE_INLINE void* resourceCopy(ncclDevComm const& comm, ncclDevResourceHandle h, int i) {
  char* base = comm.resourceWindow_inlined.lsaFlatBase;
  char* copy = add4G(base, i * (int)comm.resourceWindow_inlined.stride4G);
  return copy + (size_t)h * NCCL_DEVCOMM_RESOURCE_UNIT;
}
} // namespace weft_dev

WEFT_DEVICE_INLINE void* ncclGetResourceBufferLocalPointer(ncclDevComm const& comm,
                                                           ncclDevResourceHandle h) {
  return weft_dev::resourceCopy(comm, h, comm.lsaRank);
}

WEFT_DEVICE_INLINE void* ncclGetResourceBufferLsaPointer(ncclDevComm const& comm,
                                                         ncclDevResourceHandle h, int peer) {
  return weft_dev::resourceCopy(comm, h, peer);
}

WEFT_DEVICE_INLINE void* ncclGetResourceBufferPeerPointer(ncclDevComm const& comm,
                                                          ncclDevResourceHandle h, ncclTeam team,
                                                          int peer) {
  return weft_dev::resourceCopy(comm, h, comm.lsaRank + (peer - team.rank) * team.stride);
}

WEFT_DEVICE_INLINE void* ncclGetResourceBufferMultimemPointer(ncclDevComm const& comm,
                                                              ncclDevResourceHandle h,
                                                              ncclMultimemHandle mm) {
  char* mc = (char*)mm.mcBasePtr;
  return mc + (size_t)comm.resourceWindow_inlined.mcOffset4K * 4096 +
         (size_t)h * NCCL_DEVCOMM_RESOURCE_UNIT;
}

WEFT_DEVICE_INLINE void* ncclGetResourceBufferLsaMultimemPointer(ncclDevComm const& comm,
                                                                 ncclDevResourceHandle h) {
  return ncclGetResourceBufferMultimemPointer(comm, h, comm.lsaMultimem);
}
#endif

#endif
