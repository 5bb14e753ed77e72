/* weft-perf's command line: nccl-tests' flags (same letters, same long names, same meaning),
 * plus the collective (positional or -t NAME), the launcher (-np), the library (--lib) and the
 * extras of weft-perf (--all, --json, --baseline, --vs, --plot). Anything malformed is an error
 * with a one-line reason and exit code 2; nothing is silently defaulted. nccl-tests flags that
 * select features weft-perf lacks (registration, timestamps, …) are accepted only at their
 * default. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "chart.h"
#include "perf.h"

int perf_parse_size(const char* text, size_t* out) {
  if (!text || !*text) return -1;
  const char* p = text;
  if (*p == '-' || *p == '+') return -1;
  char* end;
  errno = 0;
  double v = strtod(p, &end);
  if (end == p || errno || !(v >= 0) || isinf(v)) return -1;
  double unit = 1;
  switch (*end) {
    case 'k':
    case 'K':
      unit = 1024.0;
      end++;
      break;
    case 'm':
    case 'M':
      unit = 1024.0 * 1024;
      end++;
      break;
    case 'g':
    case 'G':
      unit = 1024.0 * 1024 * 1024;
      end++;
      break;
    case 't':
    case 'T':
      unit = 1024.0 * 1024 * 1024 * 1024;
      end++;
      break;
    default: break;
  }
  if (unit > 1 && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'b' || end[1] == 'B'))
    end += 2;
  else if (*end == 'b' || *end == 'B')
    end++;
  if (*end) return -1;
  double bytes = v * unit;
  if (bytes != floor(bytes) || bytes > 9.0e18) return -1; /* whole bytes, fits size_t */
  *out = (size_t)bytes;
  return 0;
}

