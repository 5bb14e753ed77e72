/* The kernels of one-sided calls (rma/, device mode; device_exec_rma_put / _wait).
 *
 * weft_dev_rma_signal: one thread adds one to a peer's signal counter for this rank, after a
 * system-scope fence: the put's copy ran before it on the stream, and the release store makes
 * the data visible to whoever acquires the new count. Only this rank writes that counter, so a
 * load and a store suffice (no atomic across the peer link). Replayed in a graph, it adds one
 * each time.
 *
 * weft_dev_rma_wait: thread i waits (acquire, system scope; bounded by the communicator's abort
 * word and WEFT_TIMEOUT_MS, as every kernel wait) until the local counter of peer[i] reaches
 * what earlier waits consumed plus count[i], then records that as consumed. The consumed
 * counts live in device memory, so a captured wait replays as "count[i] more". A wait that
 * gives up records its peer (plus one) in `who`, the first only, for the host's report. */
#include <cuda_runtime.h>

#include "device/dev_sync.cuh"
#include "device/device_rma.h"

static __device__ __forceinline__ void st_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__global__ void rma_signal_kernel(uint64_t* slot) {
  __threadfence_system();
  st_release_sys(slot, ld_acquire_sys(slot) + 1);
}

__global__ void rma_wait_kernel(weft_dev_comm c, const uint64_t* sig, uint64_t* consumed,
                                weft_dev_rma_wait_args a, volatile uint32_t* who) {
  int i = threadIdx.x;
  if (i < a.n) {
    int p = a.peer[i];
    uint64_t target = consumed[p] + a.count[i], seen = 0;
    if (wait_counter(&sig[p], target, c, &seen) == WAIT_OK)
      consumed[p] = target;
    else if (*who == 0) /* a plain store, as the error word: racing givers-up keep one peer */
      *who = (uint32_t)p + 1;
  }
  __threadfence_system();
}

extern "C" int weft_dev_rma_signal(uint64_t* slot, void* stream) {
  rma_signal_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(slot);
  return (int)cudaGetLastError();
}

extern "C" int weft_dev_rma_wait(const weft_dev_comm* c, const uint64_t* sig, uint64_t* consumed,
                                 const weft_dev_rma_wait_args* a, uint32_t* who, void* stream) {
  rma_wait_kernel<<<1, WEFT_DEV_RMA_WAIT_MAX, 0, (cudaStream_t)stream>>>(*c, sig, consumed, *a,
                                                                         who);
  return (int)cudaGetLastError();
}
