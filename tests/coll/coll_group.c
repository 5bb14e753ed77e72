/* Group semantics of the host data path (ncclGroupStart/End), one behaviour per argument:
 *
 *   end_without_start      ncclGroupEnd with no open group is ncclInvalidUsage (no data path
 *                          needed); balanced and nested empty groups succeed
 *   send_before_recv_large 2 ranks both Send (> 4 MiB) before their Recv inside one group:
 *                          must not deadlock; shm and net x Simple and LL
 *   alltoall_grouped       4 ranks exchange blocks of different sizes with every rank (itself
 *                          included) through grouped Send/Recv; shm and net
 *   thousand_small_ops     1000 small collectives and Send/Recv pairs (random kinds, types, ops,
 *                          sizes 0/1/7) in one group on 3 ranks; shm and net
 *   nested                 collectives and Send/Recv in groups nested three deep, all complete at
 *                          the outermost ncclGroupEnd; 4 ranks, shm and net
 *
 * Inputs and checks come from the matrix harness (coll_ref.h, coll_exec.h). Exit 77 while the
 * library answers "not available yet". */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "coll_case.h"
#include "coll_exec.h"
#include "coll_fp.h"
#include "coll_ref.h"
#include "testutil.h"

static uint64_t g_seed;
static const char* g_name;
static const char* g_argv0;

static void rerun_line(void) {
  fprintf(stderr, "rerun: WEFT_TEST_SEED=0x%" PRIx64 " %s %s\n", g_seed, g_argv0, g_name);
}

#define CALL(call)                                                                          \
  do {                                                                                      \
    ncclResult_t r_ = (call);                                                               \
    if (r_ != ncclSuccess) {                                                                \
      fprintf(stderr, "FAIL rank %d: %s returned %d (%s): %s\n", rank, #call, (int)r_,      \
              ncclGetErrorString(r_), ncclGetLastError(NULL));                              \
      rerun_line();                                                                         \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

/* A configuration for the environment of the ranks (as the matrix sets it). */
static void config(coll_transport tr, coll_proto pr) {
  coll_case c;
  memset(&c, 0, sizeof c);
  c.transport = tr, c.proto = pr, c.algo = ALGO_RING;
  coll_apply_config_env(&c);
}

/* Data of a point-to-point block: element i of the block src sends to dst. */
static coll_gen p2p_gen(ncclDataType_t type, int nranks) {
  coll_case c;
  memset(&c, 0, sizeof c);
  c.nranks = nranks, c.coll = COLL_SENDRECV, c.type = type, c.op = OP_NONE, c.size = SIZE_7;
  coll_gen g;
  coll_gen_init(&g, &c, g_seed ^ 0x9009);
  return g;
}

static uint64_t p2p_value(const coll_gen* g, int src, int dst, size_t i) {
  return coll_gen_value(g, src, ((size_t)dst << 40) + i);
}

static void fill(void* buf, size_t esz, size_t n, const coll_gen* g, int src, int dst) {
  for (size_t i = 0; i < n; i++) {
    uint64_t v = p2p_value(g, src, dst, i);
    memcpy((char*)buf + i * esz, &v, esz); /* little endian */
  }
}

static size_t check_block(const void* buf, size_t esz, size_t n, const coll_gen* g, int src,
                          int dst) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t v = p2p_value(g, src, dst, i), got = 0;
    memcpy(&got, (const char*)buf + i * esz, esz);
    if ((got & g->mask) != v && bad++ < 4)
      fprintf(stderr, "  rank %d: element %zu of the block from rank %d is 0x%" PRIx64
              ", expected 0x%" PRIx64 "\n", dst, i, src, got, v);
  }
  return bad;
}

/* ---- send_before_recv_large ------------------------------------------------------------- */

