/* The collective correctness matrix: forked host-mode ranks run a sample of (or, with
 * WEFT_TEST_FULL=1, every) case of collective x datatype x op x size x algorithm x protocol x
 * transport x in place x root, each checked against a reference every rank computes alone.
 *
 *   coll_matrix [--ranks 2|2-8|1,3,5] [--transport shm|net|all] [--colls core|extra|all|A,B…]
 *               [--big] [--extra N] [--default-seed S]
 *
 * Environment:
 *   WEFT_TEST_SEED=S      seed of the sample and of every input (printed at start)
 *   WEFT_TEST_FULL=1      the full matrix of the given ranks/transports instead of the sample
 *                         (48M cases: one per collective x datatype, chosen by the seed;
 *                         WEFT_COLL_FULL_48M=all for every one of them)
 *   WEFT_COLL_CASE=C      only case C (its text form, as printed in "rerun:" lines)
 *   WEFT_COLL_FILTER=a,b  only cases with fields a and b (e.g. AllReduce,bfloat16,LL)
 *   WEFT_COLL_TIMEOUT=s   limit per communicator (default 240 s; 86400 with WEFT_TEST_FULL)
 *   WEFT_COLL_VERBOSE=1   one line per case with its time
 *   WEFT_COLL_LIST=1      print the selected cases (one text form per line) and exit
 * Exit: 0 all passed; 1 a failure; 77 the host data path is not available yet (or no case of
 * the selection is available). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll_case.h"
#include "coll_exec.h"
#include "testutil.h"

#define CORE_COLLS                                                                      \
  ((1u << COLL_ALLREDUCE) | (1u << COLL_REDUCE) | (1u << COLL_BROADCAST) |              \
   (1u << COLL_ALLGATHER) | (1u << COLL_REDUCESCATTER) | (1u << COLL_SENDRECV))
#define EXTRA_COLLS ((1u << COLL_ALLTOALL) | (1u << COLL_GATHER) | (1u << COLL_SCATTER))

static void usage(void) {
  fprintf(stderr, "usage: coll_matrix [--ranks 2|2-8|1,3,5] [--transport shm|net|all] "
                  "[--colls core|extra|all|AllReduce,…] [--big] [--extra N] [--default-seed S]\n");
  exit(2);
}

/* "2", "2-8", "1,3,5" → bit mask of rank counts (1..64). */
static uint64_t parse_ranks(const char* s) {
  uint64_t m = 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int a = 0, b = 0;
    if (sscanf(t, "%d-%d", &a, &b) != 2) b = a = atoi(t);
    if (a < 1 || b > 64 || a > b) usage();
    for (int i = a; i <= b; i++) m |= 1ull << (i - 1);
  }
  return m;
}

static unsigned parse_colls(const char* s) {
  if (!strcasecmp(s, "core")) return CORE_COLLS;
  if (!strcasecmp(s, "extra")) return EXTRA_COLLS;
  if (!strcasecmp(s, "all")) return CORE_COLLS | EXTRA_COLLS;
  unsigned m = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int found = 0;
    for (int c = 0; c < COLL_NUM; c++)
      if (!strcasecmp(t, coll_kind_name[c])) m |= 1u << c, found = 1;
    if (!found) usage();
  }
  return m;
}

static int optional_coll(coll_kind c) { return (EXTRA_COLLS >> c) & 1; }

