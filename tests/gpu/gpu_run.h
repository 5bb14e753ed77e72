/* Running one case on every local rank of a world, through the public API only.
 *
 *   gpu_run_prepare  allocate device buffers (cudaMalloc, or ncclMemAlloc), guard bytes around
 *                    each, pointers 0..3 elements past a 64-byte boundary; create the PreMulSum
 *                    op (scalar on the host, or in device memory); then gpu_run_fill
 *   gpu_run_fill     (again with another seed: fresh inputs in the same buffers, as between
 *                    CUDA graph replays) guards and poisoned outputs by cudaMemsetAsync, this
 *                    rank's inputs and the device scalar by cudaMemcpyAsync, on the rank's
 *                    stream; a host PreMulSum scalar stays the one the op was created with
 *   gpu_run_issue    the API call on every local rank, inside ncclGroupStart/End when the world
 *                    has several; SendRecv and SendRecvAlltoAll are their own group per rank.
 *                    Returns at once: the caller waits (gpu_wait) before verifying
 *   gpu_run_verify   download, then check outputs against the reference (tests/coll/coll_ref.h:
 *                    every rank's inputs regenerated from the seed; integers exact, floats
 *                    within coll_tolerance), out-of-place inputs unchanged, buffers the API
 *                    must leave alone unchanged, guard bytes intact. Prints what differs and a
 *                    rerun line
 *   gpu_run_register_windows  (--window) each buffer every rank holds registered whole, guards
 *                    included, with ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC): the same
 *                    sizes in the same order on every rank, and since the 0..3-element offsets
 *                    derive from the case, each rank's sendbuff and recvbuff sit at the same
 *                    offset of its window on every rank (symmetric). Collective: with several
 *                    local ranks one thread registers for all of them inside ncclGroupStart/End
 *                    (weft maps the windows of every rank at the outermost End, concurrently, as
 *                    it runs grouped ncclCommInitRank); a buffer some rank lacks (a NULL
 *                    recvbuff off the root of Reduce/Gather, sendbuff off the root of Scatter) is
 *                    not registered on any rank
 *   gpu_run_register_local  (--register) each buffer every rank holds registered with
 *                    ncclCommRegister (local: no group), from a rank-dependent 0..48 bytes into
 *                    its guard zone on, so each buffer's offset in its registration differs by
 *                    rank (NCCL's registration promises no symmetry); gpu_run_register picks
 *                    by kind (GPU_REG_*)
 *   gpu_run_release  deregister the windows (grouped likewise) or buffers, after the wait (the
 *                    operations completed), destroy the op, free the buffers (ncclMemFree's
 *                    result checked)
 *
 * Layouts are tests/coll's: in-place AllReduce/Reduce/Broadcast use one buffer; in-place
 * AllGather passes sendbuff = recvbuff + rank*count; in-place ReduceScatter passes recvbuff =
 * sendbuff + rank*recvcount. Per case (from its key): a NULL recvbuff off the root (Reduce,
 * Gather), a NULL sendbuff off the root (Scatter), ncclBcast for in-place broadcasts, Recv
 * before Send inside groups. */
#ifndef GPU_RUN_H
#define GPU_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "coll_ref.h"
#include "gpu_case.h"
#include "gpu_world.h"

#define GPU_RUN_OK 0
#define GPU_RUN_NA 1    /* the library answered "not available yet" */
#define GPU_RUN_FATAL 2 /* any other error (printed) */

typedef enum { GPU_MEM_CUDA, GPU_MEM_NCCL } gpu_mem_kind;
/* How a case's buffers are registered: not, symmetric windows (--window), ncclCommRegister
 * (--register). */
enum { GPU_REG_NONE = 0, GPU_REG_WINDOW = 1, GPU_REG_LOCAL = 2 };

typedef struct {
  unsigned char *raw_a, *raw_b; /* device allocations, guard bytes included (NULL: none) */
  size_t raw_a_len, raw_b_len;
  unsigned char *a, *b;         /* usable regions */
  void* sendbuff;
  void* recvbuff;
  size_t nsend;                 /* elements of this rank's input at sendbuff */
  unsigned char* host_in;       /* staging of the input */
  unsigned char *host_a, *host_b; /* downloads of raw_a, raw_b */
  ncclRedOp_t op;
  int op_made;
  void* dscalar;                /* device PreMulSum scalar */
  uint64_t scalar_host;         /* its bytes, staged */
  ncclWindow_t win[2];          /* windows of raw_a, raw_b (NULL: not registered) */
  void* reg[2];                 /* ncclCommRegister handles of raw_a, raw_b (NULL: none) */
} gpu_run_rank;

typedef struct {
  gpu_case c;
  char name[GPU_CASE_STR];
  uint64_t seed; /* of the current fill */
  int nranks, nlocal;
  size_t count, esz, la, lb, off_a, off_b;
  int variant;
  gpu_mem_kind mem;
  int windows;    /* gpu_run_register_windows ran: gpu_run_release deregisters */
  int registered; /* gpu_run_register_local ran: likewise */
  coll_gen gen;
  gpu_run_rank r[GPU_MAX_LOCAL];
} gpu_run;

int gpu_run_prepare(gpu_run* run, gpu_world* w, const gpu_case* c, uint64_t seed,
                    gpu_mem_kind mem);
void gpu_run_fill(gpu_run* run, gpu_world* w, uint64_t seed);
int gpu_run_issue(gpu_run* run, gpu_world* w);
/* Number of problems found on the local ranks (0: passed). */
size_t gpu_run_verify(gpu_run* run, gpu_world* w);
/* After gpu_run_prepare (GPU_RUN_OK): GPU_RUN_OK, GPU_RUN_NA or GPU_RUN_FATAL (printed). */
int gpu_run_register_windows(gpu_run* run, gpu_world* w);
/* Number of problems (a failed ncclCommWindowDeregister). gpu_run_release calls it. */
size_t gpu_run_deregister_windows(gpu_run* run, gpu_world* w);
int gpu_run_register_local(gpu_run* run, gpu_world* w);
size_t gpu_run_deregister_local(gpu_run* run, gpu_world* w);
/* kind GPU_REG_*: the one above that registers so (GPU_REG_NONE: nothing, GPU_RUN_OK). */
int gpu_run_register(gpu_run* run, gpu_world* w, int kind);
/* Number of problems (a failed deregistration, ncclRedOpDestroy or ncclMemFree). */
size_t gpu_run_release(gpu_run* run, gpu_world* w);

/* prepare, issue, wait, verify, release, under the watchdog: GPU_PASS, GPU_FAIL or GPU_SKIP
 * (not available yet). A hang or a broken communicator ends the process (gpu_die). */
int gpu_run_case(gpu_world* w, const gpu_case* c, uint64_t seed, gpu_mem_kind mem);
/* The same with registered buffers (reg: GPU_REG_*): prepare, register, issue, wait, verify,
 * deregister, release. */
int gpu_run_case_win(gpu_world* w, const gpu_case* c, uint64_t seed, gpu_mem_kind mem,
                     int reg);

/* A 7-element float AllReduce: GPU_SKIP (printed by rank 0) while weft says the device data
 * path is "not available yet"; every suite starts with it. */
int gpu_run_gate(gpu_world* w);
/* The same AllReduce in registered buffers of mem (reg: GPU_REG_WINDOW or GPU_REG_LOCAL):
 * GPU_SKIP (printed by rank 0) while ncclMemAlloc or the registration answer "not available
 * yet". */
int gpu_run_window_gate(gpu_world* w, gpu_mem_kind mem, int reg);

#endif
