/* Memory-model helpers of the kernels: loads and stores with the scope a FIFO needs, and the
 * bounded wait every spin goes through (abort flag, WEFT_TIMEOUT_MS on the GPU's global
 * timer). A peer GPU and the host are outside this GPU's scope, so the counters that cross
 * them are read with acquire and written with release at system scope. */
#ifndef WEFT_DEVICE_DEV_SYNC_CUH
#define WEFT_DEVICE_DEV_SYNC_CUH

#include <stdint.h>

#include "device/device.h"

static __device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
static __device__ __forceinline__ void st_volatile_u64(void* p, uint64_t v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ uint4 ld_volatile_16(const void* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
static __device__ __forceinline__ void st_volatile_16(void* p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
static __device__ __forceinline__ void ld_volatile_2u64(const void* p, uint64_t* a, uint64_t* b) {
  asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}
static __device__ __forceinline__ void st_volatile_2u64(void* p, uint64_t a, uint64_t b) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
static __device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Why a wait gave up; the first reason is kept in the host-mapped error word. */
enum { WAIT_OK = 0, WAIT_TIMEOUT = 1, WAIT_ABORT = 2 };

/* Whether a wait that started at `start` must give up (abort word set, or WEFT_TIMEOUT_MS
 * passed); the reason is recorded in the error word. The abort word is host memory: callers
 * ask every 1024 misses, never on the first (every warp asking at once queues on the bus). */
static __device__ __forceinline__ int wait_give_up(uint64_t start, const weft_dev_comm& c) {
  int why = *c.abort_flag                                   ? WAIT_ABORT
            : global_timer_ns() - start > c.timeout_ns ? WAIT_TIMEOUT
                                                            : WAIT_OK;
  /* A plain store: atomics on host-mapped memory are not available on every system. */
  if (why != WAIT_OK && *c.error == 0) *c.error = (uint32_t)why;
  return why;
}

/* Spin until *p >= target. Returns WAIT_OK, or the reason it stopped (then recorded). */
static __device__ __noinline__ int wait_counter(const uint64_t* p, uint64_t target,
                                                const weft_dev_comm& c, uint64_t* seen) {
  uint64_t start = 0;
  for (uint32_t spins = 0;; spins++) {
    uint64_t v = ld_acquire_sys(p);
    if (v >= target) {
      *seen = v;
      return WAIT_OK;
    }
    if (spins == 0) start = global_timer_ns();
    if ((spins & 1023) == 1023) {
      int why = wait_give_up(start, c);
      if (why != WAIT_OK) return why;
    }
  }
}

#endif