static int env_int(const char* name, int fallback) {
  const char* s = getenv(name);
  return s && *s ? atoi(s) : fallback;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  coll_set_argv0(argv[0]);
  uint64_t ranks = 1ull << 1, default_seed = 0x5eedc011ull;
  unsigned transports = 1u << TR_SHM, colls = CORE_COLLS;
  int big = 0, extra = 8;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--big")) {
      big = 1;
      continue;
    }
    if (!v) usage();
    i++;
    if (!strcmp(a, "--ranks")) {
      ranks = parse_ranks(v);
    } else if (!strcmp(a, "--transport")) {
      transports = !strcmp(v, "shm") ? 1u << TR_SHM : !strcmp(v, "net") ? 1u << TR_NET : 3u;
      if (strcmp(v, "shm") && strcmp(v, "net") && strcmp(v, "all") && strcmp(v, "shm,net")) usage();
    } else if (!strcmp(a, "--colls")) {
      colls = parse_colls(v);
    } else if (!strcmp(a, "--extra")) {
      extra = atoi(v);
    } else if (!strcmp(a, "--default-seed")) {
      default_seed = strtoull(v, NULL, 0);
    } else {
      usage();
    }
  }
  const uint64_t seed = test_seed(default_seed);
  const int full = env_int("WEFT_TEST_FULL", 0) != 0;
  const int verbose = env_int("WEFT_COLL_VERBOSE", 0) != 0;
  const int timeout_s = env_int("WEFT_COLL_TIMEOUT", full ? 86400 : 240);
  const char* only = getenv("WEFT_COLL_CASE");
  const char* filter = getenv("WEFT_COLL_FILTER");
  const int all48 = getenv("WEFT_COLL_FULL_48M") && !strcmp(getenv("WEFT_COLL_FULL_48M"), "all");

  const int list_only = env_int("WEFT_COLL_LIST", 0) != 0;

  /* Is there a data path at all? (Not asked when only listing.) */
  int feat[FEAT_NUM];
  char na_msg[256] = "";
  for (int f = 0; f < FEAT_NUM; f++) feat[f] = FEAT_OK;
  if (!list_only && coll_probe(feat, na_msg, sizeof na_msg) != 0) {
    fprintf(stderr, "FAIL: the probe on a 1-rank communicator did not complete\n");
    return 1;
  }
  if (feat[COLL_ALLREDUCE] == FEAT_NA) {
    printf("SKIP: the host data path is not available yet (ncclAllReduce on a 1-rank "
           "communicator: %s)\n",
           na_msg);
    return TEST_SKIP_RC;
  }

  /* The cases. */
  coll_case_list all = {0};
  if (only && *only) {
    coll_case c;
    if (coll_case_parse(only, &c) != 0) {
      fprintf(stderr, "WEFT_COLL_CASE=%s is not a valid case; the form is %s\n", only,
              coll_case_form);
      return 2;
    }
    coll_list_add(&all, &c);
  } else {
    for (int n = 1; n <= 64; n++) {
      if (!(ranks >> (n - 1) & 1)) continue;
      for (int tr = 0; tr < TR_NUM; tr++) {
        if (!(transports >> tr & 1)) continue;
        coll_space sp = {n, (coll_transport)tr, colls, big, extra};
        if (full) sp.big = all48 ? 2 : 1;
        coll_case_list l = {0};
        if (full)
          coll_full_matrix(&sp, seed, &l);
        else
          coll_sample(&sp, seed, &l);
        for (int i = 0; i < l.n; i++)
          if (coll_case_matches(&l.v[i], filter)) coll_list_add(&all, &l.v[i]);
        coll_list_free(&l);
      }
    }
  }

  if (list_only) {
    for (int i = 0; i < all.n; i++) {
      char name[COLL_CASE_STR];
      coll_case_format(&all.v[i], name);
      printf("%s\n", name);
    }
    fprintf(stderr, "coll_matrix: seed 0x%" PRIx64 ", %d cases (%s)\n", seed, all.n,
            full ? "full matrix" : "CI sample");
    coll_list_free(&all);
    return 0;
  }

  /* Drop what the library does not offer: optional collectives are skipped, anything else
   * missing is a failure. */
  coll_case_list run = {0};
  int skipped = 0, missing = 0, said[FEAT_NUM] = {0};
  for (int i = 0; i < all.n; i++) {
    const coll_case* c = &all.v[i];
    int f = c->coll;
    if (feat[f] == FEAT_OK && c->op == OP_PREMULSUM) f = FEAT_PREMULSUM;
    if (feat[f] == FEAT_OK && c->op == OP_CUSTOM) f = FEAT_CUSTOM;
    if (feat[f] != FEAT_NA) {
      coll_list_add(&run, c);
      continue;
    }
    int opt = f < COLL_NUM && optional_coll((coll_kind)f);
    if (opt) skipped++;
    else missing++;
    if (!said[f]++)
      printf("%s %s: not available yet in this library\n", opt ? "SKIP" : "NOT AVAILABLE (required):",
             coll_feature_name[f]);
  }
  printf("coll_matrix: seed 0x%" PRIx64 " (WEFT_TEST_SEED), %s, %d cases to run, %d skipped, "
         "%d not available\n",
         seed, only && *only ? "one case (WEFT_COLL_CASE)" : full ? "full matrix" : "CI sample",
         run.n, skipped, missing);
  fflush(stdout);
  if (run.n == 0 && missing == 0) {
    printf("SKIP: nothing of this selection is available yet\n");
    return TEST_SKIP_RC;
  }

  /* One communicator (one set of forked ranks) per configuration. */
  int* status = calloc((size_t)(run.n ? run.n : 1), sizeof *status);
  int configs = 0, bad_configs = 0;
  for (int i = 0; i < run.n;) {
    int j = i;
    while (j < run.n && run.v[j].nranks == run.v[i].nranks &&
           run.v[j].transport == run.v[i].transport && run.v[j].algo == run.v[i].algo &&
           run.v[j].proto == run.v[i].proto)
      j++;
    const coll_case* c = &run.v[i];
    if (verbose)
      printf("configuration: %d ranks, %s, NCCL_ALGO=%s NCCL_PROTO=%s: %d cases\n", c->nranks,
             coll_transport_name[c->transport], coll_algo_name[c->algo],
             coll_proto_name[c->proto], j - i);
    fflush(stdout);
    configs++;
    if (coll_run_config(&run.v[i], j - i, seed, &status[i], timeout_s, verbose) != 0) {
      bad_configs++;
      fprintf(stderr, "FAIL: configuration %d ranks, %s, NCCL_ALGO=%s NCCL_PROTO=%s\n",
              c->nranks, coll_transport_name[c->transport], coll_algo_name[c->algo],
              coll_proto_name[c->proto]);
    }
    i = j;
  }

  int passed = 0, failed = 0, notrun = 0, na = 0;
  for (int i = 0; i < run.n; i++) {
    int s = status[i];
    if (s & COLL_STATUS_FAIL) failed++;
    else if (s & COLL_STATUS_NA) na++;
    else if (s & COLL_STATUS_RUN) passed++;
    else notrun++;
  }
  printf("coll_matrix: %d cases on %d communicators: %d passed, %d failed, %d not run, %d "
         "answered \"not available yet\"\n",
         run.n, configs, passed, failed, notrun, na);
  int shown = 0;
  for (int i = 0; i < run.n && shown < 12; i++)
    if ((status[i] & COLL_STATUS_FAIL) || !status[i]) {
      printf("%s ", status[i] ? "failed:" : "not run:");
      coll_print_rerun(stdout, seed, &run.v[i]);
      shown++;
    }
  for (int i = 0; i < run.n; i++)
    if (status[i] == COLL_STATUS_NA && !optional_coll(run.v[i].coll)) {
      char name[COLL_CASE_STR];
      coll_case_format(&run.v[i], name);
      printf("not available (required): %s\n", name);
      break;
    }
  int ok = failed == 0 && notrun == 0 && bad_configs == 0 && missing == 0;
  for (int i = 0; i < run.n; i++)
    if (status[i] == COLL_STATUS_NA && !optional_coll(run.v[i].coll)) ok = 0;
  free(status);
  coll_list_free(&run);
  coll_list_free(&all);
  if (ok && passed == 0) {
    printf("SKIP: every case answered \"not available yet\"\n");
    return TEST_SKIP_RC;
  }
  return ok ? 0 : 1;
}
