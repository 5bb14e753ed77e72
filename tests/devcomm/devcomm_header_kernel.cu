/* Compiled, never run (devcomm_header_compiles): kernels and host code that use every type,
 * macro and function of weft's nccl_device.h, so that nvcc with every warning as an error
 * checks the whole header, the inline code included (templates are instantiated here). */
#include "nccl_device.h"

template <typename Coop>
__device__ void useCoop(Coop coop, int* out) {
  out[0] = coop.thread_rank() + coop.size() + coop.num_threads();
  out[1] = (int)ncclCoopGetLaneMask(ncclCoopCoalesced(coop));
  out[2] = ncclCoopIsThread(coop) + ncclCoopWithinWarp(coop);
  out[3] = ncclCoopBcast(coop, out[0], 0);
  double2 wide = ncclCoopBcast(coop, make_double2(out[0], out[1]), 0, false);
  out[4] = (int)wide.y;
  coop.sync();
}

template <typename Coop>
__device__ void useBarrier(Coop coop, ncclDevComm const& comm, int* out) {
  ncclLsaBarrierSession<Coop> bar{coop, comm, ncclTeamLsa(comm), comm.lsaBarrier, 0};
  bar.arrive(coop, cuda::memory_order_release);
  bar.wait(coop, cuda::memory_order_acquire);
  bar.sync(coop, cuda::memory_order_relaxed);
  bar.sync(coop, cuda::memory_order_acq_rel);
  bar.sync(coop, cuda::memory_order_seq_cst);
  out[5] = (int)bar.wait(coop, cuda::memory_order_acquire, 1000000ull);
  out[6] = (int)bar.sync(coop, cuda::memory_order_release, 1000000ull);
}

__global__ void everyDeviceFunction(ncclWindow_t win, ncclDevComm comm, int* out) {
  ncclTeam world = ncclTeamWorld(comm), lsa = ncclTeamLsa(comm), rail = ncclTeamRail(comm);
  int r = ncclTeamRankToWorld(comm, lsa, 0) + ncclTeamRankToLsa(comm, rail, 0);
  r += ncclTeamRankIsMember(world, lsa, 1) + ncclTeamRankToTeam(world, rail, 0);
  ncclTeam inner = ncclTeamInnerFactor(world, 2), outer = ncclTeamOuterFactor(world, 2);
  r += inner.rank + outer.rank + ncclTeamRankInDifference(world, lsa, 0);
  r += (int)ncclGetResourceBufferOffset(comm.lsaBarrier.bufHandle);

  char* p = (char*)ncclGetLocalPointer(win, 0);
  p += (size_t)ncclGetLsaPointer(win, 8, 1) & 1;
  p += (size_t)ncclGetPeerPointer(win, 8, 1) & 1;
  p += (size_t)ncclGetPeerPointer(win, 8, lsa, 1) & 1;
  p += (size_t)ncclGetMultimemPointer(win, 8, comm.lsaMultimem) & 1;
  p += (size_t)ncclGetLsaMultimemPointer(win, 8, comm) & 1;
  ncclDevResourceHandle h = comm.lsaBarrier.bufHandle;
  p += (size_t)ncclGetResourceBufferLocalPointer(comm, h) & 1;
  p += (size_t)ncclGetResourceBufferLsaPointer(comm, h, 1) & 1;
  p += (size_t)ncclGetResourceBufferPeerPointer(comm, h, lsa, 1) & 1;
  p += (size_t)ncclGetResourceBufferMultimemPointer(comm, h, comm.lsaMultimem) & 1;
  p += (size_t)ncclGetResourceBufferLsaMultimemPointer(comm, h) & 1;
  ncclWindow_t found = ncclFindWindow(ncclCoopCta(), comm, p);
  found = found ? found : ncclFindWindow(ncclCoopWarp(), comm, p);
  found = found ? found : ncclFindWindow(ncclCoopThread(), comm, p);
  found = found ? found : ncclFindWindow(ncclCoopLanes(), comm, p);
  out[7] = r + (found == win);

  useCoop(ncclCoopThread(), out);
  useCoop(ncclCoopTile<4>(), out);
  useCoop(ncclCoopWarp(), out);
  useCoop(ncclCoopCoalesced(), out);
  useCoop(ncclCoopLanes(0xffffu), out);
  useCoop(ncclCoopWarpSpan(0, 2, 3), out);
  useCoop(ncclCoopCta(), out);

  useBarrier(ncclCoopCta(), comm, out);
  useBarrier(ncclCoopWarp(), comm, out);
  useBarrier(ncclCoopWarpSpan(0, 1, 1), comm, out);
  {
    ncclLsaBarrierSession<ncclCoopCta> tagged{ncclCoopCta(), comm, ncclTeamTagLsa(), blockIdx.x};
    tagged.sync(ncclCoopCta(), cuda::memory_order_acquire);
  }
  {
    ncclLsaBarrierSession<ncclCoopCta> mc{ncclCoopCta(), comm, ncclTeamTagLsa(), 0, true};
    mc.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  }
}

/* The host side a user writes, compiled only. */
ncclResult_t hostSide(ncclComm_t comm, ncclWindow_t win, int* out, cudaStream_t stream) {
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  ncclResult_t res = ncclCommQueryProperties(comm, &props);
  if (res != ncclSuccess || !props.deviceApiSupport) return res;
  ncclLsaBarrierHandle_t extra;
  ncclDevResourceRequirements_t extraReq;
  res = ncclLsaBarrierCreateRequirement(ncclTeamLsa(comm), 4, &extra, &extraReq);
  if (res != ncclSuccess) return res;
  ncclTeamRequirements_t teamReq = {NULL, ncclTeamWorld(comm), false, NULL};
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = 8;
  reqs.resourceRequirementsList = &extraReq;
  reqs.teamRequirementsList = &teamReq;
  ncclDevComm devComm;
  res = ncclDevCommCreate(comm, &reqs, &devComm);
  if (res != ncclSuccess) return res;
  void* peer = NULL;
  res = ncclGetLsaDevicePointer(win, 0, ncclTeamRankToLsa(comm, ncclTeamRail(comm), 0), &peer);
  if (res == ncclSuccess) res = ncclGetPeerDevicePointer(win, 0, 0, &peer);
  if (res == ncclSuccess) res = ncclGetLsaMultimemDevicePointer(win, 0, &peer);
  if (res == ncclSuccess) res = ncclGetMultimemDevicePointer(win, 0, devComm.lsaMultimem, &peer);
  int teamRanks = ncclTeamWorld(devComm).nRanks + ncclTeamRankToWorld(comm, ncclTeamLsa(comm), 0);
  everyDeviceFunction<<<1, 64 + teamRanks % 2, 0, stream>>>(win, devComm, out);
  ncclResult_t destroyed = ncclDevCommDestroy(comm, &devComm);
  return res != ncclSuccess ? res : destroyed;
}
