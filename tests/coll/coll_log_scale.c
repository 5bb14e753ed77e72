/* The logarithmic algorithms at rank counts the matrix does not reach (it forks 1 to 64 ranks):
 * RecDoubling, Rabenseifner, Bruck, RecHalving and Binomial, each forced on its own communicator
 * of N forked host-mode ranks, in place and out of place, checked against the harness's
 * reference (coll_ref.h) and bit for bit across ranks.
 *
 *   coll_log_scale N [--transport shm|net] [--default-seed S]
 *
 * Per algorithm, four cases drawn from the seed (WEFT_TEST_SEED, printed): a random datatype and
 * operator each, in place and out of place, of 1 and of 7 elements (fewer than Rabenseifner's
 * blocks at any N > 8, so most blocks are empty). Small sizes only: a hundred processes on CI's
 * 2 cores wait for the scheduler at every step (1M+3 took minutes); large buffers at these
 * counts are weft-perf's job (docs/perf-notes.md). Every failure prints its rerun line
 * (coll_matrix with WEFT_COLL_CASE runs that case alone, at any N). Exit 0, 1, or 77 without a
 * data path. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "coll_case.h"
#include "coll_exec.h"
#include "testutil.h"

static const coll_algo algos[] = {ALGO_RECDOUBLING, ALGO_RABENSEIFNER, ALGO_BRUCK,
                                  ALGO_RECHALVING, ALGO_BINOMIAL};

static coll_kind kind_of(coll_algo a, uint64_t* rng) {
  switch (a) {
    case ALGO_RECDOUBLING:
    case ALGO_RABENSEIFNER: return COLL_ALLREDUCE;
    case ALGO_BRUCK: return COLL_ALLGATHER;
    case ALGO_RECHALVING: return COLL_REDUCESCATTER;
    default: return test_rand(rng) & 1 ? COLL_BROADCAST : COLL_REDUCE;
  }
}

/* One random case of algorithm a (in place or not; big: 7 elements, else 1). */
static coll_case draw(int nranks, coll_transport tr, coll_algo a, int inplace, int big,
                      uint64_t* rng) {
  coll_case c;
  memset(&c, 0, sizeof c);
  c.nranks = nranks;
  c.transport = tr;
  c.algo = a;
  c.proto = test_rand(rng) % 4 == 0 ? PROTO_LL : PROTO_SIMPLE;
  c.coll = kind_of(a, rng);
  c.type = (ncclDataType_t)(test_rand(rng) % COLL_NUM_TYPES);
  c.op = coll_is_reduction(c.coll) ? (coll_op)(test_rand(rng) % OP_NUM) : OP_NONE;
  /* An 8-bit integer average over more than 127 ranks has no input domain without overflow
   * (coll_ref.h: |x| <= max / n): the sum instead, whose wraparound the reference follows. */
  if (c.op == OP_AVG && nranks > 127 && (c.type == ncclInt8 || c.type == ncclUint8)) c.op = OP_SUM;
  c.size = big ? SIZE_7 : SIZE_1;
  c.inplace = inplace;
  c.root = coll_has_root(c.coll) ? (int)(test_rand(rng) % (uint64_t)nranks) : 0;
  return c;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  /* Rerun lines name coll_matrix (built beside this program), whose WEFT_COLL_CASE runs any
   * case alone, at any rank count. */
  static char matrix[4096];
  const char* slash = strrchr(argv[0], '/');
  snprintf(matrix, sizeof matrix, "%.*scoll_matrix", slash ? (int)(slash - argv[0] + 1) : 0,
           argv[0]);
  coll_set_argv0(matrix);
  if (argc < 2) {
    fprintf(stderr, "usage: coll_log_scale N [--transport shm|net] [--default-seed S]\n");
    return 2;
  }
  int nranks = atoi(argv[1]);
  coll_transport tr = TR_SHM;
  uint64_t default_seed = 0x10c5ca1eull;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--transport")) tr = strcmp(argv[i + 1], "net") ? TR_SHM : TR_NET;
    else if (!strcmp(argv[i], "--default-seed")) default_seed = strtoull(argv[i + 1], NULL, 0);
  }
  if (nranks < 2 || nranks > COLL_LOG_MAX_RANKS) {
    fprintf(stderr, "coll_log_scale: N must be 2..%d, not %s\n", COLL_LOG_MAX_RANKS, argv[1]);
    return 2;
  }
  /* The parent holds a few fds per child while they run; each rank its connections. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  const uint64_t seed = test_seed(default_seed);
  uint64_t rng = seed ^ (uint64_t)nranks * 0x9e3779b97f4a7c15ull;
  int feat[FEAT_NUM];
  char na_msg[256] = "";
  for (int f = 0; f < FEAT_NUM; f++) feat[f] = FEAT_OK;
  if (coll_probe(feat, na_msg, sizeof na_msg) != 0) {
    fprintf(stderr, "FAIL: the probe on a 1-rank communicator did not complete\n");
    return 1;
  }
  if (feat[COLL_ALLREDUCE] == FEAT_NA) {
    printf("SKIP: no host data path (%s)\n", na_msg);
    return TEST_SKIP_RC;
  }
  printf("coll_log_scale: %d ranks, %s, seed 0x%" PRIx64 " (WEFT_TEST_SEED)\n", nranks,
         coll_transport_name[tr], seed);
  int failed = 0, ran = 0;
  for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
    coll_case cases[4];
    int n = 0;
    for (int big = 0; big < 2; big++)
      for (int inplace = 0; inplace < 2; inplace++) {
        coll_case c = draw(nranks, tr, algos[a], inplace, big, &rng);
        if (inplace && !coll_has_inplace(c.coll)) c.inplace = 0;
        if (c.op == OP_PREMULSUM && feat[FEAT_PREMULSUM] == FEAT_NA) c.op = OP_SUM;
        if (c.op == OP_CUSTOM && feat[FEAT_CUSTOM] == FEAT_NA) c.op = OP_SUM;
        cases[n++] = c;
      }
    /* One communicator per (algorithm, protocol): the protocol of the first case for all. */
    for (int i = 1; i < n; i++) cases[i].proto = cases[0].proto;
    int status[4] = {0};
    for (int i = 0; i < n; i++) {
      char name[COLL_CASE_STR];
      coll_case_format(&cases[i], name);
      printf("  %s\n", name);
    }
    fflush(stdout);
    int rc = coll_run_config(cases, n, seed, status, 240, 0);
    for (int i = 0; i < n; i++) {
      ran++;
      if (rc == 0 && (status[i] & COLL_STATUS_RUN) && !(status[i] & COLL_STATUS_FAIL)) continue;
      failed++;
      printf("failed: ");
      coll_print_rerun(stdout, seed, &cases[i]);
    }
  }
  printf("coll_log_scale: %d ranks: %d cases, %d failed\n", nranks, ran, failed);
  return failed ? 1 : 0;
}
