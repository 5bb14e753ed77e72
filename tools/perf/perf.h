/* weft-perf: what every part of the benchmark shares. The options as parsed from the command
 * line (cli.c), the data types and reduction operators it knows (dtype.c), and the collectives
 * with nccl-tests' byte counts and bandwidth definitions (colls.c). Everything here is pure
 * logic: no library, no processes, so tests/perf can link it and check it directly. */
#ifndef WEFT_PERF_H
#define WEFT_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nccl.h" /* types only: the tool never links libnccl, see lib.h */

/* Exit codes of weft-perf (and of every rank process). */
enum {
  PERF_EXIT_OK = 0,   /* ran, every checked value right */
  PERF_EXIT_FAIL = 1, /* a call failed, a rank died, or #wrong > 0 */
  PERF_EXIT_USAGE = 2 /* bad command line or setup (library not loadable, launcher env) */
};

/* --- data types and operators (dtype.c) ------------------------------------------------- */

enum perf_kind { PERF_KIND_INT, PERF_KIND_UINT, PERF_KIND_FLOAT };

struct perf_type {
  const char* name; /* nccl-tests' spelling: int8 … f8e5m2 */
  ncclDataType_t nccl;
  size_t size; /* bytes per element */
  enum perf_kind kind;
  int exp_bits;  /* floats: exponent field width */
  int mant_bits; /* floats: stored mantissa bits (precision is mant_bits + 1) */
  int ieee;      /* floats: all-ones exponent means inf/NaN (not so for e4m3) */
};

/* nccl-tests' order; -d all runs every one of them. */
extern const struct perf_type perf_types[];
extern const int perf_ntypes;
/* Index into perf_types of a name (nccl-tests' names and common aliases, any case), or -1. */
int perf_type_find(const char* name);
/* Index of ncclFloat in perf_types (the default). */
int perf_type_default(void);

enum perf_opkind {
  PERF_OP_SUM,
  PERF_OP_PROD,
  PERF_OP_MAX,
  PERF_OP_MIN,
  PERF_OP_AVG,
  PERF_OP_MULSUM
};
struct perf_op {
  const char* name; /* sum prod max min avg mulsum */
  enum perf_opkind kind;
  ncclRedOp_t nccl; /* built-in handle; mulsum is created per communicator */
};
extern const struct perf_op perf_ops[];
extern const int perf_nops;
int perf_op_find(const char* name);

/* Small floats (half, bfloat16, fp8): encode with round-to-nearest-even, decode exactly. */
uint32_t perf_float_encode(double v, int exp_bits, int mant_bits, int ieee);
double perf_float_decode(uint32_t bits, int exp_bits, int mant_bits, int ieee);
/* Unit roundoff of a float type: 2^-(mant_bits+1). */
double perf_type_eps(const struct perf_type* t);
/* Stores a value of the type's kind (floats from `f`, integers from the low bits of `u`) at
 * element i of buf, and loads one back. */
void perf_store_float(const struct perf_type* t, void* buf, size_t i, double f);
double perf_load_float(const struct perf_type* t, const void* buf, size_t i);
void perf_store_int(const struct perf_type* t, void* buf, size_t i, uint64_t u);
uint64_t perf_load_int(const struct perf_type* t, const void* buf, size_t i);

/* --- collectives (colls.c) --------------------------------------------------------------- */

enum perf_coll_id {
  PERF_ALL_REDUCE,
  PERF_ALL_GATHER,
  PERF_REDUCE_SCATTER,
  PERF_BROADCAST,
  PERF_REDUCE,
  PERF_SENDRECV,
  PERF_ALLTOALL,
  PERF_NCOLLS
};

/* Element counts of one benchmark size, as nccl-tests derives them from size/eltsize:
 * what each rank sends and receives, the count passed to the call, and where the in-place
 * variant puts the send and receive regions inside the receive buffer (times the rank). */
struct perf_counts {
  size_t sendcount, recvcount, paramcount;
  size_t send_inplace_off, recv_inplace_off;
};

struct perf_coll {
  enum perf_coll_id id;
  const char* name;  /* all_reduce */
  const char* title; /* all_reduce_perf, as nccl-tests names its programs */
  int has_op;        /* redop column: the op, else "none" */
  int op_label_only; /* sendrecv: loops over ops like nccl-tests but reduces nothing */
  int has_root;      /* root column: the root, else -1 */
  int check_inplace; /* #wrong reported for in-place (nccl-tests: not for sendrecv, alltoall) */
};
extern const struct perf_coll perf_colls[PERF_NCOLLS];
/* Collective by name: all_reduce, allreduce, AllReduce, all_reduce_perf … (case, '_' and '-'
 * and a trailing "perf" are ignored). -1 when unknown. */
int perf_coll_find(const char* name);

void perf_coll_counts(enum perf_coll_id id, size_t count, size_t eltsize, int nranks,
                      struct perf_counts* c);
/* nccl-tests' getBw: algbw = bytes(count)/sec/1e9, busbw = algbw * factor. */
double perf_coll_algbw_bytes(enum perf_coll_id id, size_t paramcount, size_t eltsize, int nranks);
double perf_coll_bus_factor(enum perf_coll_id id, int nranks);
void perf_coll_bw(enum perf_coll_id id, size_t paramcount, size_t eltsize, double sec, int nranks,
                  double* algbw, double* busbw);

/* --- options (cli.c) ----------------------------------------------------------------------- */

#define PERF_MAX_COLLS 32
#define PERF_MAX_CPUS 256

