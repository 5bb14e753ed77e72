/* weft-perf's pure logic, without any library: the command-line parser (sizes, suffixes, bad
 * flags), nccl-tests' element counts and bus-bandwidth factors, the small-float conversions,
 * the result checker against hand-made outputs (also split over threads), the table's number
 * format against a row of stock NCCL's nccl-tests output (copied below), and
 * --vs's pairing, ratios and comparison table, and --plot's picture. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "perf.h"
#include "results.h"
#include "table.h"

static int failures;

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
  } while (0)

static int parse(struct perf_opts* o, char* err, size_t len, int argc, const char** argv_in) {
  char* argv[32];
  argv[0] = (char*)"weft-perf";
  for (int i = 0; i < argc; i++) argv[i + 1] = (char*)argv_in[i];
  return perf_parse_args(argc + 1, argv, o, err, len);
}

#define PARSE(...)                                                                         \
  (parse(&o, err, sizeof err, (int)(sizeof((const char*[]){__VA_ARGS__}) / sizeof(char*)), \
         (const char*[]){__VA_ARGS__}))

static void sizes_parse_with_suffixes(void) {
  size_t v = 0;
  CHECK(perf_parse_size("8", &v) == 0 && v == 8);
  CHECK(perf_parse_size("0", &v) == 0 && v == 0);
  CHECK(perf_parse_size("1K", &v) == 0 && v == 1024);
  CHECK(perf_parse_size("1k", &v) == 0 && v == 1024);
  CHECK(perf_parse_size("64M", &v) == 0 && v == 64u << 20);
  CHECK(perf_parse_size("64MB", &v) == 0 && v == 64u << 20);
  CHECK(perf_parse_size("64MiB", &v) == 0 && v == 64u << 20);
  CHECK(perf_parse_size("8G", &v) == 0 && v == 8ULL << 30);
  CHECK(perf_parse_size("0.5K", &v) == 0 && v == 512);
  CHECK(perf_parse_size("1T", &v) == 0 && v == 1ULL << 40);
  CHECK(perf_parse_size("1048576", &v) == 0 && v == 1048576);
  CHECK(perf_parse_size("", &v) != 0);
  CHECK(perf_parse_size("K", &v) != 0);
  CHECK(perf_parse_size("-8", &v) != 0);
  CHECK(perf_parse_size("8X", &v) != 0);
  CHECK(perf_parse_size("8 M", &v) != 0);
  CHECK(perf_parse_size("1.3", &v) != 0); /* not a whole number of bytes */
  CHECK(perf_parse_size("1e30", &v) != 0);
  CHECK(perf_parse_size("nan", &v) != 0);
}

