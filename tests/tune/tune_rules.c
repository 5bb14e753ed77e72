/* weft's rule tuner, the rules alone (plugins/tuner/tuner_rules.h): every good file loads, every
 * bad file is refused with the message its first line names ("# expect: TEXT"), NCCL's CSV
 * keeps working (wildcards, bad lines skipped), and applying a rule does what the header says:
 * one cell becomes 0, a set rules the others out, cells marked NCCL_ALGO_PROTO_IGNORE are never
 * written, a rule that names nothing usable is passed over, first match wins; the v6 chunk
 * answer comes from the first rule that applies to the operation, algorithm and protocol.
 *
 * Usage: tune_rules RULES_DIR (tests/tune/rules, with good/ and bad/). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tuner_rules.h"

static char* slurp(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  EXPECT(f != NULL);
  char* buf = malloc(1 << 20);
  EXPECT(buf != NULL);
  *len = fread(buf, 1, (1 << 20) - 1, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

static int ends_with(const char* s, const char* suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int load(const char* path, tuner_rules* r, policy_errors* e) {
  size_t len;
  char* buf = slurp(path, &len);
  int skipped = 0;
  memset(e, 0, sizeof *e);
  int n = ends_with(path, ".conf") || ends_with(path, ".csv")
              ? tuner_rules_load_csv(path, buf, len, r, e, &skipped)
              : tuner_rules_load_yaml(path, buf, len, r, e);
  free(buf);
  return n;
}

static void check_dir(const char* dir, int good) {
  DIR* d = opendir(dir);
  EXPECT(d != NULL);
  int files = 0;
  for (struct dirent* de; (de = readdir(d)) != NULL;) {
    if (de->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    tuner_rules r = {0};
    policy_errors e;
    int n = load(path, &r, &e);
    files++;
    if (good) {
      if (n <= 0 || e.n) {
        fprintf(stderr, "%s: expected to load, got %d rules, %d errors: %s\n", path, n, e.n,
                e.n ? e.msg[0] : "");
        exit(1);
      }
      tuner_rules_free(&r);
      continue;
    }
    size_t len;
    char* buf = slurp(path, &len);
    const char* tag = "# expect: ";
    EXPECT(strncmp(buf, tag, strlen(tag)) == 0);
    char want[256];
    size_t w = strcspn(buf + strlen(tag), "\n");
    snprintf(want, sizeof want, "%.*s", (int)w, buf + strlen(tag));
    free(buf);
    if (n != -1 || e.n == 0 || strstr(e.msg[0], want) == NULL) {
      fprintf(stderr, "%s: expected refusal \"%s\", got %d rules, error \"%s\"\n", path, want, n,
              e.n ? e.msg[0] : "(none)");
      exit(1);
    }
  }
  closedir(d);
  EXPECT(files >= 3);
}

typedef float table_t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];

/* Host-like table: Tree and Ring with LL and Simple usable, everything else ignored. */
static void host_table(table_t t) {
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
      t[a][p] = (a <= NCCL_ALGO_RING && p != NCCL_PROTO_LL128) ? 10.0f + (float)(3 * a + p)
                                                                : (float)NCCL_ALGO_PROTO_IGNORE;
}

static int zero_cell(table_t t, int* algo, int* proto) {
  int found = 0;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
      if (t[a][p] == 0.0f) {
        *algo = a;
        *proto = p;
        found++;
      }
  return found;
}

