/* The GPU suites other than the collective matrix; each is a gpu_body_fn (gpu_world.h).
 *
 * gpu_graph_body (gpu_graph.c): a few operations (AllReduces with sum, max, host and device
 * PreMulSum, in place and out of place, and an AllGather) run once uncaptured, then are
 * captured into one CUDA graph per rank (cudaStreamCaptureModeThreadLocal) and replayed 4
 * times with fresh inputs (and a fresh device scalar) written before each replay; every replay
 * is checked. Then one more uncaptured call on the same stream.
 *
 * gpu_mem_body (gpu_mem.c): ncclMemAlloc buffers as collective buffers (ncclMemFree succeeds
 * and rejects a cudaMalloc pointer); ncclCommRegister/Deregister on cudaMalloc and ncclMemAlloc
 * buffers around a collective that uses them; ncclCommWindowRegister/Deregister (symmetric, on
 * ncclMemAlloc buffers) around collectives in the window; bad handles (a pointer that is no
 * handle, a handle deregistered twice, a handle of another communicator) are rejected.
 *
 * Both skip (77) when the data path, or the feature, answers "not available yet". */
#ifndef GPU_SUITES_H
#define GPU_SUITES_H

#include "gpu_world.h"

int gpu_graph_body(gpu_world* w, void* arg);
int gpu_mem_body(gpu_world* w, void* arg);

#endif