static void options_parse_like_nccl_tests(void) {
  struct perf_opts o;
  char err[256];
  CHECK(PARSE("-b", "8", "-e", "128M", "-f", "2", "-n", "5", "-w", "3", "-c", "0") == 0);
  CHECK(o.minbytes == 8 && o.maxbytes == 128u << 20 && o.stepfactor == 2);
  CHECK(o.iters == 5 && o.warmup == 3 && o.check == 0);
  CHECK(PARSE("-b8", "-e1K", "-i", "64") == 0 && o.minbytes == 8 && o.maxbytes == 1024);
  CHECK(o.stepbytes == 64 && o.stepfactor == 1);
  CHECK(PARSE("--minbytes", "1K", "--maxbytes=4K", "--stepfactor", "4") == 0);
  CHECK(o.minbytes == 1024 && o.maxbytes == 4096 && o.stepfactor == 4);
  CHECK(PARSE("-d", "all", "-o", "all", "-r", "all") == 0);
  CHECK(o.type == -1 && o.op == -1 && o.root == -1);
  CHECK(PARSE("-d", "bfloat16", "-o", "prod", "-r", "1") == 0);
  CHECK(perf_types[o.type].nccl == ncclBfloat16 && perf_ops[o.op].kind == PERF_OP_PROD);
  CHECK(o.root == 1);
  CHECK(PARSE("-d", "fp16") == 0 && perf_types[o.type].nccl == ncclFloat16);
  /* Collectives: positional, -t NAME, nccl-tests program names; -t 1 is nThreads. */
  CHECK(PARSE("all_gather", "-t", "reduce_scatter", "AllReduce", "alltoall_perf") == 0);
  CHECK(o.ncolls == 4 && o.colls[0] == PERF_ALL_GATHER && o.colls[1] == PERF_REDUCE_SCATTER);
  CHECK(o.colls[2] == PERF_ALL_REDUCE && o.colls[3] == PERF_ALLTOALL);
  CHECK(PARSE("-t", "1") == 0 && o.ncolls == 0 && o.nthreads == 1);
  CHECK(PARSE("-np", "4", "-g", "2", "-T", "30") == 0 && o.np == 4 && o.ngpus == 2);
  CHECK(o.timeout_s == 30);
  CHECK(PARSE("-np8") == 0 && o.np == 8);
  CHECK(PARSE("--np=3") == 0 && o.np == 3);
  CHECK(PARSE("--json", "x.json", "--lib", "/l.so", "--baseline") == 0);
  CHECK(!strcmp(o.json, "x.json") && !strcmp(o.lib, "/l.so") && o.baseline);
  CHECK(PARSE("-J", "y.json", "-a", "3", "-z", "1", "-m", "4") == 0);
  CHECK(!strcmp(o.json, "y.json") && o.average == 3 && o.blocking == 1 && o.agg_iters == 4);
  /* nccl-tests flags weft-perf lacks are fine at their defaults. */
  CHECK(PARSE("-G", "0", "-C", "0", "-p", "0", "-N", "1") == 0);
  CHECK(o.graph_launches == 0 && !o.vs && !o.plot);
  /* -G N (graph launches), --vs, --plot. */
  CHECK(PARSE("-G", "10") == 0 && o.graph_launches == 10);
  CHECK(PARSE("--cudagraph=3") == 0 && o.graph_launches == 3);
  CHECK(PARSE("--vs", "/usr/lib/libnccl.so.2", "--plot", "out.png", "--json", "o.json") == 0);
  CHECK(!strcmp(o.vs, "/usr/lib/libnccl.so.2") && !strcmp(o.plot, "out.png"));
  CHECK(o.vs_turns == PERF_VS_TURNS_DEFAULT && o.vs_turns % 2 == 0);
  CHECK(PARSE("--vs", "x.so", "--vs-turns", "6") == 0 && o.vs_turns == 6);
  CHECK(PARSE("--vs", "x.so", "--vs-turns=2") == 0 && o.vs_turns == 2);
  CHECK(o.vs_rep_us == PERF_VS_REP_US_DEFAULT && PERF_VS_REP_US_DEFAULT > 0);
  CHECK(PARSE("--vs", "x.so", "--vs-rep-us", "250") == 0 && o.vs_rep_us == 250);
  CHECK(PARSE("--vs", "x.so", "--vs-rep-us=0") == 0 && o.vs_rep_us == 0);
  CHECK(PARSE("-b", "8") == 0 && o.ncpus == 0);
  CHECK(PARSE("--cpu", "8") == 0 && o.ncpus == 1 && o.cpus[0] == 8);
  CHECK(PARSE("--cpu=3-5,0,10-10") == 0 && o.ncpus == 5 && o.cpus[0] == 3 && o.cpus[1] == 4 &&
        o.cpus[2] == 5 && o.cpus[3] == 0 && o.cpus[4] == 10);
  /* -R 0|1|2 (nccl-tests' local_register). */
  CHECK(PARSE("-R", "0") == 0 && o.reg == 0);
  CHECK(PARSE("-R", "1") == 0 && o.reg == 1);
  CHECK(PARSE("--local_register=2") == 0 && o.reg == 2);
  CHECK(PARSE("-R", "3") != 0 && PARSE("-R", "x") != 0);
}

static void defaults_match_nccl_tests_and_all_is_a_ci_run(void) {
  struct perf_opts o;
  char err[256];
  CHECK(PARSE("all_reduce") == 0);
  perf_opts_finish(&o);
  CHECK(o.minbytes == 32u << 20 && o.maxbytes == 32u << 20 && o.iters == 20);
  CHECK(o.warmup == 1 && o.check == 1 && o.average == 1 && o.root == 0);
  CHECK(perf_types[o.type].nccl == ncclFloat32 && perf_ops[o.op].kind == PERF_OP_SUM);
  CHECK(PARSE("") != 0); /* an empty name is not a collective */
  CHECK(PARSE("--all") == 0);
  perf_opts_finish(&o);
  CHECK(o.ncolls == PERF_NCOLLS && o.minbytes == 8 && o.maxbytes == 64u << 20);
  CHECK(o.stepfactor == 2);
  size_t n = 0;
  for (size_t s = o.minbytes; s; s = perf_size_next(&o, s)) n++;
  CHECK(n == 24); /* 8 B … 64 MiB */
  CHECK(PARSE("--all", "-e", "1M", "-n", "7") == 0);
  perf_opts_finish(&o);
  CHECK(o.maxbytes == 1u << 20 && o.iters == 7 && o.minbytes == 8);
  CHECK(PARSE("-b", "64M") == 0); /* maxbytes follows a larger minbytes */
  perf_opts_finish(&o);
  CHECK(o.maxbytes == 64u << 20);
  /* Linear steps: 1K, 1.5K, 2K. */
  CHECK(PARSE("-b", "1K", "-e", "2K", "-i", "512") == 0);
  n = 0;
  for (size_t s = o.minbytes; s; s = perf_size_next(&o, s)) n++;
  CHECK(n == 3);
}

