/* Cooperative groups: the sets of threads that call a device-API function together. Each has
 * thread_rank() (0 .. size()-1), size() == num_threads(), and sync(), which every member calls
 * and which returns once all have arrived (and orders their shared and global memory accesses
 * as the CUDA barrier it stands for). Member code is in impl/coop__funcs.h. */
#ifndef WEFT_NCCL_DEVICE_COOP_H
#define WEFT_NCCL_DEVICE_COOP_H

#include "impl/util__funcs.h"

#ifdef __CUDACC__
/* An aligned group of N consecutive lanes of one warp, N a power of two up to 32. */
template <int N>
struct ncclCoopTile {
  static_assert(N > 0 && N <= 32 && (N & (N - 1)) == 0, "ncclCoopTile: N is 1, 2, 4, ... 32");
  WEFT_DEVICE_INLINE int thread_rank() const;
  WEFT_DEVICE_INLINE constexpr int size() const { return N; }
  WEFT_DEVICE_INLINE constexpr int num_threads() const { return N; }
  WEFT_DEVICE_INLINE uint32_t laneMask() const; /* the tile's lanes */
  WEFT_DEVICE_INLINE void sync();
};
typedef ncclCoopTile<1> ncclCoopThread; /* one thread */
typedef ncclCoopTile<32> ncclCoopWarp;  /* one whole warp */

/* The lanes of this warp set in lmask (all by default); each must be in the group. */
struct ncclCoopLanes {
  uint32_t lmask;
  WEFT_DEVICE_INLINE constexpr ncclCoopLanes(uint32_t lanes = ~0u) : lmask(lanes) {}
  WEFT_DEVICE_INLINE int thread_rank() const;
  WEFT_DEVICE_INLINE int size() const;
  WEFT_DEVICE_INLINE int num_threads() const { return size(); }
  WEFT_DEVICE_INLINE void sync();
};

/* nWarps consecutive warps from warp warp0 of a one-dimensional block, named by id (0..15):
 * two spans with the same id must not be in a collective at the same time (sync uses
 * hardware barrier 1 + id). */
struct ncclCoopWarpSpan {
  uint32_t warp0 : 8, nWarps : 8, id : 8;
  WEFT_DEVICE_INLINE constexpr ncclCoopWarpSpan(int first, int count, int spanId)
      : warp0(first), nWarps(count), id(spanId) {}
  WEFT_DEVICE_INLINE int thread_rank() const;
  WEFT_DEVICE_INLINE int size() const { return 32 * nWarps; }
  WEFT_DEVICE_INLINE int num_threads() const { return size(); }
  WEFT_DEVICE_INLINE void sync();
};

/* Every thread of a one-dimensional block. */
struct ncclCoopCta {
  WEFT_DEVICE_INLINE int thread_rank() const;
  WEFT_DEVICE_INLINE int size() const;
  WEFT_DEVICE_INLINE int num_threads() const { return size(); }
  WEFT_DEVICE_INLINE void sync();
};

/* The lanes of this warp a group covers (all 32 for groups wider than a warp). */
template <int N>
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopTile<N> coop);
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopLanes coop);
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopWarpSpan coop);
WEFT_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopCta coop);

/* Known at compile time to be one thread / to lie within one warp. */
template <int N>
WEFT_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopTile<N>) { return N == 1; }
WEFT_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopLanes) { return false; }
WEFT_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopWarpSpan) { return false; }
WEFT_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopCta) { return false; }
template <int N>
WEFT_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopTile<N>) { return true; }
WEFT_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopLanes) { return true; }
WEFT_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopWarpSpan) { return false; }
WEFT_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopCta) { return false; }

/* The threads of this warp that may act together: those active now; or, inside a collective
 * on coop, the part of coop in this warp (the whole warp for groups wider than one). */
WEFT_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced();
template <typename Coop>
WEFT_DEVICE_INLINE ncclCoopTile<32> ncclCoopCoalesced(Coop coop);
WEFT_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced(ncclCoopLanes coop);
template <int N>
WEFT_DEVICE_INLINE ncclCoopTile<N> ncclCoopCoalesced(ncclCoopTile<N> coop);

/* value as thread `root` of coop holds it, returned to every member. For the block-wide
 * groups, entrySync first syncs coop so that the staging slot in shared memory is free
 * (leave it true unless coop was synced since the last broadcast); T fits in 16 bytes. */
template <int N, typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopTile<N> coop, T value, int root, bool entrySync = true);
template <typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopLanes coop, T value, int root, bool entrySync = true);
template <typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopWarpSpan coop, T value, int root,
                                   bool entrySync = true);
template <typename T>
WEFT_DEVICE_INLINE T ncclCoopBcast(ncclCoopCta coop, T value, int root, bool entrySync = true);
#endif

#endif
