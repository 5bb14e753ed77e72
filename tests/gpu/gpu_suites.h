/* The GPU suites other than the collective matrix; each is a gpu_body_fn (gpu_world.h).
 *
 * gpu_graph_body (gpu_graph.c): a few operations (AllReduces with sum, max, host and device
 * PreMulSum, in place and out of place, and an AllGather) run once uncaptured, then are
 * captured into one CUDA graph per rank (cudaStreamCaptureModeThreadLocal) and replayed 4
 * times with fresh inputs (and a fresh device scalar) written before each replay; every replay
 * is checked. Then one more uncaptured call on the same stream. arg: a gpu_graph_opts, or NULL
 * (cudaMalloc buffers, no windows); with window set (GPU_REG_WINDOW, GPU_REG_LOCAL), every
 * operation's buffers are registered as symmetric windows or with ncclCommRegister after they
 * are prepared and deregistered after the graphs are destroyed (a captured graph reads the
 * registration's mapping on every replay).
 *
 * gpu_mem_body (gpu_mem.c): ncclMemAlloc buffers as collective buffers (ncclMemFree succeeds
 * and rejects a cudaMalloc pointer); ncclCommRegister/Deregister on cudaMalloc and ncclMemAlloc
 * buffers around a collective that uses them; ncclCommWindowRegister/Deregister (symmetric, on
 * ncclMemAlloc buffers) around collectives in the window; bad handles (a pointer that is no
 * handle, a handle deregistered twice, a handle of another communicator) are rejected.
 *
 * gpu_netfail_body (gpu_netfail.c): a net plugin failure under running kernels surfaces
 * promptly. One large AllReduce per local rank through GdrSim, which fails the N-th isend or
 * receive test (WEFT_GDRSIM_FAIL_SEND/_RECV); per rank, each within WEFT_GPU_NETFAIL_S (20 s):
 * ncclCommGetAsyncError reports an error, ncclCommAbort returns, the stream completes. The
 * communicators end aborted, not destroyed (the harness's leak check still runs after).
 * gpu_netfail_precheck, before any rank starts: GPU_PASS; GPU_FAIL (printed) when no failure
 * is asked for or NCCL_NET is not GdrSim (the suite must not be able to pass without one);
 * GPU_SKIP (printed) in the fake-CUDA self-test build.
 *
 * All skip (77) when the data path, or the feature, answers "not available yet". */
#ifndef GPU_SUITES_H
#define GPU_SUITES_H

#include "gpu_run.h"
#include "gpu_world.h"

typedef struct {
  int window;       /* GPU_REG_* (gpu_run.h): --window, --register */
  gpu_mem_kind mem; /* the buffers' allocation */
} gpu_graph_opts;

int gpu_graph_body(gpu_world* w, void* arg);
int gpu_mem_body(gpu_world* w, void* arg);
int gpu_netfail_body(gpu_world* w, void* arg);
int gpu_netfail_precheck(void);

#endif