static int send_before_recv(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  CALL(ncclCommInitRank(&comm, nranks, *id, rank));
  static const struct {
    ncclDataType_t type;
    size_t count;
  } sizes[] = {{ncclUint8, (4u << 20) + 4099}, {ncclFloat32, (9u << 20) / 4 + 1},
               {ncclBfloat16, (6u << 20) / 2 + 7}};
  int peer = 1 - rank, failed = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t esz = fp_type_size(sizes[k].type), n = sizes[k].count;
    coll_gen g = p2p_gen(sizes[k].type, nranks);
    char* s = malloc(n * esz);
    char* r = malloc(n * esz);
    if (!s || !r) return 1;
    fill(s, esz, n, &g, rank, peer);
    memset(r, 0xcd, n * esz);
    CALL(ncclGroupStart());
    CALL(ncclSend(s, n, sizes[k].type, peer, comm, NULL));
    CALL(ncclRecv(r, n, sizes[k].type, peer, comm, NULL));
    CALL(ncclGroupEnd());
    size_t bad = check_block(r, esz, n, &g, peer, rank);
    if (bad) {
      fprintf(stderr, "FAIL rank %d: %zu of %zu %s elements wrong\n", rank, bad, n,
              coll_type_name(sizes[k].type));
      failed = 1;
    }
    free(s);
    free(r);
  }
  CALL(ncclCommDestroy(comm));
  if (failed) rerun_line();
  return failed;
}

/* ---- alltoall_grouped ------------------------------------------------------------------- */

static size_t a2a_count(int src, int dst) { return 1000 + 40099 * (size_t)src + 17 * (size_t)dst; }

static int alltoall_grouped(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  CALL(ncclCommInitRank(&comm, nranks, *id, rank));
  static const ncclDataType_t types[] = {ncclFloat16, ncclInt64, ncclFloat8e5m2};
  int failed = 0;
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    size_t esz = fp_type_size(types[k]);
    coll_gen g = p2p_gen(types[k], nranks);
    char *s[8], *r[8];
    for (int p = 0; p < nranks; p++) {
      s[p] = malloc(a2a_count(rank, p) * esz);
      r[p] = malloc(a2a_count(p, rank) * esz);
      if (!s[p] || !r[p]) return 1;
      fill(s[p], esz, a2a_count(rank, p), &g, rank, p);
      memset(r[p], 0xcd, a2a_count(p, rank) * esz);
    }
    CALL(ncclGroupStart());
    for (int p = 0; p < nranks; p++) {
      int to = (rank + p) % nranks; /* staggered, so not every rank starts with rank 0 */
      CALL(ncclSend(s[to], a2a_count(rank, to), types[k], to, comm, NULL));
    }
    for (int p = 0; p < nranks; p++)
      CALL(ncclRecv(r[p], a2a_count(p, rank), types[k], p, comm, NULL));
    CALL(ncclGroupEnd());
    for (int p = 0; p < nranks; p++) {
      size_t bad = check_block(r[p], esz, a2a_count(p, rank), &g, p, rank);
      if (bad) {
        fprintf(stderr, "FAIL rank %d: %zu wrong %s elements from rank %d\n", rank, bad,
                coll_type_name(types[k]), p);
        failed = 1;
      }
      free(s[p]);
      free(r[p]);
    }
  }
  CALL(ncclCommDestroy(comm));
  if (failed) rerun_line();
  return failed;
}

/* ---- groups of matrix cases ------------------------------------------------------------- */

/* Runs cases in one group (nest: 0 flat; 1 each case in its own nested group, three levels
 * deep for every third case), then checks every case. */
static int group_of_cases(int rank, ncclComm_t comm, coll_case* cases, int n, int nest) {
  coll_run* runs = calloc((size_t)n, sizeof *runs);
  if (!runs) return 1;
  int failed = 0;
  for (int i = 0; i < n; i++)
    if (coll_run_prepare(&runs[i], &cases[i], g_seed, rank, comm) != COLL_OK) return 1;
  CALL(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    int depth = nest ? 1 + (i % 3 == 2) : 0;
    for (int d = 0; d < depth; d++) CALL(ncclGroupStart());
    if (coll_run_issue(&runs[i], comm) != COLL_OK) return 1;
    for (int d = 0; d < depth; d++) CALL(ncclGroupEnd());
  }
  CALL(ncclGroupEnd());
  for (int i = 0; i < n; i++) {
    if (coll_run_verify(&runs[i])) failed = 1;
    coll_run_release(&runs[i], comm);
  }
  free(runs);
  if (rank == 0 && !failed) printf("  %d operations in one group: results correct on rank 0\n", n);
  if (failed) {
    fprintf(stderr, "FAIL rank %d: wrong results in a group of %d operations\n", rank, n);
    rerun_line();
  }
  return failed;
}

typedef struct {
  coll_proto proto;
  coll_transport transport;
  int ops;
  int nest;
} cases_job;