static void bad_flags_are_usage_errors(void) {
  struct perf_opts o;
  char err[256];
  CHECK(PARSE("--bogus") == PERF_EXIT_USAGE && strstr(err, "--bogus"));
  CHECK(PARSE("-q") == PERF_EXIT_USAGE && strstr(err, "-q"));
  CHECK(PARSE("-b", "12Q") == PERF_EXIT_USAGE && strstr(err, "12Q"));
  CHECK(PARSE("-e") == PERF_EXIT_USAGE && strstr(err, "needs a value"));
  CHECK(PARSE("-n", "0") == PERF_EXIT_USAGE);
  CHECK(PARSE("-n", "ten") == PERF_EXIT_USAGE);
  CHECK(PARSE("-f", "0") == PERF_EXIT_USAGE);
  CHECK(PARSE("-d", "float128") == PERF_EXIT_USAGE && strstr(err, "float128"));
  CHECK(PARSE("-o", "xor") == PERF_EXIT_USAGE && strstr(err, "xor"));
  CHECK(PARSE("-r", "first") == PERF_EXIT_USAGE);
  CHECK(PARSE("-a", "4") == PERF_EXIT_USAGE);
  CHECK(PARSE("-t", "4") == PERF_EXIT_USAGE && strstr(err, "-np"));
  CHECK(PARSE("all_sum") == PERF_EXIT_USAGE && strstr(err, "all_sum"));
  CHECK(PARSE("-np", "0") == PERF_EXIT_USAGE);
  CHECK(PARSE("-C", "1") == PERF_EXIT_USAGE && strstr(err, "not supported"));
  CHECK(PARSE("-G", "-1") == PERF_EXIT_USAGE && strstr(err, "graph launches"));
  CHECK(PARSE("-G", "1", "-z", "1") == PERF_EXIT_USAGE && strstr(err, "-z 1"));
  CHECK(PARSE("--graph-nodes") == PERF_EXIT_USAGE && strstr(err, "give -G N too"));
  CHECK(PARSE("-G", "2", "--graph-nodes") == 0 && o.graph_nodes == 1);
  CHECK(PARSE("--vs") == PERF_EXIT_USAGE && strstr(err, "needs a value"));
  CHECK(PARSE("--vs", "") == PERF_EXIT_USAGE && strstr(err, "empty path"));
  CHECK(PARSE("--vs", "x.so", "--explain") == PERF_EXIT_USAGE && strstr(err, "--explain"));
  CHECK(PARSE("--vs", "x.so", "--vs-turns", "3") == PERF_EXIT_USAGE && strstr(err, "even"));
  CHECK(PARSE("--vs", "x.so", "--vs-turns", "0") == PERF_EXIT_USAGE && strstr(err, "even"));
  CHECK(PARSE("--vs", "x.so", "--vs-turns", "18") == PERF_EXIT_USAGE && strstr(err, "2 to 16"));
  CHECK(PARSE("--vs-turns", "6") == PERF_EXIT_USAGE && strstr(err, "under --vs"));
  CHECK(PARSE("--vs-rep-us", "1000") == PERF_EXIT_USAGE && strstr(err, "under --vs"));
  CHECK(PARSE("--vs", "x.so", "--vs-rep-us", "-1") == PERF_EXIT_USAGE &&
        strstr(err, "'-1': expected microseconds"));
  CHECK(PARSE("--vs", "x.so", "--vs-rep-us", "1000001") == PERF_EXIT_USAGE &&
        strstr(err, "0 to 1000000"));
  CHECK(PARSE("--vs", "x.so", "--vs-rep-us", "5ms") == PERF_EXIT_USAGE);
  CHECK(PARSE("--cpu", "") == PERF_EXIT_USAGE && strstr(err, "--cpu ''"));
  CHECK(PARSE("--cpu", "5-3") == PERF_EXIT_USAGE && strstr(err, "LOW <= HIGH"));
  CHECK(PARSE("--cpu", "2,1-3") == PERF_EXIT_USAGE && strstr(err, "CPU 2 is listed twice"));
  CHECK(PARSE("--cpu", "1,,2") == PERF_EXIT_USAGE && strstr(err, "expected CPU numbers"));
  CHECK(PARSE("--cpu", "1,") == PERF_EXIT_USAGE && strstr(err, "single commas"));
  CHECK(PARSE("--cpu", "1;2") == PERF_EXIT_USAGE && strstr(err, "single commas"));
  CHECK(PARSE("--cpu", "-1") == PERF_EXIT_USAGE && strstr(err, "expected CPU numbers"));
  CHECK(PARSE("--cpu", "1024") == PERF_EXIT_USAGE && strstr(err, "CPUs 0..1023"));
  CHECK(PARSE("--cpu", "0-300") == PERF_EXIT_USAGE && strstr(err, "at most 256"));
  CHECK(PARSE("--plot", "") == PERF_EXIT_USAGE);
  CHECK(PARSE("--all", "sendrecv") == PERF_EXIT_USAGE);
  CHECK(PARSE("-b", "2M", "-e", "1M") == PERF_EXIT_USAGE && strstr(err, "larger"));
  CHECK(PARSE("-f", "1", "-i", "0") == PERF_EXIT_USAGE);
  CHECK(PARSE("--baseline=1") == PERF_EXIT_USAGE && strstr(err, "takes no value"));
  CHECK(PARSE("--backend", "opencl") == PERF_EXIT_USAGE);
  CHECK(PARSE("-h") == 1);
}