static void semantics(const char* dir) {
  char path[1024];
  tuner_rules r = {0};
  policy_errors e;
  table_t t;
  int nch, a, p;

  /* host.yaml: rule 1 (tree/simple for small AllReduce on 4+ ranks), rule 2 (LL on 2+ nodes),
   * rule 3 (simple for the rest: a set, rules LL out). */
  snprintf(path, sizeof path, "%s/good/host.yaml", dir);
  EXPECT_EQ_INT(load(path, &r, &e), 4);
  host_table(t);
  nch = 0;
  EXPECT(tuner_rules_apply(&r, ncclFuncAllReduce, 1024, 8, 1, 1, 0, t, &nch) == &r.rules[0]);
  EXPECT_EQ_INT(zero_cell(t, &a, &p), 1);
  EXPECT(a == NCCL_ALGO_TREE && p == NCCL_PROTO_SIMPLE);
  EXPECT_EQ_INT(nch, 0);
  host_table(t);
  EXPECT(tuner_rules_apply(&r, ncclFuncAllGather, 1024, 4, 4, 1, 0, t, &nch) == &r.rules[1]);
  EXPECT(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] < 0 && t[NCCL_ALGO_RING][NCCL_PROTO_LL] > 0);
  host_table(t);
  EXPECT(tuner_rules_apply(&r, ncclFuncAllReduce, 1 << 20, 2, 1, 1, 0, t, &nch) == &r.rules[2]);
  EXPECT(t[NCCL_ALGO_RING][NCCL_PROTO_LL] < 0 && t[NCCL_ALGO_TREE][NCCL_PROTO_LL] < 0);
  EXPECT(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] == 12.0f + 3 &&
         t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] == 12.0f);
  /* Ignored cells are never written, whatever the rule says. */
  EXPECT(t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] == (float)NCCL_ALGO_PROTO_IGNORE);
  tuner_rules_free(&r);

  /* NCCL's CSV: wildcards, the nvls row passed over where NVLS cannot run, channels. */
  snprintf(path, sizeof path, "%s/good/nccl_example.conf", dir);
  EXPECT_EQ_INT(load(path, &r, &e), 6);
  EXPECT_EQ_INT(e.n, 0);
  host_table(t);
  nch = 0;
  EXPECT(tuner_rules_apply(&r, ncclFuncAllReduce, 65536, 16, 2, 1, 0, t, &nch) == &r.rules[0]);
  EXPECT(zero_cell(t, &a, &p) == 1 && a == NCCL_ALGO_TREE && p == NCCL_PROTO_LL);
  EXPECT_EQ_INT(nch, 2);
  host_table(t);
  nch = 0;
  EXPECT(tuner_rules_apply(&r, ncclFuncAllReduce, 65537, 16, 2, 1, 0, t, &nch) == &r.rules[1]);
  EXPECT(zero_cell(t, &a, &p) == 1 && a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE);
  EXPECT_EQ_INT(nch, 0); /* -1: the core's */
  host_table(t);
  EXPECT(tuner_rules_apply(&r, ncclFuncAllGather, 4096, 8, 2, 1, 0, t, &nch) == NULL); /* nNodes 1 */
  host_table(t);
  EXPECT(tuner_rules_apply(&r, ncclFuncAllGather, 4096, 8, 1, 1, 0, t, &nch) == &r.rules[2]);
  host_table(t);
  nch = 0;
  EXPECT(tuner_rules_apply(&r, ncclFuncReduceScatter, 4096, 8, 1, 1, 0, t, &nch) == &r.rules[3]);
  EXPECT_EQ_INT(nch, 4);
  host_table(t);
  EXPECT(tuner_rules_apply(&r, ncclFuncReduceScatter, 4096, 8, 1, 2, 0, t, &nch) == NULL); /* pipe */
  host_table(t);
  EXPECT(tuner_rules_apply(&r, ncclFuncBroadcast, 4096, 8, 1, 1, 0, t, &nch) == &r.rules[5]);
  /* v2's pick: the same first-match, restricted to what the communicator supports. */
  nch = 0;
  EXPECT(tuner_rules_pick(&r, ncclFuncBroadcast, 4096, 8, 1, 1, 1u << NCCL_ALGO_RING, &a, &p,
                          &nch) == &r.rules[5]);
  EXPECT(tuner_rules_pick(&r, ncclFuncBroadcast, 4096, 8, 1, 1, 1u << NCCL_ALGO_NVLS, &a, &p,
                          &nch) == &r.rules[4]);
  EXPECT(a == NCCL_ALGO_NVLS && p == NCCL_PROTO_SIMPLE);
  tuner_rules_free(&r);

  /* CSV lines that do not parse are reported and skipped; the rest still apply. */
  const char* csv =
      "allreduce,0,100,ring,simple,-1,-1,-1\n"
      "allreduce,0,100\n"                    /* too few fields */
      "alltoall,0,100,ring,simple,-1,-1,-1\n" /* unknown collective */
      "allreduce,0,100,ring,ll128,-1,-1,-1,3,7\n" /* bad regBuff */
      "  # a comment\n\n"
      "allgather , 0 , 100 , ring , ll , 3 , -1 , -1 # spaces and a trailing comment\n";
  int skipped = 0;
  memset(&e, 0, sizeof e);
  EXPECT_EQ_INT(tuner_rules_load_csv("inline.conf", csv, strlen(csv), &r, &e, &skipped), 2);
  EXPECT_EQ_INT(skipped, 3);
  EXPECT_EQ_INT(e.n, 3);
  EXPECT(strstr(e.msg[0], "inline.conf:2:") != NULL);
  EXPECT(strstr(e.msg[1], "unknown collective") != NULL);
  EXPECT(strstr(e.msg[2], "regBuff") != NULL);
  EXPECT_EQ_INT(r.rules[1].line, 7);
  EXPECT_EQ_INT(r.rules[1].channels, 3);
  tuner_rules_free(&r);

  /* A rule whose cells cannot run is passed over; the next one acts. Set rules: only usable
   * cells outside the set are ruled out. */
  const char* y =
      "rules:\n"
      "  - algorithm: nvls\n"
      "  - algorithm: [tree, collnet_direct]\n"
      "    channels: 3\n";
  memset(&e, 0, sizeof e);
  EXPECT_EQ_INT(tuner_rules_load_yaml("inline.yaml", y, strlen(y), &r, &e), 2);
  host_table(t);
  nch = 0;
  EXPECT(tuner_rules_apply(&r, ncclFuncAllReduce, 10, 2, 1, 1, 0, t, &nch) == &r.rules[1]);
  EXPECT_EQ_INT(nch, 3);
  EXPECT(t[NCCL_ALGO_RING][NCCL_PROTO_LL] < 0 && t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] < 0);
  EXPECT(t[NCCL_ALGO_TREE][NCCL_PROTO_LL] == 10.0f && t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] == 12.0f);
  EXPECT(t[NCCL_ALGO_COLLNET_DIRECT][NCCL_PROTO_SIMPLE] == (float)NCCL_ALGO_PROTO_IGNORE);
  /* Broadcast has no Tree (the core marks it ignored): both rules pass, the table stays. */
  host_table(t);
  for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++) t[NCCL_ALGO_TREE][q] = (float)NCCL_ALGO_PROTO_IGNORE;
  table_t ref;
  memcpy(ref, t, sizeof t);
  EXPECT(tuner_rules_apply(&r, ncclFuncBroadcast, 10, 2, 1, 1, 0, t, &nch) == NULL);
  EXPECT(memcmp(t, ref, sizeof t) == 0);
  /* Collectives outside 0..4 never match. */
  EXPECT(tuner_rules_apply(&r, ncclFuncSendRecv, 10, 2, 1, 1, 0, t, &nch) == NULL);
  EXPECT(tuner_rules_apply(&r, -1, 10, 2, 1, 1, 0, t, &nch) == NULL);
  tuner_rules_free(&r);
}