static int cases_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  cases_job* job = arg;
  ncclComm_t comm;
  CALL(ncclCommInitRank(&comm, nranks, *id, rank));
  const unsigned colls = (1u << COLL_ALLREDUCE) | (1u << COLL_REDUCE) | (1u << COLL_BROADCAST) |
                         (1u << COLL_ALLGATHER) | (1u << COLL_REDUCESCATTER) | (1u << COLL_SENDRECV);
  coll_space sp = {nranks, job->transport, colls, 0, 0};
  uint64_t rng = coll_mix64(g_seed ^ 0x6a0f) | 1; /* same sequence on every rank */
  coll_case* cases = calloc((size_t)job->ops, sizeof *cases);
  if (!cases) return 1;
  for (int i = 0; i < job->ops; i++) {
    coll_random_case(&sp, &rng, &cases[i]);
    cases[i].algo = ALGO_RING;
    cases[i].proto = job->proto;
    if (cases[i].size > SIZE_7) cases[i].size = (coll_size)(test_rand(&rng) % 3);
  }
  int failed = group_of_cases(rank, comm, cases, job->ops, job->nest);
  free(cases);
  CALL(ncclCommDestroy(comm));
  return failed;
}

/* ---- driver ----------------------------------------------------------------------------- */

static int end_without_start(void) {
  int rank = 0;
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
  CALL(ncclGroupStart());
  CALL(ncclGroupEnd());
  CALL(ncclGroupStart());
  CALL(ncclGroupStart());
  CALL(ncclGroupEnd());
  CALL(ncclGroupEnd());
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  coll_set_argv0(argv[0]);
  g_argv0 = argv[0];
  g_name = argc > 1 ? argv[1] : "";
  g_seed = test_seed(argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eedc011ull);
  printf("coll_group %s: seed 0x%" PRIx64 " (WEFT_TEST_SEED)\n", g_name, g_seed);
  fflush(stdout);
  if (!strcmp(g_name, "end_without_start")) return end_without_start();

  int feat[FEAT_NUM];
  char na[256] = "";
  if (coll_probe(feat, na, sizeof na) != 0) return 1;
  if (feat[COLL_ALLREDUCE] == FEAT_NA) {
    printf("SKIP: the host data path is not available yet (%s)\n", na);
    return TEST_SKIP_RC;
  }
  for (int f = 0; f < FEAT_NUM; f++)
    if (feat[f] == FEAT_NA && (f < COLL_ALLTOALL || f >= FEAT_PREMULSUM)) {
      fprintf(stderr, "FAIL: %s is not available yet, and these groups need it\n",
              coll_feature_name[f]);
      return 1;
    }

  int rc = 0;
  const int to = 240;
  if (!strcmp(g_name, "send_before_recv_large")) {
    for (int tr = 0; tr < TR_NUM; tr++)
      for (int pr = 0; pr < PROTO_NUM; pr++) {
        config((coll_transport)tr, (coll_proto)pr);
        printf("  %s, %s\n", coll_transport_name[tr], coll_proto_name[pr]);
        fflush(stdout);
        rc |= test_fork_ranks(2, send_before_recv, NULL, to);
      }
  } else if (!strcmp(g_name, "alltoall_grouped")) {
    for (int tr = 0; tr < TR_NUM; tr++) {
      config((coll_transport)tr, tr ? PROTO_LL : PROTO_SIMPLE);
      rc |= test_fork_ranks(4, alltoall_grouped, NULL, to);
    }
  } else if (!strcmp(g_name, "thousand_small_ops")) {
    for (int tr = 0; tr < TR_NUM; tr++) {
      cases_job job = {tr ? PROTO_SIMPLE : PROTO_LL, (coll_transport)tr, 1000, 0};
      config(job.transport, job.proto);
      rc |= test_fork_ranks(3, cases_rank, &job, to);
    }
  } else if (!strcmp(g_name, "nested")) {
    for (int tr = 0; tr < TR_NUM; tr++) {
      cases_job job = {tr ? PROTO_LL : PROTO_SIMPLE, (coll_transport)tr, 24, 1};
      config(job.transport, job.proto);
      rc |= test_fork_ranks(4, cases_rank, &job, to);
    }
  } else {
    fprintf(stderr, "usage: coll_group end_without_start|send_before_recv_large|"
                    "alltoall_grouped|thousand_small_ops|nested [default-seed]\n");
    return 2;
  }
  return rc ? 1 : 0;
}