/* nccl-tests' GetBw and GetCollByteCount, per collective. */
static void bus_factors_match_nccl_tests(void) {
  for (int n = 1; n <= 16; n++) {
    double nn = n;
    CHECK(fabs(perf_coll_bus_factor(PERF_ALL_REDUCE, n) - 2 * (nn - 1) / nn) < 1e-15);
    CHECK(fabs(perf_coll_bus_factor(PERF_ALL_GATHER, n) - (nn - 1) / nn) < 1e-15);
    CHECK(fabs(perf_coll_bus_factor(PERF_REDUCE_SCATTER, n) - (nn - 1) / nn) < 1e-15);
    CHECK(fabs(perf_coll_bus_factor(PERF_ALLTOALL, n) - (nn - 1) / nn) < 1e-15);
    CHECK(perf_coll_bus_factor(PERF_BROADCAST, n) == 1);
    CHECK(perf_coll_bus_factor(PERF_REDUCE, n) == 1);
    CHECK(perf_coll_bus_factor(PERF_SENDRECV, n) == 1);
  }
  /* algbw bytes: count*size, times ranks for the gathered/scattered ones. */
  CHECK(perf_coll_algbw_bytes(PERF_ALL_REDUCE, 256, 4, 8) == 1024);
  CHECK(perf_coll_algbw_bytes(PERF_ALL_GATHER, 256, 4, 8) == 8192);
  CHECK(perf_coll_algbw_bytes(PERF_REDUCE_SCATTER, 256, 4, 8) == 8192);
  CHECK(perf_coll_algbw_bytes(PERF_ALLTOALL, 256, 4, 8) == 8192);
  CHECK(perf_coll_algbw_bytes(PERF_BROADCAST, 256, 4, 8) == 1024);
  double alg, bus;
  /* Stock NCCL, 2 ranks, all_reduce 8 GiB float in 24925.5 us: 344.62 GB/s (baseline). */
  perf_coll_bw(PERF_ALL_REDUCE, 2147483648u, 4, 24925.5e-6, 2, &alg, &bus);
  CHECK(fabs(alg - 344.62) < 0.01 && fabs(bus - 344.62) < 0.01);
  /* all_gather 2 GiB total in 3694.26 us: algbw 581.30, busbw 290.65. */
  perf_coll_bw(PERF_ALL_GATHER, 268435456, 4, 3694.26e-6, 2, &alg, &bus);
  CHECK(fabs(alg - 581.30) < 0.01 && fabs(bus - 290.65) < 0.01);
  perf_coll_bw(PERF_ALL_REDUCE, 100, 4, 0, 2, &alg, &bus);
  CHECK(alg == 0 && bus == 0);
}

static void counts_match_nccl_tests(void) {
  struct perf_counts c;
  perf_coll_counts(PERF_ALL_REDUCE, 2, 4, 2, &c);
  CHECK(c.sendcount == 2 && c.recvcount == 2 && c.paramcount == 2);
  /* 8 bytes of float over 2 ranks: 1 element each, rounded down to 16 bytes = 0 (the
   * all_gather baseline prints size 0 count 0 for -b 8). */
  perf_coll_counts(PERF_ALL_GATHER, 2, 4, 2, &c);
  CHECK(c.paramcount == 0 && c.recvcount == 0);
  perf_coll_counts(PERF_ALL_GATHER, 32, 4, 2, &c); /* 128 B: count 16, size 128 */
  CHECK(c.paramcount == 16 && c.sendcount == 16 && c.recvcount == 32 && c.send_inplace_off == 16);
  perf_coll_counts(PERF_REDUCE_SCATTER, 512, 4, 2, &c); /* 2048 B: count 256 */
  CHECK(c.paramcount == 256 && c.sendcount == 512 && c.recvcount == 256);
  CHECK(c.recv_inplace_off == 256 && c.send_inplace_off == 0);
  perf_coll_counts(PERF_ALLTOALL, 8192, 4, 2, &c);
  CHECK(c.paramcount == 4096 && c.sendcount == 8192 && c.recvcount == 8192);
  perf_coll_counts(PERF_ALL_GATHER, 100, 1, 3, &c); /* int8: 33 per rank -> 32 */
  CHECK(c.paramcount == 32);
  perf_coll_counts(PERF_ALL_GATHER, 100, 8, 3, &c); /* double: 33 -> 32 (2 per 16 B) */
  CHECK(c.paramcount == 32);
  perf_coll_counts(PERF_BROADCAST, 7, 4, 5, &c);
  CHECK(c.paramcount == 7 && c.sendcount == 7 && c.recvcount == 7);
}

