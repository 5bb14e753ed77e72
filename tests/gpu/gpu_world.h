/* The ranks a GPU test drives and the rules every GPU test lives by.
 *
 * A "world" is one communicator as this process sees it: nlocal of its nranks ranks, each with
 * its CUDA device, its ncclComm_t and a non-blocking stream. Two ways to get one:
 *   --procs N  N forked processes (forked before this program makes any CUDA call: a CUDA
 *              context does not survive fork), one rank each on GPU rank % ndev, the unique id
 *              passed through a pipe; nlocal = 1.
 *   --gpus N   this process drives N GPUs: ncclCommInitAll, or (init_group) ncclGroupStart +
 *              cudaSetDevice + ncclCommInitRank per GPU + ncclGroupEnd; nlocal = N, and every
 *              call that spans ranks goes inside ncclGroupStart/End.
 * Fewer visible GPUs than ranks, or no usable CUDA device at all: the program exits 77 with
 * one line saying so. With gpu_set_share(1) (--share) ranks share the visible GPUs instead
 * (rank % ndev; --gpus then initializes with grouped ncclCommInitRank, since ncclCommInitAll
 * takes each device once): weft allows several ranks of a communicator on one GPU, so a
 * one-GPU machine runs every algorithm on 2..8 ranks (for correctness only: kernels of
 * separate processes on one GPU are time-sliced). The device count is
 * asked in a forked child, so the parent never touches CUDA.
 *
 * Nothing may hang: every host call that can block runs under a watchdog (alarm(), default
 * 150 s, WEFT_GPU_WATCHDOG_S) that prints what it was waiting for and exits 1; every stream
 * wait polls cudaStreamQuery and ncclCommGetAsyncError with a bound (default 120 s,
 * WEFT_GPU_WAIT_S). In --procs mode the parent kills the other ranks a few seconds after one
 * fails, and children die with the parent (PR_SET_PDEATHSIG).
 *
 * Results of a suite, and exit codes: GPU_PASS 0, GPU_FAIL 1, GPU_SKIP 77 ("not available yet"
 * or too few GPUs; never a pass). */
#ifndef GPU_WORLD_H
#define GPU_WORLD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_PASS 0
#define GPU_FAIL 1
#define GPU_SKIP 77

#define GPU_MAX_LOCAL 8

typedef struct {
  int rank; /* in the communicator */
  int dev;  /* CUDA device */
  ncclComm_t comm;
  cudaStream_t stream;
} gpu_rank;

typedef struct {
  int nranks;
  int nlocal;
  int procs; /* 1: --procs mode (one rank per process) */
  gpu_rank loc[GPU_MAX_LOCAL];
  uint64_t seed;
} gpu_world;

/* A test body: runs on a ready world, returns GPU_PASS, GPU_FAIL or GPU_SKIP. In --procs mode
 * it runs once per rank (each in its own process). A body that aborts a communicator itself
 * sets loc[i].comm to NULL (teardown and gpu_die skip it; the leak check still runs); one that
 * destroys a stream sets loc[i].stream to NULL. */
typedef int (*gpu_body_fn)(gpu_world* w, void* arg);

/* Runs body on nprocs forked ranks (one GPU each). Returns the exit code: GPU_FAIL when any rank
 * failed or was killed, else GPU_SKIP when any rank skipped, else GPU_PASS. timeout_s bounds
 * the whole run (0: no bound beyond the watchdogs). */
int gpu_run_procs(int nprocs, gpu_body_fn body, void* arg, uint64_t seed, int timeout_s);

/* Runs body in this process on ngpus GPUs (devices 0..ngpus-1; with sharing, i % ndev). */
int gpu_run_gpus(int ngpus, int init_group, gpu_body_fn body, void* arg, uint64_t seed);

/* For a program that forks its ranks itself, or drives one GPU without a world: 1 when a CUDA
 * device is usable, else 0 after printing "SKIP: no usable GPU (why)" (the caller then exits
 * GPU_SKIP). Asked in a forked child, as the worlds ask, so this process stays free of CUDA and
 * may still fork ranks. */
int gpu_have_device(void);

/* Ranks may share GPUs (call before gpu_run_procs / gpu_run_gpus). */
void gpu_set_share(int on);

/* Watchdog: after arm, if disarm does not follow within the limit, prints
 * "watchdog: <what> ..." and exits 1. */
void gpu_watchdog_arm(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void gpu_watchdog_disarm(void);

/* Waits until every local stream is idle, polling ncclCommGetAsyncError of every local comm.
 * Returns 0, or 1 after printing what went wrong (a CUDA error, an async NCCL error, or the
 * bound passed). After 1 the world is not usable: call gpu_die. */
int gpu_wait(gpu_world* w, const char* what);

/* Aborts every local communicator and exits 1 (a hang or a broken communicator). */
void gpu_die(gpu_world* w) __attribute__((noreturn));

/* ncclGroupStart/End around calls for every local rank, only when nlocal > 1. */
ncclResult_t gpu_group_start(const gpu_world* w);
ncclResult_t gpu_group_end(const gpu_world* w);

/* Exits 1 with file:line and the CUDA error when call fails. */
#define CUDA_OK(call)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call,           \
              cudaGetErrorString(e_), (int)e_);                                           \
      exit(GPU_FAIL);                                                                     \
    }                                                                                     \
  } while (0)

/* Exits 1 with file:line and NCCL's error string when call does not return ncclSuccess. */
#define NCCL_OK(call)                                                                     \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call,           \
              ncclGetErrorString(r_), (int)r_);                                           \
      exit(GPU_FAIL);                                                                     \
    }                                                                                     \
  } while (0)

/* The command line and the environment that selects a configuration, for "rerun:" lines. */
void gpu_set_cmdline(int argc, char** argv);
void gpu_print_rerun(FILE* f, uint64_t seed, const char* case_name);
/* A line printed once the GPUs are known to be there (a skip prints only its own line). */
void gpu_set_banner(const char* line);
/* 0: rerun lines leave out WEFT_GPU_CASE (suites that do not select cases by name). */
void gpu_set_rerun_by_case(int on);
/* " K=V" for each of those variables that is set, into out. */
void gpu_format_env(char* out, size_t len);

/* Integer from the environment, or fallback when unset or empty. */
int gpu_env_int(const char* name, int fallback);
/* Seconds on the monotonic clock. */
double gpu_now_s(void);

#ifdef __cplusplus
}
#endif

#endif
