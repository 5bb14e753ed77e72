/* The members and functions of the cooperative groups in nccl_device/coop.h. */
#ifndef WEFT_NCCL_DEVICE_COOP__FUNCS_H
#define WEFT_NCCL_DEVICE_COOP__FUNCS_H

#include "../coop.h"

#ifdef __CUDACC__
template <int N>
WEFT_DEVICE_INLINE int ncclCoopTile<N>::thread_rank() const {
  return weft_dev::laneId() & (N - 1);
}
template <int N>
WEFT_DEVICE_INLINE uint32_t ncclCoopTile<N>::laneMask() const {
  uint32_t ones = N == 32 ? ~0u : (1u << N) - 1;
  return ones << (weft_dev::laneId() & ~(N - 1));
}
template <int N>
WEFT_DEVICE_INLINE void ncclCoopTile<N>::sync() {
  if (N > 1) __syncwarp(laneMask());
}

WEFT_DEVICE_INLINE int ncclCoopLanes::thread_rank() const {
  return __popc(lmask & weft_dev::lanesBelow());
}
WEFT_DEVICE_INLINE int ncclCoopLanes::size() const { return __popc(lmask); }
WEFT_DEVICE_INLINE void ncclCoopLanes::sync() { __syncwarp(lmask); }

WEFT_DEVICE_INLINE int ncclCoopWarpSpan::thread_rank() const {
  return (int)threadIdx.x - 32 * (int)warp0;
}
WEFT_DEVICE_INLINE void ncclCoopWarpSpan::sync() {
  asm volatile("bar.sync %0, %1;" ::"r"(1 + (int)id), "r"(32 * (int)nWarps) : "memory");
}

WEFT_DEVICE_INLINE int ncclCoopCta::thread_rank() const { return (int)threadIdx.x; }
WEFT_DEVICE_INLINE int ncclCoopCta::size() const { return (int)blockDim.x; }
WEFT_DEVICE_INLINE void ncclCoopCta::sync() { __syncthreads(); }

template <int N>
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopTile<N> coop) {
  return coop.laneMask();
}
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopLanes coop) { return coop.lmask; }
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopWarpSpan) { return ~0u; }
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopCta) { return ~0u; }

WEFT_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced() { return ncclCoopLanes(__activemask()); }
template <typename Coop>
WEFT_DEVICE_INLINE ncclCoopTile<32> ncclCoopCoalesced(Coop) {
  return ncclCoopTile<32>();
}
WEFT_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced(ncclCoopLanes coop) { return coop; }
template <int N>
WEFT_DEVICE_INLINE ncclCoopTile<N> ncclCoopCoalesced(ncclCoopTile<N> coop) {
  return coop;
}

namespace weft_dev {
/* value from lane `srcLane` (of the lanes in mask; width: shuffle segment), in 32-bit pieces. */
template <typename T>
WEFT_DEVICE_INLINE T shuffleFrom(uint32_t mask, T value, int srcLane, int width) {
  constexpr int kWords = (int)((sizeof(T) + 3) / 4);
  union {
    uint32_t w[kWords];
    T v;
  } u;
  u.v = value;
#pragma unroll
  for (int i = 0; i < kWords; i++) u.w[i] = __shfl_sync(mask, u.w[i], srcLane, width);
  return u.v;
}

/* The shared-memory slot a block-wide broadcast passes through: one per warp-span id (0..15),
 * one for the whole block. */
WEFT_DEVICE_INLINE ulonglong2* bcastSlot(int id) {
  __shared__ ulonglong2 slots[17];
  return &slots[id];
}

template <typename Coop, typename T>
WEFT_DEVICE_INLINE T bcastShared(Coop coop, ulonglong2* slot, T value, int root, bool entrySync) {
  static_assert(sizeof(T) <= sizeof(ulonglong2), "ncclCoopBcast: at most 16 bytes");
  if (entrySync) coop.sync();
  if (coop.thread_rank() == root) *reinterpret_cast<T*>(slot) = value;
  coop.sync();
  return *reinterpret_cast<T*>(slot);
}
} // namespace weft_dev

template <int N, typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopTile<N>, T value, int root, bool) {
  return weft_dev::shuffleFrom(~0u, value, root, N);
}
template <typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopLanes coop, T value, int root, bool) {
  /* the (root+1)-th lane of the mask */
  int srcLane = root == 0 ? __ffs(coop.lmask) - 1 : (int)__fns(coop.lmask, 0, root + 1);
  return weft_dev::shuffleFrom(coop.lmask, value, srcLane, 32);
}
template <typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopWarpSpan coop, T value, int root, bool entrySync) {
  return weft_dev::bcastShared(coop, weft_dev::bcastSlot((int)coop.id), value, root, entrySync);
}
template <typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopCta coop, T value, int root, bool entrySync) {
  return weft_dev::bcastShared(coop, weft_dev::bcastSlot(16), value, root, entrySync);
}
#endif

#endif