static void small_floats_round_to_nearest_even(void) {
  /* half */
  CHECK(perf_float_encode(1.0, 5, 10, 1) == 0x3c00);
  CHECK(perf_float_encode(-2.0, 5, 10, 1) == 0xc000);
  CHECK(perf_float_encode(65504.0, 5, 10, 1) == 0x7bff);
  CHECK(perf_float_encode(65520.0, 5, 10, 1) == 0x7c00);             /* rounds to inf */
  CHECK(perf_float_encode(ldexp(1, -24), 5, 10, 1) == 0x0001);       /* smallest subnormal */
  CHECK(perf_float_encode(1.0 + ldexp(1, -11), 5, 10, 1) == 0x3c00); /* tie to even */
  CHECK(perf_float_encode(1.0 + 3 * ldexp(1, -11), 5, 10, 1) == 0x3c02);
  CHECK(perf_float_decode(0x3555, 5, 10, 1) == 0.333251953125);
  CHECK(isinf(perf_float_decode(0x7c00, 5, 10, 1)));
  /* bfloat16 */
  CHECK(perf_float_encode(1.0, 8, 7, 1) == 0x3f80);
  CHECK(perf_float_decode(0x4049, 8, 7, 1) == 3.140625);
  /* e4m3: max 448, no inf; e5m2: max 57344 */
  CHECK(perf_float_encode(448.0, 4, 3, 0) == 0x7e);
  CHECK(perf_float_decode(0x7e, 4, 3, 0) == 448.0);
  CHECK(isnan(perf_float_decode(0x7f, 4, 3, 0)));
  CHECK(perf_float_encode(ldexp(1, -9), 4, 3, 0) == 0x01);
  CHECK(perf_float_encode(57344.0, 5, 2, 1) == 0x7b);
  CHECK(perf_float_encode(0.5625, 5, 2, 1) == 0x38); /* 0.5625 ties down to 0.5 */
  for (int t = 0; t < perf_ntypes; t++) {
    const struct perf_type* ty = &perf_types[t];
    if (ty->kind != PERF_KIND_FLOAT) continue;
    char buf[8];
    for (int k = 1; k <= 16; k++) { /* every generated value ±k/16 survives a round trip */
      double v = k / 16.0;
      perf_store_float(ty, buf, 0, v);
      double back = perf_load_float(ty, buf, 0);
      CHECK(fabs(back - v) <= perf_type_eps(ty) * v);
    }
  }
}

static double combine_f(int kind, double acc, double x) {
  switch (kind) {
    case PERF_OP_PROD: return acc * x;
    case PERF_OP_MAX: return fmax(acc, x);
    case PERF_OP_MIN: return fmin(acc, x);
    default: return acc + x;
  }
}

static uint64_t combine_u(const struct perf_type* ty, int kind, uint64_t acc, uint64_t x) {
  int shift = 64 - 8 * (int)ty->size;
  int is_signed = ty->kind == PERF_KIND_INT;
  int x_greater = is_signed ? (int64_t)(x << shift) > (int64_t)(acc << shift) : x > acc;
  int x_less = is_signed ? (int64_t)(x << shift) < (int64_t)(acc << shift) : x < acc;
  switch (kind) {
    case PERF_OP_PROD: return acc * x;
    case PERF_OP_MAX: return x_greater ? x : acc;
    case PERF_OP_MIN: return x_less ? x : acc;
    default: return acc + x;
  }
}

/* Outputs built here from perf_check_element must verify; a changed element must not. */
static void checker_counts_wrong_elements(void) {
  for (int t = 0; t < perf_ntypes; t++) {
    for (int op = 0; op < perf_nops; op++) {
      const int nranks = 3;
      struct perf_check c = {.coll = PERF_ALL_REDUCE,
                             .type = &perf_types[t],
                             .op = &perf_ops[op],
                             .root = -1,
                             .rank = 1,
                             .nranks = nranks,
                             .seed = 42 + (uint64_t)t};
      perf_coll_counts(c.coll, 64, c.type->size, nranks, &c.counts);
      char out[64 * 8], in[8];
      const struct perf_type* ty = c.type;
      for (size_t i = 0; i < 64; i++) {
        double f = 0;
        uint64_t u = 0;
        for (int r = 0; r < nranks; r++) {
          perf_check_element(&c, r, i, in);
          double x = ty->kind == PERF_KIND_FLOAT ? perf_load_float(ty, in, 0) : 0;
          uint64_t y = ty->kind != PERF_KIND_FLOAT ? perf_load_int(ty, in, 0) : 0;
          int kind = perf_ops[op].kind;
          if (kind == PERF_OP_MULSUM) x *= 1 + r % 3, y *= (uint64_t)(1 + r % 3);
          if (r == 0)
            f = x, u = y;
          else
            f = combine_f(kind, f, x), u = combine_u(ty, kind, u, y);
        }
        if (perf_ops[op].kind == PERF_OP_AVG) f /= nranks, u /= (uint64_t)nranks;
        if (ty->kind == PERF_KIND_FLOAT)
          perf_store_float(ty, out, i, f);
        else
          perf_store_int(ty, out, i, u);
      }
      CHECK(perf_check_verify(&c, out) == 0);
      if (perf_check_verify(&c, out) != 0)
        fprintf(stderr, "  type %s op %s\n", ty->name, perf_ops[op].name);
      if (ty->kind == PERF_KIND_FLOAT)
        perf_check_poison(out + 5 * ty->size, ty->size);
      else
        out[5 * ty->size] ^= 1; /* little-endian: the lowest bit of element 5 */
      CHECK(perf_check_verify(&c, out) == 1);
      if (perf_check_verify(&c, out) != 1)
        fprintf(stderr, "  poisoned: type %s op %s\n", ty->name, perf_ops[op].name);
    }
  }
  /* Copies: all_gather on rank 2 of 4, then one element swapped. */
  struct perf_check c = {.coll = PERF_ALL_GATHER,
                         .type = &perf_types[perf_type_find("int32")],
                         .op = &perf_ops[0],
                         .root = -1,
                         .rank = 2,
                         .nranks = 4,
                         .seed = 7};
  perf_coll_counts(c.coll, 64, 4, 4, &c.counts);
  int32_t out[64];
  for (size_t i = 0; i < 64; i++) perf_check_element(&c, (int)(i / 16), i % 16, &out[i]);
  CHECK(perf_check_verify(&c, out) == 0);
  int32_t tmp = out[3];
  out[3] = out[4];
  out[4] = tmp;
  CHECK(perf_check_verify(&c, out) == 2);
  /* Generated data is never zero. */
  for (size_t i = 0; i < 1000; i++) {
    int32_t v;
    perf_check_element(&c, 1, i, &v);
    CHECK(v != 0);
  }
}