/* tuner_rules_chunk against a reference written from the header's rule, on random queries. */
static void chunks(void) {
  const char* y =
      "rules:\n"
      "  - collective: allreduce\n"
      "    bytes: [0, 64K]\n"
      "    algorithm: ring\n"
      "    protocol: ll\n"
      "    chunk: 32K\n"
      "  - collective: [allreduce, broadcast]\n"
      "    nodes: [2, 8]\n"
      "    algorithm: tree\n"
      "  - collective: allreduce\n"
      "    algorithm: [ring, tree]\n"
      "    chunk: 1M\n"
      "  - channels: 2\n"
      "    chunk: 128K\n";
  tuner_rules r;
  policy_errors e;
  memset(&e, 0, sizeof e);
  EXPECT_EQ_INT(tuner_rules_load_yaml("chunks.yaml", y, strlen(y), &r, &e), 4);
  EXPECT(r.rules[0].chunk == 32768 && r.rules[1].chunk == 0 && r.rules[2].chunk == 1u << 20);
  uint64_t rng = test_seed(6);
  for (int i = 0; i < 20000; i++) {
    int coll = (int)(test_rand(&rng) % 6) - 1; /* -1 .. 4 */
    size_t nbytes = (size_t)1 << (test_rand(&rng) % 24);
    size_t nnodes = 1 + test_rand(&rng) % 12;
    int algo = (int)(test_rand(&rng) % (NCCL_NUM_ALGORITHMS + 1)) - (i % 97 == 0);
    int proto = (int)(test_rand(&rng) % (NCCL_NUM_PROTOCOLS + 1));
    int ok = algo >= 0 && algo < NCCL_NUM_ALGORITHMS && proto < NCCL_NUM_PROTOCOLS && coll >= 0;
    uint64_t want = 0; /* 0: untouched */
    if (ok) {
      if (coll == ncclFuncAllReduce && nbytes <= 65536 && algo == NCCL_ALGO_RING &&
          proto == NCCL_PROTO_LL)
        want = 32768;
      else if ((coll == ncclFuncAllReduce || coll == ncclFuncBroadcast) && nnodes >= 2 &&
               nnodes <= 8 && algo == NCCL_ALGO_TREE)
        want = 0; /* the first rule that applies sets no chunk */
      else if (coll == ncclFuncAllReduce && (algo == NCCL_ALGO_RING || algo == NCCL_ALGO_TREE))
        want = 1u << 20;
      else
        want = 131072;
    }
    uint64_t got = 7;
    const tuner_rule* hit =
        tuner_rules_chunk(&r, coll, nbytes, 8, nnodes, algo, proto, &got);
    if ((want == 0) != (hit == NULL) || (want && got != want) || (!want && got != 7)) {
      fprintf(stderr, "chunk(coll %d, %zu bytes, %zu nodes, algo %d, proto %d): got %llu "
              "(rule %d), want %llu\n", coll, nbytes, nnodes, algo, proto,
              (unsigned long long)got, hit ? (int)(hit - r.rules) : -1,
              (unsigned long long)want);
      exit(1);
    }
  }
  tuner_rules_free(&r);
}

