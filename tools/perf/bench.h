/* One rank process of weft-perf: what main decides before launching (struct perf_setup,
 * identical in every process) and the per-process state of a run (struct perf_proc). rank.c
 * sets a process up and tears it down; bench.c runs the timed loops and prints the table. */
#ifndef WEFT_PERF_BENCH_H
#define WEFT_PERF_BENCH_H

#include <stdint.h>

#include "backend.h"
#include "baseline.h"
#include "chan.h"
#include "explain.h"
#include "lib.h"
#include "perf.h"
#include "results.h"
#include "table.h"

struct perf_setup {
  const struct perf_opts* o;
  const struct perf_nccl* lib;
  const struct perf_backend* be;
  int nlocal;           /* ranks (communicators) per process: -g */
  int local_proc;       /* this process's index on its node (GPU choice); -1: its rank */
  int id_from_env;      /* every process builds the id from NCCL_COMM_ID */
  const char* launcher; /* how the processes were started, for the header */
  const struct perf_baseline* baseline; /* NULL when not measured */
  const char* lib_label;                /* "weft" or "nccl" (lib.c), for JSON rows and --vs */
  int nvls_set; /* weft-perf set NCCL_NVLS_ENABLE=0 itself (the user had not) */
  int vs_fd;    /* --vs: this library's socket to the coordinator (vs.c); else -1 */
  int vs_lib;   /* --vs: 0 for library A, 1 for B */
  int argc;
  char** argv;
};

/* The largest AllReduce row seen (float sum preferred), for the ratio lines. */
struct perf_ar_best {
  int have, is_float_sum;
  size_t size;
  const char* type;
  const char* op;
  double busbw;
};

struct perf_proc {
  const struct perf_setup* s;
  const struct perf_opts* o;
  const struct perf_nccl* lib;
  const struct perf_backend* be;
  struct perf_chan* ch;
  int proc, nprocs, nlocal, nranks;
  int is_root_proc;      /* prints the table */
  ncclComm_t* comms;     /* [nlocal] */
  cudaStream_t* streams; /* [nlocal] */
  int* devs;             /* [nlocal] */
  void** send;           /* [nlocal], bufbytes each */
  void** recv;
  size_t bufbytes;
  void* stage_send; /* host copies for checking when buffers are not host memory */
  void* stage_recv;
  ncclRedOp_t* ops; /* [nlocal]: the operator handle of the current test */
  void** graphs;    /* [nlocal]: -G's executable graphs while a half row is timed */
  void** regs;      /* [2 * nlocal]: -R's handles of send[i], recv[i] (NULL: none) */
  int mem_alloc;    /* -R on device buffers: they came from the library's ncclMemAlloc */
  struct perf_json* json;
  struct perf_ar_best ar;
  struct perf_explain explain; /* --explain rows (rank 0's process) */
  struct perf_results results; /* --plot rows (rank 0's process, without --vs) */
  int failed;                  /* a call failed: stop */
  int wrong_rows;              /* halves with #wrong > 0 over the whole run */
  int below_min_bw;
};

/* The rank process: perf_rank_main for perf_launch_fork, or called directly with
 * perf_chan_local() for one process, or ch = NULL under a launcher's environment (the side
 * channel then goes through the library). Returns the process's exit code. */
int perf_rank_run(int proc, int nprocs, struct perf_chan* ch, void* setup);

/* bench.c: runs one collective over every type/op/root asked for, printing its block. 0, or
 * -1 when a call failed (p->failed is set, the error printed). */
int perf_bench_coll(struct perf_proc* p, const struct perf_coll* coll);

/* rank.c: the run's description in JSON ("run": weft-perf's version, host, CPU, launcher, …;
 * "config", "baselines"), for rank 0's file and for the --vs coordinator's. */
void perf_json_describe_run(struct perf_json* j, const struct perf_setup* s, int nprocs, int nlocal,
                            const char* buffers);
/* The CPU's model name from /proc/cpuinfo ("" when unknown). */
void perf_cpu_model(char* buf, size_t len);

/* NCCL_NVLS_ENABLE as the run sees it, for the header: "# NCCL_NVLS_ENABLE=0 (…)". */
void perf_print_nvls(FILE* out, const struct perf_setup* s);

/* Prints "weft-perf: rank R: …" on stderr. */
void perf_rank_error(const struct perf_proc* p, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