/* The row layout reproduces stock NCCL's nccl-tests output byte for byte. */
static void table_row_matches_nccl_tests(void) {
  const char* want =
      "       32768          8192     float     sum      -1    20.07    1.63    1.63       0    "
      "21.53    1.52    1.52       0\n";
  struct perf_row row = {"all_reduce",
                         32768,
                         8192,
                         "float",
                         "sum",
                         -1,
                         {20.07, 1.63, 1.63, 0, 1},
                         {21.53, 1.52, 1.52, 0, 1},
                         NULL};
  char buf[512] = "";
  FILE* f = fmemopen(buf, sizeof buf, "w");
  perf_table_row(f, &row);
  fclose(f);
  CHECK(!strcmp(buf, want));
  if (strcmp(buf, want)) fprintf(stderr, "  got  '%s'\n  want '%s'\n", buf, want);
  /* In-place sendrecv: N/A; big times lose decimals the way nccl-tests' do. */
  const char* want2 =
      "  8589934592    2147483648     float     sum      -1  24925.5  344.62  344.62       0  "
      "24660.8  348.32  348.32    N/A\n";
  struct perf_row row2 = {"sendrecv",
                          8589934592ULL,
                          2147483648ULL,
                          "float",
                          "sum",
                          -1,
                          {24925.5, 344.62, 344.62, 0, 1},
                          {24660.8, 348.32, 348.32, 0, 0},
                          NULL};
  memset(buf, 0, sizeof buf);
  f = fmemopen(buf, sizeof buf, "w");
  perf_table_row(f, &row2);
  fclose(f);
  CHECK(!strcmp(buf, want2));
  if (strcmp(buf, want2)) fprintf(stderr, "  got  '%s'\n  want '%s'\n", buf, want2);
  char num[32];
  perf_format_num(1234567.0, 7, num, sizeof num);
  CHECK(!strcmp(num, "1234567"));
  perf_format_num(12345678.0, 7, num, sizeof num);
  CHECK(!strcmp(num, "1.2e+07"));
}

/* Filling and verifying split over threads gives exactly what one thread gives. */
static void checker_split_over_threads_agrees(void) {
  const int nranks = 2;
  struct perf_check c = {.coll = PERF_ALL_GATHER,
                         .type = &perf_types[perf_type_find("int32")],
                         .op = &perf_ops[0],
                         .root = -1,
                         .rank = 1,
                         .nranks = nranks,
                         .seed = 11};
  size_t n = (size_t)5 << 20; /* 5 Mi elements: several threads' worth */
  perf_coll_counts(c.coll, n, 4, nranks, &c.counts);
  int32_t* a = malloc(c.counts.sendcount * 4);
  int32_t* b = malloc(c.counts.sendcount * 4);
  int32_t* out = malloc(c.counts.recvcount * 4);
  CHECK(a && b && out);
  if (!a || !b || !out) return;
  perf_check_fill(&c, a);
  perf_check_fill_par(&c, b, 4);
  CHECK(memcmp(a, b, c.counts.sendcount * 4) == 0);
  for (size_t i = 0; i < c.counts.recvcount; i++)
    perf_check_element(&c, (int)(i / c.counts.paramcount), i % c.counts.paramcount, &out[i]);
  CHECK(perf_check_verify_par(&c, out, 4) == 0);
  out[3] ^= 1;
  out[c.counts.recvcount - 1] ^= 1;
  CHECK(perf_check_verify_par(&c, out, 4) == 2 && perf_check_verify(&c, out) == 2);
  free(a);
  free(b);
  free(out);
}

static struct perf_result result(int lib, int coll, size_t size, double time_us, double busbw) {
  struct perf_result r = {.lib = lib,
                          .coll = coll,
                          .type = perf_type_default(),
                          .op = perf_colls[coll].has_op ? perf_op_find("sum") : -1,
                          .root = perf_colls[coll].has_root ? 0 : -1,
                          .size = size,
                          .count = size / 4};
  r.oop = (struct perf_half_row){time_us, busbw, busbw, 0, 1};
  r.ip = (struct perf_half_row){time_us, busbw, busbw, 0, 1};
  return r;
}