static void bytes_parsing(void) {
  uint64_t v;
  EXPECT(tuner_parse_bytes("0", &v) == 0 && v == 0);
  EXPECT(tuner_parse_bytes("64K", &v) == 0 && v == 65536);
  EXPECT(tuner_parse_bytes("1MiB", &v) == 0 && v == 1u << 20);
  EXPECT(tuner_parse_bytes("2gb", &v) == 0 && v == 2ull << 30);
  EXPECT(tuner_parse_bytes("3T", &v) == 0 && v == 3ull << 40);
  EXPECT(tuner_parse_bytes("18446744073709551615", &v) == 0 && v == UINT64_MAX);
  EXPECT(tuner_parse_bytes("18446744073709551616", &v) != 0);
  EXPECT(tuner_parse_bytes("16777216T", &v) != 0); /* overflows */
  EXPECT(tuner_parse_bytes("-1", &v) != 0);
  EXPECT(tuner_parse_bytes("1KB2", &v) != 0);
  EXPECT(tuner_parse_bytes("", &v) != 0);
  EXPECT(tuner_algo_index("NVLSTree") == NCCL_ALGO_NVLS_TREE);
  EXPECT(tuner_algo_index("collnet-direct") == NCCL_ALGO_COLLNET_DIRECT);
  EXPECT(tuner_coll_index("All_Reduce") == ncclFuncAllReduce);
  EXPECT(tuner_proto_index("LL128") == NCCL_PROTO_LL128);
  EXPECT(tuner_proto_index("LL12") == -1);
}

int main(int argc, char** argv) {
  EXPECT(argc == 2);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/good", argv[1]);
  check_dir(dir, 1);
  snprintf(dir, sizeof dir, "%s/bad", argv[1]);
  check_dir(dir, 0);
  semantics(argv[1]);
  chunks();
  bytes_parsing();
  return 0;
}
