/* Helpers the inline device functions share: the inline-function macros, 4 GiB address
 * arithmetic, read-only loads, lane queries, memory-order splitting and division by a
 * precomputed reciprocal. Internal: names live in namespace weft_dev (C++ only). */
#ifndef WEFT_NCCL_DEVICE_UTIL__FUNCS_H
#define WEFT_NCCL_DEVICE_UTIL__FUNCS_H

#include <stdint.h>

/* WEFT_DEVICE_INLINE: device code, always inlined. WEFT_HOST_DEVICE_INLINE: callable from both
 * sides (plain inline where no CUDA compiler is at work). */
#ifdef __CUDACC__
#define WEFT_DEVICE_INLINE __device__ __forceinline__
#define WEFT_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#elif defined(__cplusplus)
#define WEFT_HOST_DEVICE_INLINE inline
#else
#define WEFT_HOST_DEVICE_INLINE static inline
#endif

#ifdef __CUDACC__
#include <cuda/atomic>

namespace weft_dev {

/* `base` moved by delta4G units of 4 GiB: the flat LSA mapping puts LSA rank i's copy of a
 * window at lsaFlatBase + i * stride4G units. Only the high 32 bits of the address change. */
template <typename T>
WEFT_DEVICE_INLINE T* add4G(T* base, int delta4G) {
  uintptr_t a = reinterpret_cast<uintptr_t>(base);
  a += static_cast<uintptr_t>(static_cast<uint32_t>(delta4G)) << 32;
  return reinterpret_cast<T*>(a);
}

/* Loads of fields the library wrote before the kernel started and nobody writes while it
 * runs (window and window-table fields), through the read-only data cache. */
WEFT_DEVICE_INLINE int loadRO(int const* p) { return __ldg(p); }
WEFT_DEVICE_INLINE uint32_t loadRO(uint32_t const* p) { return __ldg(p); }
WEFT_DEVICE_INLINE uintptr_t loadRO(uintptr_t const* p) {
  return (uintptr_t)__ldg(reinterpret_cast<unsigned long long const*>(p));
}
template <typename T>
WEFT_DEVICE_INLINE T* loadRO(T* const* p) {
  return reinterpret_cast<T*>(__ldg(reinterpret_cast<unsigned long long const*>(p)));
}

WEFT_DEVICE_INLINE int laneId() {
  int id;
  asm("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

/* Bits of the lanes below this one. */
WEFT_DEVICE_INLINE uint32_t lanesBelow() {
  uint32_t m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

/* The acquiring and the releasing half of an order (a wait acquires, an arrive releases). */
WEFT_DEVICE_INLINE cuda::memory_order acquirePart(cuda::memory_order o) {
  if (o == cuda::memory_order_release) return cuda::memory_order_relaxed;
  if (o == cuda::memory_order_acq_rel) return cuda::memory_order_acquire;
  return o;
}
WEFT_DEVICE_INLINE cuda::memory_order releasePart(cuda::memory_order o) {
  if (o == cuda::memory_order_acquire) return cuda::memory_order_relaxed;
  if (o == cuda::memory_order_acq_rel) return cuda::memory_order_release;
  return o;
}

/* a is at or past b on a 32-bit counter that wraps (half the range ahead counts as past). */
WEFT_DEVICE_INLINE bool counterReached(uint32_t a, uint32_t b) { return a - b <= 0x7fffffffu; }

/* Polls between two looks at the abort flag. */
constexpr uint32_t kAbortCheckPolls = 10000;

/* True when the library's abort flag (device memory, may be NULL) is set; looked at only once
 * every kAbortCheckPolls calls, counted in *polls. */
WEFT_DEVICE_INLINE bool aborted(uint32_t* flag, uint32_t* polls) {
  if (++*polls < kAbortCheckPolls) return false;
  *polls = 0;
  return flag != nullptr &&
         cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*flag).load(
             cuda::memory_order_relaxed) != 0;
}

} // namespace weft_dev
#endif

#ifdef __cplusplus
namespace weft_dev {
/* x / y for x, y < 2^31 given rcp = floor(2^32 / y) (0 for y = 1), as the library stores it in
 * the *_rcp32 fields. */
WEFT_HOST_DEVICE_INLINE uint32_t divByRcp(uint32_t x, uint32_t y, uint32_t rcp) {
  uint32_t q = rcp == 0 ? x : (uint32_t)(((uint64_t)x * rcp) >> 32);
  if (x - q * y >= y) q++;
  return q;
}
} // namespace weft_dev
#endif

#endif