/* --vs: rows pair up in order per library; ratios are A/B; a library that stopped early
 * leaves rows without a partner; the table says all of it. */
static void vs_pairs_ratios_and_table(void) {
  struct perf_results rs = {0};
  /* Interleaved as they arrive: A twice as fast as B on all_reduce, equal on broadcast. */
  struct perf_result rows[] = {
      result(0, PERF_ALL_REDUCE, 1024, 10, 2), result(1, PERF_ALL_REDUCE, 1024, 20, 1),
      result(0, PERF_ALL_REDUCE, 4096, 20, 4), result(1, PERF_ALL_REDUCE, 4096, 40, 2),
      result(0, PERF_BROADCAST, 1024, 5, 3),   result(1, PERF_BROADCAST, 1024, 5, 3),
      result(0, PERF_BROADCAST, 4096, 8, 0),   result(1, PERF_BROADCAST, 4096, 8, 0),
      result(0, PERF_ALLTOALL, 1024, 1, 1), /* B stopped before this one */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) perf_results_add(&rs, &rows[i]);
  struct perf_pairs p;
  CHECK(perf_pairs_make(&rs, &p) == 0);
  CHECK(p.n == 4 && p.unpaired_a == 1 && p.unpaired_b == 0 && !p.mismatch);
  CHECK(p.a[1]->size == 4096 && p.b[1]->lib == 1 && p.b[1]->oop.time_us == 40);
  double tr, br;
  perf_half_ratio(&p.a[0]->oop, &p.b[0]->oop, &tr, &br);
  CHECK(tr == 0.5 && br == 2.0);
  perf_half_ratio(&p.a[3]->oop, &p.b[3]->oop, &tr, &br);
  CHECK(tr == 1.0 && isnan(br)); /* nothing moved: no bandwidth ratio */
  double v[] = {2, 8, NAN, 0, -1};
  CHECK(fabs(perf_geomean(v, 5) - 4) < 1e-12);
  CHECK(isnan(perf_geomean(v + 2, 3)));

  char buf[8192] = "";
  FILE* f = fmemopen(buf, sizeof buf, "w");
  perf_compare_print(f, &p, "weft", "nccl");
  fclose(f);
  CHECK(strstr(buf, "A = weft, B = nccl") != NULL);
  CHECK(strstr(buf,
               "# A/B all_reduce float sum, 2 sizes: busbw geomean 2.00 (in-place 2.00), "
               "time geomean 0.50 (in-place 0.50)") != NULL);
  CHECK(strstr(buf, "# A/B broadcast float root 0, 2 sizes: busbw geomean 1.00") != NULL);
  CHECK(strstr(buf, "rows without a partner: 1 of A, 0 of B") != NULL);
  /* A row: the key columns as the nccl-tests table, then time A, time B, busbw A, busbw B,
   * bw A/B, t A/B for each half. */
  CHECK(strstr(buf,
               "        1024           256     float     sum      -1     10.00     20.00"
               "     2.00     1.00    2.00    0.50") != NULL);
  /* After the table (after every block's geomeans), a line per block: the worst time A/B. */
  const char* worst_ar =
      strstr(buf, "# A/B all_reduce float sum, worst time 8 B-64 KiB (out-of-place): 0.50 at "
                  "1024 B, 2 sizes\n");
  const char* worst_bc = strstr(
      buf, "# A/B broadcast float root 0, worst time 8 B-64 KiB (out-of-place): 1.00 at 1024 B, "
           "2 sizes\n");
  CHECK(worst_ar && worst_bc && worst_ar < worst_bc);
  CHECK(worst_ar && worst_ar > strstr(buf, "# A/B broadcast float root 0, 2 sizes: busbw"));
  if (!strstr(buf, "2 sizes: busbw geomean 2.00") || !worst_ar) fprintf(stderr, "%s", buf);
  perf_pairs_free(&p);

  /* Rows that measure different things stop the pairing. */
  rs.r[1].size = 2048;
  CHECK(perf_pairs_make(&rs, &p) == 0 && p.n == 0 && p.mismatch);
  perf_pairs_free(&p);
  perf_results_free(&rs);
}