static int parse_int(const char* text, long lo, long hi, long* out) {
  if (!text || !*text) return -1;
  char* end;
  errno = 0;
  long v = strtol(text, &end, 0);
  if (end == text || *end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int fail(char* err, size_t errlen, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return PERF_EXIT_USAGE;
}

enum opt_id {
  O_MINBYTES,
  O_MAXBYTES,
  O_STEPBYTES,
  O_STEPFACTOR,
  O_ITERS,
  O_WARMUP,
  O_AGG,
  O_CHECK,
  O_DATATYPE,
  O_OP,
  O_ROOT,
  O_AVERAGE,
  O_BLOCKING,
  O_THREADS,
  O_GPUS,
  O_NP,
  O_TIMEOUT,
  O_JSON,
  O_LIB,
  O_BASELINE,
  O_BASELINE_ONLY,
  O_ALL,
  O_BACKEND,
  O_SEED,
  O_MINBW,
  O_EXPLAIN,
  O_GRAPH_NODES,
  O_EXPLAIN_PNG,
  O_VS,
  O_VS_TURNS,
  O_VS_REP_US,
  O_CPU,
  O_PLOT,
  O_GRAPH,
  O_REGISTER,
  O_COLL,
  O_HELP,
  O_VERSION,
  O_DEFAULT_ONLY
};

struct opt_def {
  char letter;      /* 0: long only */
  const char* name; /* long name (nccl-tests' where it has one) */
  enum opt_id id;
  int takes_value;
  const char* only; /* O_DEFAULT_ONLY: the one value accepted */
};

static const struct opt_def opt_defs[] = {
    {'b', "minbytes", O_MINBYTES, 1, NULL},
    {'e', "maxbytes", O_MAXBYTES, 1, NULL},
    {'i', "stepbytes", O_STEPBYTES, 1, NULL},
    {'f', "stepfactor", O_STEPFACTOR, 1, NULL},
    {'n', "iters", O_ITERS, 1, NULL},
    {'w', "warmup_iters", O_WARMUP, 1, NULL},
    {'m', "agg_iters", O_AGG, 1, NULL},
    {'c', "check", O_CHECK, 1, NULL},
    {'d', "datatype", O_DATATYPE, 1, NULL},
    {'o', "op", O_OP, 1, NULL},
    {'r', "root", O_ROOT, 1, NULL},
    {'a', "average", O_AVERAGE, 1, NULL},
    {'z', "blocking", O_BLOCKING, 1, NULL},
    {'t', "nthreads", O_THREADS, 1, NULL},
    {'g', "ngpus", O_GPUS, 1, NULL},
    {0, "np", O_NP, 1, NULL},
    {'T', "timeout", O_TIMEOUT, 1, NULL},
    {'J', "output_file", O_JSON, 1, NULL},
    {0, "json", O_JSON, 1, NULL},
    {0, "lib", O_LIB, 1, NULL},
    {0, "baseline", O_BASELINE, 0, NULL},
    {0, "baseline-only", O_BASELINE_ONLY, 0, NULL},
    {0, "all", O_ALL, 0, NULL},
    {0, "backend", O_BACKEND, 1, NULL},
    {0, "seed", O_SEED, 1, NULL},
    {0, "min-bw", O_MINBW, 1, NULL},
    {0, "explain", O_EXPLAIN, 0, NULL},
    {0, "graph-nodes", O_GRAPH_NODES, 0, NULL},
    {0, "explain-png", O_EXPLAIN_PNG, 1, NULL},
    {0, "vs", O_VS, 1, NULL},
    {0, "vs-turns", O_VS_TURNS, 1, NULL},
    {0, "vs-rep-us", O_VS_REP_US, 1, NULL},
    {0, "cpu", O_CPU, 1, NULL},
    {0, "plot", O_PLOT, 1, NULL},
    {'G', "cudagraph", O_GRAPH, 1, NULL},
    {0, "coll", O_COLL, 1, NULL},
    {'h', "help", O_HELP, 0, NULL},
    {0, "version", O_VERSION, 0, NULL},
    /* nccl-tests features weft-perf does not offer: accepted at their default only. */
    {'N', "run_cycles", O_DEFAULT_ONLY, 1, "1"},
    {'p', "parallel_init", O_DEFAULT_ONLY, 1, "0"},
    {'y', "stream_null", O_DEFAULT_ONLY, 1, "0"},
    {'C', "report_cputime", O_DEFAULT_ONLY, 1, "0"},
    {'S', "report_timestamps", O_DEFAULT_ONLY, 1, "0"},
    {'R', "local_register", O_REGISTER, 1, NULL},
    {'D', "device_implementation", O_DEFAULT_ONLY, 1, "0"},
    {'M', "memory", O_DEFAULT_ONLY, 1, "0"},
    {'u', "unalign", O_DEFAULT_ONLY, 1, "0"},
    {'I', "per_iter_timing", O_DEFAULT_ONLY, 1, "0"},
    {'K', "per_iter_skip", O_DEFAULT_ONLY, 1, "0"},
};
#define N_OPT_DEFS (sizeof opt_defs / sizeof opt_defs[0])

void perf_usage(FILE* out, const char* prog) {
  fprintf(
      out,
      "usage: %s [COLLECTIVE...] [options]\n"
      "  COLLECTIVE: all_reduce all_gather reduce_scatter broadcast reduce sendrecv alltoall\n"
      "              (positional, or -t NAME, or --all for every one in turn; default all_reduce)\n"
      "              --all also changes the defaults: -b 8 -e 64M -f 2 -n 5 -w 1 (what is\n"
      "              given still wins)\n"
      "  -b, --minbytes SIZE     smallest size (K/M/G suffixes, powers of 1024; default 32M)\n"
      "  -e, --maxbytes SIZE     largest size (default 32M)\n"
      "  -f, --stepfactor N      multiply the size by N each step (default 1: use -i)\n"
      "  -i, --stepbytes SIZE    add SIZE each step when -f is 1 (default 1M)\n"
      "  -n, --iters N           timed iterations per size (default 20)\n"
      "  -w, --warmup_iters N    untimed iterations per size before timing (default 1;\n"
      "                          --vs: in every turn, at least 5 and 200 us)\n"
      "  -m, --agg_iters N       operations grouped into one iteration (default 1)\n"
      "  -c, --check N           verify results N times per size against an independent\n"
      "                          reference (0 = off; default 1)\n"
      "  -d, --datatype TYPE     int8 uint8 int32 uint32 int64 uint64 half float double\n"
      "                          bfloat16 f8e4m3 f8e5m2, or all (default float)\n"
      "  -o, --op OP             sum prod max min avg mulsum, or all (default sum)\n"
      "  -r, --root R            root rank of broadcast/reduce, or all (default 0)\n"
      "  -a, --average 0|1|2|3   time reported across ranks: rank 0, mean, min, max (default 1)\n"
      "  -z, --blocking 0|1      1: wait and barrier after every iteration (default 0)\n"
      "  -G, --cudagraph N       capture the timed iterations in a CUDA graph and launch it N\n"
      "                          times (device buffers only; default 0: no graph)\n"
      "      --graph-nodes       with -G: print on stderr what each captured graph holds, per\n"
      "                          rank (its nodes by type: kernel, memcpy, host, ...)\n"
      "  -R, --local_register 0|1|2  register the buffers with every communicator:\n"
      "                          1 ncclCommRegister, 2 ncclCommWindowRegister (device buffers\n"
      "                          then come from ncclMemAlloc, as in nccl-tests; default 0)\n"
      "  -g, --ngpus N           ranks (GPUs) per process (default 1)\n"
      "  -t, --nthreads 1        threads per process (only 1; -t NAME selects a collective)\n"
      "  -np N                   fork N local rank processes (host mode default: 2)\n"
      "  -T, --timeout S         kill the run after S seconds (default: none)\n"
      "  -J, --json FILE         also write every row to FILE as JSON\n"
      "      --lib PATH          NCCL-ABI library to load (default: ../lib/libnccl.so.2\n"
      "                          next to this executable, i.e. weft)\n"
      "      --vs PATH           also measure the library at PATH (e.g. stock NCCL), each in\n"
      "                          its own processes, taking turns size by size; prints both\n"
      "                          tables and a comparison (A = --lib or weft, B = PATH);\n"
      "                          each size's turn starts with its own warm-up\n"
      "      --vs-turns K        with --vs: turns per size and library, in rounds A B, B A,\n"
      "                          ...; the row is their median (even, 2 to %d; default %d)\n"
      "      --vs-rep-us US      with --vs: each turn repeats its timed calls (or -G's\n"
      "                          replays) until US microseconds are timed, at most %d\n"
      "                          times (%d with several processes), and keeps the\n"
      "                          median (default %d; 0: once)\n"
      "      --cpu LIST          pin local rank process k, its threads too, to the k-th CPU\n"
      "                          of LIST (taskset -c's cpulist, e.g. 8 or 8-11; modulo its\n"
      "                          length); under --vs both libraries' process k share one\n"
      "      --plot FILE         PNG of busbw and time per call against size (one line per\n"
      "                          library and collective; drawn with cairo)\n"
      "      --backend B         auto, host or cuda: where buffers live (default auto)\n"
      "      --baseline          measure memcpy and TCP loopback bandwidth too\n"
      "      --baseline-only     measure only the baselines\n"
      "      --seed N            seed of the checked data (default fixed)\n"
      "      --min-bw GB/S       exit 1 when the average bus bandwidth is below 0.9x this\n"
      "      --explain           after each table, the library's decision per size (algorithm,\n"
      "                          protocol, channels, predicted time) next to the measured\n"
      "                          time, and a PNG plot of both (weft: weftCommTuneQuery)\n"
      "      --explain-png FILE  where the plot goes (implies --explain; default\n"
      "                          weft-perf-explain.png; none: no plot)\n"
      "  -h, --help              this text\n"
      "      --version           print weft-perf's version and exit\n"
      "Under mpirun (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE) or with WEFT_RANK and\n"
      "WEFT_NRANKS, each process is one rank; NCCL_COMM_ID=host:port must then be set.\n"
      "NCCL_NVLS_ENABLE=0 is set for the run unless the environment sets it (NVLink multicast\n"
      "stays off by default).\n",
      prog, PERF_VS_TURNS_MAX, PERF_VS_TURNS_DEFAULT, PERF_VS_REPS_MAX, PERF_VS_REPS_MAX_MP,
      PERF_VS_REP_US_DEFAULT);
}

static void set_defaults(struct perf_opts* o) {
  memset(o, 0, sizeof *o);
  o->minbytes = 32u << 20;
  o->maxbytes = 32u << 20;
  o->stepbytes = 1u << 20;
  o->stepfactor = 1;
  o->iters = 20;
  o->warmup = 1;
  o->vs_turns = PERF_VS_TURNS_DEFAULT;
  o->vs_rep_us = PERF_VS_REP_US_DEFAULT;
  o->agg_iters = 1;
  o->check = 1;
  o->average = 1;
  o->nthreads = 1;
  o->ngpus = 1;
  o->root = 0;
  o->type = perf_type_default();
  o->op = perf_op_find("sum");
  o->seed = 0x5eedf00dULL;
  o->explain_png = "weft-perf-explain.png";
}

static int add_coll(struct perf_opts* o, const char* name, char* err, size_t errlen) {
  int c = perf_coll_find(name);
  if (c < 0)
    return fail(err, errlen,
                "unknown collective '%s' (known: all_reduce all_gather reduce_scatter "
                "broadcast reduce sendrecv alltoall)",
                name);
  if (o->ncolls >= PERF_MAX_COLLS) return fail(err, errlen, "too many collectives named");
  o->colls[o->ncolls++] = c;
  return 0;
}

static const struct opt_def* find_long(const char* name, size_t len) {
  for (size_t i = 0; i < N_OPT_DEFS; i++)
    if (strlen(opt_defs[i].name) == len && !strncmp(opt_defs[i].name, name, len))
      return &opt_defs[i];
  return NULL;
}

static const struct opt_def* find_short(char c) {
  for (size_t i = 0; i < N_OPT_DEFS; i++)
    if (opt_defs[i].letter == c) return &opt_defs[i];
  return NULL;
}

/* Applies one option. `flag` is how the user spelled it, for messages. */
static int apply(struct perf_opts* o, const struct opt_def* d, const char* flag, const char* v,
                 char* err, size_t errlen) {
  long n;
  size_t sz;
  switch (d->id) {
    case O_MINBYTES:
    case O_MAXBYTES:
    case O_STEPBYTES:
      if (perf_parse_size(v, &sz))
        return fail(err, errlen, "%s '%s': not a size (bytes, optionally with K/M/G)", flag, v);
      if (d->id == O_MINBYTES)
        o->minbytes = sz, o->given |= PERF_GIVEN_MINBYTES;
      else if (d->id == O_MAXBYTES)
        o->maxbytes = sz, o->given |= PERF_GIVEN_MAXBYTES;
      else
        o->stepbytes = sz, o->given |= PERF_GIVEN_STEP;
      return 0;
    case O_STEPFACTOR:
      if (parse_int(v, 1, 1L << 30, &n))
        return fail(err, errlen, "%s '%s': the step factor must be an integer >= 1", flag, v);
      o->stepfactor = (size_t)n;
      o->given |= PERF_GIVEN_STEP;
      return 0;
    case O_ITERS:
    case O_WARMUP:
    case O_AGG:
    case O_CHECK:
      if (parse_int(v, d->id == O_ITERS || d->id == O_AGG ? 1 : 0, 1L << 30, &n))
        return fail(err, errlen, "%s '%s': expected an integer >= %d", flag, v,
                    d->id == O_ITERS || d->id == O_AGG ? 1 : 0);
      if (d->id == O_ITERS)
        o->iters = (int)n, o->given |= PERF_GIVEN_ITERS;
      else if (d->id == O_WARMUP)
        o->warmup = (int)n, o->given |= PERF_GIVEN_WARMUP;
      else if (d->id == O_AGG)
        o->agg_iters = (int)n;
      else
        o->check = (int)n, o->given |= PERF_GIVEN_CHECK;
      return 0;
    case O_DATATYPE:
      if (!strcasecmp(v, "all")) {
        o->type = -1;
      } else if ((o->type = perf_type_find(v)) < 0) {
        return fail(err, errlen,
                    "%s '%s': unknown type (int8 uint8 int32 uint32 int64 uint64 half float "
                    "double bfloat16 f8e4m3 f8e5m2 all)",
                    flag, v);
      }
      return 0;
    case O_OP:
      if (!strcasecmp(v, "all")) {
        o->op = -1;
      } else if ((o->op = perf_op_find(v)) < 0) {
        return fail(err, errlen, "%s '%s': unknown op (sum prod max min avg mulsum all)", flag, v);
      }
      return 0;
    case O_ROOT:
      if (!strcasecmp(v, "all"))
        o->root = -1;
      else if (parse_int(v, -1, 1 << 30, &n))
        return fail(err, errlen, "%s '%s': expected a rank or 'all'", flag, v);
      else
        o->root = (int)n;
      return 0;
    case O_AVERAGE:
      if (parse_int(v, 0, 3, &n))
        return fail(err, errlen, "%s '%s': expected 0 (rank 0), 1 (mean), 2 (min) or 3 (max)", flag,
                    v);
      o->average = (int)n;
      return 0;
    case O_BLOCKING:
      if (parse_int(v, 0, 1, &n)) return fail(err, errlen, "%s '%s': expected 0 or 1", flag, v);
      o->blocking = (int)n;
      return 0;
    case O_THREADS:
      if (parse_int(v, -(1L << 30), 1L << 30, &n) == 0) {
        if (n != 1)
          return fail(err, errlen,
                      "%s %s: weft-perf runs one thread per process; use -np N for more ranks",
                      flag, v);
        o->nthreads = 1;
        return 0;
      }
      return add_coll(o, v, err, errlen);
    case O_COLL: return add_coll(o, v, err, errlen);
    case O_GPUS:
      if (parse_int(v, 1, 1024, &n)) return fail(err, errlen, "%s '%s': expected 1..1024", flag, v);
      o->ngpus = (int)n;
      o->given |= PERF_GIVEN_GPUS;
      return 0;
    case O_NP:
      if (parse_int(v, 1, 4096, &n))
        return fail(err, errlen, "%s '%s': expected a process count 1..4096", flag, v);
      o->np = (int)n;
      o->given |= PERF_GIVEN_NP;
      return 0;
    case O_TIMEOUT:
      if (parse_int(v, 0, 1L << 24, &n))
        return fail(err, errlen, "%s '%s': expected seconds >= 0", flag, v);
      o->timeout_s = (int)n;
      return 0;
    case O_JSON:
      if (!*v) return fail(err, errlen, "%s: empty file name", flag);
      o->json = v;
      return 0;
    case O_LIB:
      if (!*v) return fail(err, errlen, "%s: empty path", flag);
      o->lib = v;
      return 0;
    case O_BASELINE: o->baseline = 1; return 0;
    case O_BASELINE_ONLY: o->baseline = o->baseline_only = 1; return 0;
    case O_ALL: o->all = 1; return 0;
    case O_BACKEND:
      if (!strcmp(v, "auto"))
        o->backend = PERF_BACKEND_AUTO;
      else if (!strcmp(v, "host"))
        o->backend = PERF_BACKEND_HOST;
      else if (!strcmp(v, "cuda"))
        o->backend = PERF_BACKEND_CUDA;
      else
        return fail(err, errlen, "%s '%s': expected auto, host or cuda", flag, v);
      return 0;
    case O_SEED: {
      char* end;
      errno = 0;
      unsigned long long s = strtoull(v, &end, 0);
      if (!*v || *end || errno) return fail(err, errlen, "%s '%s': expected an integer", flag, v);
      o->seed = s;
      return 0;
    }
    case O_MINBW: {
      char* end;
      double bw = strtod(v, &end);
      if (!*v || *end || !(bw >= 0))
        return fail(err, errlen, "%s '%s': expected GB/s >= 0", flag, v);
      o->min_bw = bw;
      o->min_bw_set = 1;
      return 0;
    }
    case O_EXPLAIN: o->explain = 1; return 0;
    case O_GRAPH_NODES: o->graph_nodes = 1; return 0;
    case O_EXPLAIN_PNG:
      if (!*v) return fail(err, errlen, "%s: empty file name", flag);
      o->explain = 1;
      o->explain_png = strcmp(v, "none") == 0 ? NULL : v;
      o->explain_png_given = 1;
      return 0;
    case O_VS:
      if (!*v) return fail(err, errlen, "%s: empty path", flag);
      o->vs = v;
      return 0;
    case O_VS_TURNS:
      if (parse_int(v, 2, PERF_VS_TURNS_MAX, &n) || n % 2)
        return fail(err, errlen, "%s '%s': expected an even number of turns, 2 to %d", flag, v,
                    PERF_VS_TURNS_MAX);
      o->vs_turns = (int)n;
      return 0;
    case O_VS_REP_US:
      if (parse_int(v, 0, PERF_VS_REP_US_MAX, &n))
        return fail(err, errlen, "%s '%s': expected microseconds, 0 to %d", flag, v,
                    PERF_VS_REP_US_MAX);
      o->vs_rep_us = (int)n;
      o->given |= PERF_GIVEN_VS_REP;
      return 0;
    case O_CPU: {
      char why[160];
      if (perf_parse_cpus(v, o->cpus, PERF_MAX_CPUS, &o->ncpus, why, sizeof why))
        return fail(err, errlen, "%s %s", flag, why);
      return 0;
    }
    case O_PLOT:
      if (!*v) return fail(err, errlen, "%s: empty file name", flag);
      o->plot = v;
      return 0;
    case O_GRAPH:
      if (parse_int(v, 0, 1L << 20, &n))
        return fail(err, errlen, "%s '%s': expected a number of graph launches >= 0", flag, v);
      o->graph_launches = (int)n;
      return 0;
    case O_REGISTER:
      if (parse_int(v, 0, 2, &n))
        return fail(err, errlen, "%s '%s': expected 0 (none), 1 (ncclCommRegister) or 2 "
                    "(ncclCommWindowRegister)", flag, v);
      o->reg = (int)n;
      return 0;
    case O_DEFAULT_ONLY:
      if (parse_int(v, -(1L << 30), 1L << 30, &n) || n != strtol(d->only, NULL, 10))
        return fail(err, errlen, "%s %s: not supported by weft-perf (only %s is accepted)", flag, v,
                    d->only);
      return 0;
    case O_HELP: return 1;
    case O_VERSION: return 3;
  }
  return fail(err, errlen, "%s: internal error", flag);
}

int perf_parse_args(int argc, char** argv, struct perf_opts* o, char* err, size_t errlen) {
  set_defaults(o);
  if (errlen) err[0] = '\0';
  int positional_only = 0;
  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    const struct opt_def* d = NULL;
    const char* value = NULL;
    char flag[64];
    if (positional_only || arg[0] != '-' || arg[1] == '\0') {
      int rc = add_coll(o, arg, err, errlen);
      if (rc) return rc;
      continue;
    }
    if (!strcmp(arg, "--")) {
      positional_only = 1;
      continue;
    }
    if (arg[1] == '-' || !strncmp(arg, "-np", 3)) { /* --name[=value]; -np[=]N too */
      const char* name = arg + (arg[1] == '-' ? 2 : 1);
      const char* eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      if (!eq && !strncmp(arg, "-np", 3) && arg[3]) { /* -np4 */
        len = 2;
        value = arg + 3;
      }
      d = find_long(name, len);
      snprintf(flag, sizeof flag, "%.*s%.*s", arg[1] == '-' ? 2 : 1, arg, (int)len, name);
      if (!d) return fail(err, errlen, "unknown option '%s' (see --help)", flag);
      if (eq) value = eq + 1;
    } else {
      d = find_short(arg[1]);
      snprintf(flag, sizeof flag, "-%c", arg[1]);
      if (!d) return fail(err, errlen, "unknown option '%s' (see --help)", flag);
      if (arg[2]) value = arg + 2;
    }
    if (d->takes_value && !value) {
      if (i + 1 >= argc) return fail(err, errlen, "%s needs a value", flag);
      value = argv[++i];
    } else if (!d->takes_value && value) {
      return fail(err, errlen, "%s takes no value", flag);
    }
    int rc = apply(o, d, flag, value ? value : "", err, errlen);
    if (rc) return rc;
  }
  if (o->all && o->ncolls)
    return fail(err, errlen, "--all runs every collective; name none with it");
  if ((o->given & PERF_GIVEN_MINBYTES) && (o->given & PERF_GIVEN_MAXBYTES) &&
      o->minbytes > o->maxbytes)
    return fail(err, errlen, "minbytes %zu is larger than maxbytes %zu", o->minbytes, o->maxbytes);
  if (o->stepfactor <= 1 && o->stepbytes == 0)
    return fail(err, errlen, "-i 0 with -f 1 would never reach maxbytes");
  if (!perf_charts_available()) {
    if (o->plot)
      return fail(err, errlen, "--plot: this weft-perf was built without cairo (Debian: "
                  "libcairo2-dev), which draws its charts; install it and rebuild");
    if (o->explain_png_given && o->explain_png)
      return fail(err, errlen, "--explain-png: this weft-perf was built without cairo (Debian: "
                  "libcairo2-dev), which draws its charts; install it and rebuild");
    o->explain_png = NULL; /* --explain alone: the table, no plot */
  }
  if (o->vs && o->explain)
    return fail(err, errlen, "--explain and --vs: ask for the decisions in a run of its own");
  if (o->vs && o->baseline_only)
    return fail(err, errlen, "--baseline-only measures no library; drop --vs");
  if (o->vs_turns != PERF_VS_TURNS_DEFAULT && !o->vs)
    return fail(err, errlen, "--vs-turns %d: turns are taken under --vs PATH only", o->vs_turns);
  if ((o->given & PERF_GIVEN_VS_REP) && !o->vs)
    return fail(err, errlen, "--vs-rep-us %d: turns are taken under --vs PATH only", o->vs_rep_us);
  if (o->graph_nodes && !o->graph_launches)
    return fail(err, errlen, "--graph-nodes describes -G's graphs: give -G N too");
  if (o->graph_launches && o->blocking)
    return fail(err, errlen, "-G %d with -z 1: a graph replays without waits; choose one",
                o->graph_launches);
  return 0;
}

void perf_opts_finish(struct perf_opts* o) {
  if (o->all) {
    /* A run that fits a CI box: 8 B … 64 MiB, every power of two, a few iterations. */
    if (!(o->given & PERF_GIVEN_MINBYTES)) o->minbytes = 8;
    if (!(o->given & PERF_GIVEN_MAXBYTES)) o->maxbytes = 64u << 20;
    if (!(o->given & PERF_GIVEN_STEP)) o->stepfactor = 2;
    if (!(o->given & PERF_GIVEN_ITERS)) o->iters = 5;
    if (!(o->given & PERF_GIVEN_WARMUP)) o->warmup = 1;
    o->ncolls = 0;
    for (int c = 0; c < PERF_NCOLLS; c++) o->colls[o->ncolls++] = c;
  } else if (o->ncolls == 0) {
    o->colls[o->ncolls++] = PERF_ALL_REDUCE;
  }
  if (o->minbytes > o->maxbytes && (o->given & PERF_GIVEN_MAXBYTES) &&
      !(o->given & PERF_GIVEN_MINBYTES))
    o->minbytes = o->maxbytes;
  if (o->minbytes > o->maxbytes && (o->given & PERF_GIVEN_MINBYTES) &&
      !(o->given & PERF_GIVEN_MAXBYTES))
    o->maxbytes = o->minbytes;
}

size_t perf_size_next(const struct perf_opts* o, size_t size) {
  size_t next;
  if (o->stepfactor > 1) {
    if (size == 0) return o->maxbytes >= 1 ? 1 : 0;
    if (size > o->maxbytes / o->stepfactor) return 0;
    next = size * o->stepfactor;
  } else {
    if (size > o->maxbytes - o->stepbytes) return 0;
    next = size + o->stepbytes;
  }
  return next <= o->maxbytes ? next : 0;
}
