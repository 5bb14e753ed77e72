/* The ranks of the device-API tests (devapi_kernels.cu, devapi_lsa.c): N ranks of one
 * communicator, every one on GPU 0, so that they are LSA peers of one another.
 *   --inproc N  this process drives them, made by grouped ncclCommInitRank (ncclCommInitAll
 *               refuses a device named twice, as NCCL's does);
 *   --procs N   N forked processes (test_fork_ranks), one rank each.
 * Unlike gpu_world.h's worlds, the test's body owns what it gets: it destroys the
 * communicators itself; no stream, watchdog or leak check is added. */
#ifndef GPU_ONE_GPU_H
#define GPU_ONE_GPU_H

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A test body: the communicators of this process's ranks, comms[0..nlocal), ranks first ..
 * first + nlocal - 1 of nranks. Returns 0 when it passed (it may exit on a failure). */
typedef int (*gpu_one_gpu_body)(ncclComm_t* comms, int nlocal, int first, int nranks,
                                void* arg);

/* argv: "--inproc N" or "--procs N", 1 <= N <= maxr: N, *procs set; else 0 after the usage
 * line on stderr (the caller exits 2). */
int gpu_one_gpu_args(int argc, char** argv, int maxr, int* procs);

/* GPU_SKIP after gpu_have_device's line when no GPU is usable; else body on the ranks, and its
 * result (--procs: test_fork_ranks', every rank's within timeout_s). */
int gpu_one_gpu_run(int nranks, int procs, gpu_one_gpu_body body, void* arg, int timeout_s);

#ifdef __cplusplus
}
#endif

#endif