/* --vs: the worst time A/B counts only the out-of-place halves of sizes from 8 B to 64 KiB. */
static void vs_worst_time_ratio_small_sizes(void) {
  struct perf_results rs = {0};
  /* size, time A, time B: ratios 9 (too small), 1.1, 1.3, 5 (too large), in-place ignored. */
  const struct {
    size_t size;
    double a, b;
  } pts[] = {{4, 90, 10}, {8, 11, 10}, {65536, 13, 10}, {131072, 50, 10}};
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    struct perf_result a = result(0, PERF_ALL_REDUCE, pts[i].size, pts[i].a, 1);
    struct perf_result b = result(1, PERF_ALL_REDUCE, pts[i].size, pts[i].b, 1);
    a.ip.time_us = 1000; /* in-place A/B 100: not read */
    perf_results_add(&rs, &a);
    perf_results_add(&rs, &b);
  }
  /* A block with no size in range. */
  struct perf_result big_a = result(0, PERF_ALL_GATHER, 1 << 20, 20, 1);
  struct perf_result big_b = result(1, PERF_ALL_GATHER, 1 << 20, 10, 1);
  perf_results_add(&rs, &big_a);
  perf_results_add(&rs, &big_b);
  struct perf_pairs p;
  CHECK(perf_pairs_make(&rs, &p) == 0 && p.n == 5);
  char buf[8192] = "";
  FILE* f = fmemopen(buf, sizeof buf, "w");
  perf_compare_print(f, &p, "weft", "nccl");
  fclose(f);
  CHECK(strstr(buf, "# A/B all_reduce float sum, worst time 8 B-64 KiB (out-of-place): 1.30 at "
                    "65536 B, 2 sizes\n") != NULL);
  CHECK(strstr(buf, "# A/B all_gather float, worst time 8 B-64 KiB (out-of-place): - (no size in "
                    "range)\n") != NULL);
  if (!strstr(buf, "1.30 at 65536 B")) fprintf(stderr, "%s", buf);
  perf_pairs_free(&p);
  perf_results_free(&rs);
}

/* --plot: a PNG (signature, IHDR of the expected size) with both libraries' colours; nothing
 * to plot is an error. */
static void plot_writes_a_png(void) {
  struct perf_results rs = {0};
  for (int k = 0; k < 12; k++)
    for (int lib = 0; lib < 2; lib++) {
      struct perf_result r =
          result(lib, PERF_ALL_REDUCE, (size_t)8 << (2 * k), 10 + k * k * (lib + 1), k + lib);
      perf_results_add(&rs, &r);
    }
  char path[64];
  snprintf(path, sizeof path, "/tmp/weft-perf-plot-%d.png", (int)getpid());
  const char* labels[2] = {"weft", "nccl"};
  CHECK(perf_plot_png(&rs, labels, path, "TEST") == 0);
  FILE* f = fopen(path, "rb");
  unsigned char head[24] = {0};
  CHECK(f && fread(head, 1, sizeof head, f) == sizeof head);
  if (f) fclose(f);
  CHECK(memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(head + 12, "IHDR", 4) == 0);
  CHECK(head[16] == 0 && head[17] == 0 && head[18] == 900 >> 8 && head[19] == (900 & 0xff));
  unlink(path);
  struct perf_results empty = {0};
  CHECK(perf_plot_png(&empty, labels, path, "EMPTY") == -1);
  perf_results_free(&rs);
}

/* --vs: a row's half is the median of its turns; one turn far off moves it not at all. */
static void vs_half_median_of_turns(void) {
  struct perf_half_row t[6], out;
  const double times[6] = {5.0, 4.0, 40.0, 6.0, 4.5, 5.5}; /* one turn hit by something */
  for (int i = 0; i < 6; i++) t[i] = (struct perf_half_row){times[i], 9, 9, i == 3 ? 2 : 0, 1};
  perf_half_median(t, 6, &out);
  CHECK(out.time_us == 5.25 && out.wrong == 2 && out.reported == 1);
  CHECK(out.algbw == 0 && out.busbw == 0); /* the caller's */
  for (int i = 0; i + 1 < 6; i++) CHECK(t[i].time_us <= t[i + 1].time_us);
  struct perf_half_row u[3] = {{7, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {3, 0, 0, 0, 0}};
  perf_half_median(u, 3, &out);
  CHECK(out.time_us == 3 && out.wrong == 0 && out.reported == 0);
  struct perf_half_row two[2] = {{2, 0, 0, 0, 1}, {8, 0, 0, 0, 1}};
  perf_half_median(two, 2, &out);
  CHECK(out.time_us == 5 && out.reported == 1); /* two turns: their mean */
}

/* --vs-rep-us keeps the median pass: one slow pass (a scheduler tick) cannot move it. */
static void vs_median_of_passes(void) {
  double odd[5] = {3.0, 1.0, 250.0, 2.0, 2.5};
  CHECK(perf_median(odd, 5) == 2.5);
  for (int i = 0; i + 1 < 5; i++) CHECK(odd[i] <= odd[i + 1]);
  double even[4] = {9.0, 1.0, 4.0, 2.0};
  CHECK(perf_median(even, 4) == 3.0);
  double one[1] = {7.25};
  CHECK(perf_median(one, 1) == 7.25);
}

int main(void) {
  sizes_parse_with_suffixes();
  options_parse_like_nccl_tests();
  defaults_match_nccl_tests_and_all_is_a_ci_run();
  bad_flags_are_usage_errors();
  bus_factors_match_nccl_tests();
  counts_match_nccl_tests();
  small_floats_round_to_nearest_even();
  checker_counts_wrong_elements();
  table_row_matches_nccl_tests();
  checker_split_over_threads_agrees();
  vs_pairs_ratios_and_table();
  vs_worst_time_ratio_small_sizes();
  vs_half_median_of_turns();
  vs_median_of_passes();
  plot_writes_a_png();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