struct perf_opts {
  size_t minbytes, maxbytes, stepbytes, stepfactor;
  int iters, warmup, agg_iters, check;
  int average;   /* -a: 0 rank 0, 1 mean (default, as nccl-tests), 2 min, 3 max */
  int blocking;  /* -z: 1 = wait and barrier after every iteration */
  int nthreads;  /* -t N: only 1 (ranks are processes, see -np) */
  int ngpus;     /* -g: ranks per process (GPUs in device mode) */
  int np;        /* -np: local processes to fork; 0 = not given */
  int timeout_s; /* -T: whole-run watchdog, 0 = none */
  int root;      /* -r: a rank, or -1 = every rank */
  int type;      /* -d: index into perf_types, -1 = all */
  int op;        /* -o: index into perf_ops, -1 = all */
  int colls[PERF_MAX_COLLS];
  int ncolls;
  int all;           /* --all */
  int baseline;      /* --baseline */
  int baseline_only; /* --baseline-only */
  int backend;       /* --backend: 0 auto, 1 host, 2 cuda */
  const char* lib;   /* --lib */
  const char* json;  /* --json / -J */
  uint64_t seed;     /* --seed */
  int min_bw_set;
  double min_bw;      /* NCCL_TESTS_MIN_BW-like bar (--min-bw); failing it exits 1 */
  const char* vs;     /* --vs PATH: a second library, measured alternately with the first */
  int vs_turns;       /* --vs-turns K: turns per size and library under --vs (vs.h) */
  int vs_rep_us;      /* --vs-rep-us US: a turn repeats its timed pass until US us (vs.h) */
  int cpus[PERF_MAX_CPUS]; /* --cpu LIST: local process k runs on cpus[k % ncpus] (cpus.c) */
  int ncpus;               /* 0: no pinning */
  const char* plot;   /* --plot FILE.png: busbw and time against size */
  int graph_launches; /* -G N: capture the timed iterations in a CUDA graph, launch it N times */
  int graph_nodes;    /* --graph-nodes: print what each captured graph holds (stderr) */
  int reg;            /* -R: 0 none, 1 ncclCommRegister, 2 ncclCommWindowRegister (nccl-tests' -R;
                       * device buffers then come from ncclMemAlloc, as there) */
  int explain;        /* --explain: decision table after each block, PNG at the end */
  const char* explain_png; /* the plot's file; NULL: none */
  int explain_png_given;   /* --explain-png was given (else the default file) */
  unsigned given;          /* PERF_GIVEN_* bits: which defaults the user overrode */
};

/* --vs-turns: the turns each library takes per size, an even number so that each library has
 * as many rounds A B as B A (vs.h). */
enum { PERF_VS_TURNS_DEFAULT = 4, PERF_VS_TURNS_MAX = 16 };
/* --vs-rep-us: the timed passes of one half of a turn last this long in all, at least one pass
 * and at most PERF_VS_REPS_MAX (PERF_VS_REPS_MAX_MP with several processes, which meet in a
 * barrier before each pass); the half's time is the median pass (vs.h). */
enum {
  PERF_VS_REP_US_DEFAULT = 1000,
  PERF_VS_REP_US_MAX = 1000000,
  PERF_VS_REPS_MAX = 4096,
  PERF_VS_REPS_MAX_MP = 256
};
/* The most passes a half times in a run of nprocs processes. */
static inline int perf_vs_passes_max(int nprocs) {
  return nprocs > 1 ? PERF_VS_REPS_MAX_MP : PERF_VS_REPS_MAX;
}

enum {
  PERF_GIVEN_MINBYTES = 1u << 0,
  PERF_GIVEN_MAXBYTES = 1u << 1,
  PERF_GIVEN_STEP = 1u << 2,
  PERF_GIVEN_ITERS = 1u << 3,
  PERF_GIVEN_WARMUP = 1u << 4,
  PERF_GIVEN_NP = 1u << 5,
  PERF_GIVEN_GPUS = 1u << 6,
  PERF_GIVEN_CHECK = 1u << 7,
  PERF_GIVEN_VS_REP = 1u << 8
};

enum { PERF_BACKEND_AUTO = 0, PERF_BACKEND_HOST = 1, PERF_BACKEND_CUDA = 2 };

/* Parses a size: digits (optionally with a fraction) and an optional K/M/G/T suffix (powers
 * of 1024, any case, optionally followed by "B" or "iB"). 0 on success. */
int perf_parse_size(const char* text, size_t* out);

/* Parses argv into *o (defaults first). Returns 0 to run, 1 for --help, 3 for --version (the
 * caller prints them and exits 0), or PERF_EXIT_USAGE with a one-line reason in err. */
int perf_parse_args(int argc, char** argv, struct perf_opts* o, char* err, size_t errlen);
/* Applies the defaults that depend on the run: --all without sizes runs 8 B … 64 MiB. */
void perf_opts_finish(struct perf_opts* o);
void perf_usage(FILE* out, const char* prog);

/* --cpu (cpus.c). perf_parse_cpus reads a cpulist ("8", "8-11,16") into cpus[0..*n), each CPU
 * once; perf_cpus_allowed checks that this process may run on each; perf_pin_cpu pins the
 * calling process (its threads to come too) to one CPU; perf_current_cpus writes the CPUs it
 * may run on as a cpulist. Each returns 0, or -1 with a one-line reason in err. */
int perf_parse_cpus(const char* text, int* cpus, int max, int* n, char* err, size_t errlen);
int perf_cpus_allowed(const int* cpus, int n, char* err, size_t errlen);
int perf_pin_cpu(int cpu, char* err, size_t errlen);
int perf_current_cpus(char* buf, size_t len);

/* The benchmark sizes in order: first, next (0 when past maxbytes). */
size_t perf_size_next(const struct perf_opts* o, size_t size);

#endif
