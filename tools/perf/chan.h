/* The side channel between rank processes: small exchanges the benchmark needs besides the
 * collectives it measures (the unique id, per-rank times, #wrong counts, the device report).
 *
 * Three implementations:
 *   hub   -np N: the launcher forks the ranks and stays behind as a hub; each rank talks to it
 *         over one socketpair (launch.c). Nothing of the library under test is involved.
 *   local one process: every operation is trivial.
 *   nccl  mpirun / NCCL_COMM_ID launches: there is no MPI to lean on, so exchanges go through
 *         the library itself after init: weftCommOobAllGather (weft's control plane) when the
 *         library has it and a process owns one rank, else a tiny ncclAllReduce/ncclAllGather
 *         on the communicators, after the timed loop so they never perturb a measurement.
 * Every call is collective over all processes, in the same order. 0 on success; on failure a
 * message was printed to stderr. */
#ifndef WEFT_PERF_CHAN_H
#define WEFT_PERF_CHAN_H

#include <stddef.h>

#include "backend.h"
#include "lib.h"

enum perf_chan_op { PERF_CHAN_SUM, PERF_CHAN_MIN, PERF_CHAN_MAX };

struct perf_chan {
  const char* name;
  /* bytes from process 0 to every process (the unique id). Hub and local only. */
  int (*bcast)(struct perf_chan* ch, void* buf, size_t bytes);
  /* n doubles combined element-wise across processes, result everywhere. */
  int (*allreduce)(struct perf_chan* ch, double* vals, int n, enum perf_chan_op op);
  /* `bytes` from each process, concatenated in process order into all (nprocs * bytes). */
  int (*allgather)(struct perf_chan* ch, const void* mine, size_t bytes, void* all);
  /* This process is done with exit code rc (the hub learns why a rank left). */
  void (*bye)(struct perf_chan* ch, int rc);
  void (*destroy)(struct perf_chan* ch);
  void* ctx;
};

int perf_chan_barrier(struct perf_chan* ch);

/* One process, no peers. */
struct perf_chan* perf_chan_local(void);

/* Over the communicators of this process (nlocal of them, ranks proc*nlocal + i, on devices
 * devs[i]). */
struct perf_chan* perf_chan_nccl(const struct perf_nccl* lib, const struct perf_backend* be,
                                 ncclComm_t* comms, cudaStream_t* streams, const int* devs,
                                 int nlocal, int nprocs);

/* --- launch.c ----------------------------------------------------------------------------- */

typedef int (*perf_rank_main)(int proc, int nprocs, struct perf_chan* ch, void* arg);

/* Whole-buffer I/O on a socket or pipe, retrying on EINTR. write: 0 or -1. read: 0 on
 * success, 1 on EOF before the first byte, -1 on an error or EOF mid-way. */
int perf_write_all(int fd, const void* buf, size_t len);
int perf_read_all(int fd, void* buf, size_t len);

/* Forks np rank processes running fn, then serves as their hub until all have left. Returns
 * the exit code of the run: 0 when every rank returned 0; else the first non-zero code, with
 * a line on stderr for each rank that died, was killed or hung past timeout_s (0 = none). */
int perf_launch_fork(int np, int timeout_s, perf_rank_main fn, void* arg);

/* Process placement from a launcher's environment: WEFT_RANK/WEFT_NRANKS,
 * OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS (first found). */
struct perf_world {
  int nprocs, proc, local_proc;
  const char* launcher; /* which variables said so */
};
/* 1 when a launcher's variables were found (filled *w), 0 when none, -1 when they are
 * malformed (reason in err). */
int perf_world_from_env(struct perf_world* w, char* err, size_t errlen);

#endif
