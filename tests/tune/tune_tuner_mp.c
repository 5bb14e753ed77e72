/* A tuner plugin's choice changes what runs, and a broken one changes nothing but one WARN.
 *
 * Each case runs 2 host ranks (fresh processes: fork, then exec of this program with the case's
 * environment, so every rank reads its settings anew) that issue AllReduce of 8 B, 4 KiB,
 * 64 KiB and 1 MiB twice, then a Broadcast, checking every result exactly. NCCL_DEBUG=INFO
 * NCCL_DEBUG_SUBSYS=TUNING goes to one log file per rank; the parent then reads, per rank:
 *  - the "runs A/P" lines the plan writes from each op's work items (what the executor was
 *    handed, not what the table said): they must match the case's expectation, or, for cases
 *    where the model decides, the model's own decision line for the same op;
 *  - the WARN lines: exactly the case's (once, however many ops), or none.
 *
 * Usage: tune_tuner_mp CASE   (CASE from the table below; "list" prints them) */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccl.h"
#include "testutil.h"

#ifndef WEFT_TEST_PLUGIN_DIR
#error "WEFT_TEST_PLUGIN_DIR must name the directory of the test tuner plugins"
#endif

typedef struct {
  const char* name;
  const char* plugin; /* NCCL_TUNER_PLUGIN ("@" stands for the test plugin dir); NULL: unset */
  const char* rank1_plugin; /* when rank 1 differs */
  const char* yaml;         /* rules for WEFT_TUNER_CONFIG */
  const char* csv;          /* rules for NCCL_TUNER_CONFIG_FILE */
  int policy;               /* set the tuner through a WEFT_POLICY file instead of the env */
  const char* runs;         /* AllReduce 8 B, 4 KiB, 64 KiB, 1 MiB; "model": the model's */
  const char* warn;         /* the one WARN (every rank), or NULL: none */
  int warn_rank0_only;
  const char* allow;        /* other WARN lines allowed (the plugin's own, naming the file) */
  const char* net_plugin;   /* NCCL_NET_PLUGIN ("@" as above); NULL: unset */
} tcase;

#define REF_RUNS "Tree/LL,Tree/LL,Tree/LL,Ring/Simple"

static const char* yaml_rules =
    "rules:\n"
    "  - collective: allreduce\n"
    "    bytes: [0, 4K]\n"
    "    algorithm: ring\n"
    "    protocol: ll\n"
    "  - collective: allreduce\n"
    "    algorithm: tree\n"
    "    protocol: simple\n";
/* weft's algorithms named through weft's extension (the plugin exports weftTunerAlgorithms). */
static const char* yaml_direct_rules =
    "rules:\n"
    "  - collective: allreduce\n"
    "    bytes: [0, 4K]\n"
    "    algorithm: oneshot\n"
    "    protocol: ll\n"
    "  - collective: allreduce\n"
    "    bytes: [4097, 64K]\n"
    "    algorithm: two_shot\n"
    "    protocol: simple\n"
    "  - collective: allreduce\n"
    "    algorithm: ring\n"
    "    protocol: simple\n";
static const char* csv_rules =
    "# NCCL's example format\n"
    "allreduce,0,65536,tree,ll,-1,-1,-1\n"
    "allreduce,65537,-1,ring,ll,-1,-1,-1\n";

static const tcase cases[] = {
    {"model", "none", NULL, NULL, NULL, 0, "model", NULL, 0, NULL, NULL},
    {"reftuner_by_name", "reftuner", NULL, NULL, NULL, 0, REF_RUNS, NULL, 0, NULL, NULL},
    {"reftuner_by_path", "@/libnccl-tuner-reftuner.so", NULL, NULL, NULL, 0, REF_RUNS, NULL, 0, NULL, NULL},
    {"reftuner_v2", "reftuner-v2", NULL, NULL, NULL, 0, REF_RUNS, NULL, 0, NULL, NULL},
    {"reftuner_v3", "reftuner-v3", NULL, NULL, NULL, 0, REF_RUNS, NULL, 0, NULL, NULL},
    {"reftuner_v4", "reftuner-v4", NULL, NULL, NULL, 0, REF_RUNS, NULL, 0, NULL, NULL},
    {"reftuner_v5", "reftuner-v5", NULL, NULL, NULL, 0, REF_RUNS, NULL, 0, NULL, NULL},
    {"weft_yaml", "weft", NULL, "yaml", NULL, 0, "Ring/LL,Ring/LL,Tree/Simple,Tree/Simple", NULL, 0, NULL, NULL},
    {"weft_yaml_direct", "weft", NULL, "direct", NULL, 0,
     "OneShot/LL,OneShot/LL,TwoShot/Simple,Ring/Simple", NULL, 0, NULL, NULL},
    {"weft_csv", "weft", NULL, NULL, "csv", 0, "Tree/LL,Tree/LL,Tree/LL,Ring/LL", NULL, 0, NULL, NULL},
    {"weft_policy", NULL, NULL, "yaml", NULL, 1, "Ring/LL,Ring/LL,Tree/Simple,Tree/Simple", NULL, 0, NULL, NULL},
    {"weft_no_rules", "weft", NULL, NULL, NULL, 0, "model", NULL, 0, NULL, NULL},
    {"weft_bad_rules", "weft", NULL, "bad", NULL, 0, "model", "init(nRanks 2, nNodes 1) failed", 0,
     "TUNER/weft: ", NULL},
    {"missing_library", "doesnotexist", NULL, NULL, NULL, 0, "model", "no such library", 0, NULL, NULL},
    {"null_init", "broken-nullinit", NULL, NULL, NULL, 0, "model",
     "ncclTunerPlugin_v4: init is NULL", 0, NULL, NULL},
    {"null_getcollinfo", "broken-nullget", NULL, NULL, NULL, 0, "model",
     "ncclTunerPlugin_v5: getCollInfo is NULL", 0, NULL, NULL},
    {"init_fails", "broken-initfails", NULL, NULL, NULL, 0, "model", "failed (ncclSystemError)", 0, NULL, NULL},
    {"getcollinfo_fails", "broken-getfails", NULL, NULL, NULL, 0, "model",
     "returned ncclInternalError", 0, NULL, NULL},
    {"writes_ignored_cell", "broken-ignoredcells", NULL, NULL, NULL, 0, "model",
     "which was NCCL_ALGO_PROTO_IGNORE", 0, NULL, NULL},
    {"nan_cell", "broken-nan", NULL, NULL, NULL, 0, "model", "left nan", 0, NULL, NULL},
    {"negative_channels", "broken-badchannels", NULL, NULL, NULL, 0, REF_RUNS,
     "set nChannels to -3", 0, NULL, NULL},
    {"v2_bad_index", "broken-v2badindex", NULL, NULL, NULL, 0, "model", "chose algorithm 42", 0, NULL, NULL},
    /* Raising the other cells is legal: the one left cheapest runs (Tree/LL, first in order). */
    {"raises_cells", "broken-raises", NULL, NULL, NULL, 0, "Tree/LL,Tree/LL,Tree/LL,Tree/LL", NULL, 0, NULL, NULL},
    /* No NCCL_TUNER_PLUGIN, no libnccl-tuner.so: the tuner inside the net plugin's library. */
    {"net_plugin_fallback", NULL, NULL, NULL, NULL, 0, REF_RUNS, NULL, 0, NULL,
     "@/libnccl-net-withtuner.so"},
    {"ranks_disagree", "reftuner", "none", NULL, NULL, 0, "model", "ranks disagree on the tuner", 1, NULL, NULL},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static const size_t ar_bytes[] = {8, 4096, 65536, 1 << 20};
enum { NSIZES = sizeof ar_bytes / sizeof ar_bytes[0], REPEAT = 2 };

static char dir[256];

static void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  fputs(text, f);
  fclose(f);
}

static int32_t value(int rank, size_t i, int op) {
  return (int32_t)((rank * 7919 + (int)(i % 1009) * 31 + op * 13) % 2001) - 1000;
}

/* ---- one rank (after exec) ---- */

static int run_rank(int rank, int nranks, const char* idhex) {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof id.internal; i++) {
    unsigned v;
    EXPECT(sscanf(idhex + 2 * i, "%2x", &v) == 1);
    id.internal[i] = (char)v;
  }
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, id, rank));
  size_t maxn = ar_bytes[NSIZES - 1] / sizeof(int32_t);
  int32_t *s = malloc(maxn * sizeof *s), *r = malloc(maxn * sizeof *r);
  EXPECT(s && r);
  int op = 0;
  for (int rep = 0; rep < REPEAT; rep++)
    for (int k = 0; k < NSIZES; k++, op++) {
      size_t n = ar_bytes[k] / sizeof(int32_t);
      for (size_t i = 0; i < n; i++) s[i] = value(rank, i, op);
      EXPECT_OK(ncclAllReduce(s, r, n, ncclInt32, ncclSum, comm, NULL));
      for (size_t i = 0; i < n; i++) {
        int32_t want = 0;
        for (int q = 0; q < nranks; q++) want += value(q, i, op);
        if (r[i] != want) {
          fprintf(stderr, "rank %d: AllReduce of %zu B: element %zu is %d, expected %d\n", rank,
                  ar_bytes[k], i, r[i], want);
          return 1;
        }
      }
    }
  size_t n = 1000;
  for (size_t i = 0; i < n; i++) s[i] = rank == 0 ? value(0, i, 99) : 0;
  EXPECT_OK(ncclBroadcast(s, r, n, ncclInt32, 0, comm, NULL));
  for (size_t i = 0; i < n; i++) EXPECT_EQ_INT(r[i], value(0, i, 99));
  EXPECT_OK(ncclCommFinalize(comm));
  EXPECT_OK(ncclCommDestroy(comm));
  free(s);
  free(r);
  return 0;
}

/* ---- the parent: environment per rank, then the logs ---- */

static const tcase* the_case;
static char idhex[2 * NCCL_UNIQUE_ID_BYTES + 1];
static char self[1024];

static void set_plugin(const char* spec) {
  if (spec == NULL) return;
  char buf[512];
  if (spec[0] == '@')
    snprintf(buf, sizeof buf, "%s%s", WEFT_TEST_PLUGIN_DIR, spec + 1);
  else if (strcmp(spec, "weft") == 0)
    snprintf(buf, sizeof buf, "%s/libnccl-tuner-weft.so", WEFT_TEST_LIBDIR);
  else
    snprintf(buf, sizeof buf, "%s", spec);
  setenv("NCCL_TUNER_PLUGIN", buf, 1);
}

static int exec_rank(int rank, int nranks, ncclUniqueId* unused, void* arg) {
  (void)unused, (void)arg;
  const tcase* c = the_case;
  char path[512], rs[16], ns[16];
  snprintf(path, sizeof path, "%s/rank%d.log", dir, rank);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
  setenv("NCCL_DEBUG_FILE", path, 1);
  setenv("WEFT_DEVICE", "host", 1);
  setenv("LD_LIBRARY_PATH", WEFT_TEST_PLUGIN_DIR, 1);
  unsetenv("NCCL_TUNER_PLUGIN");
  unsetenv("WEFT_TUNER_CONFIG");
  unsetenv("NCCL_TUNER_CONFIG_FILE");
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  setenv("WEFT_POLICY", "none", 1);
  set_plugin(rank == 1 && c->rank1_plugin ? c->rank1_plugin : c->plugin);
  unsetenv("NCCL_NET_PLUGIN");
  if (c->net_plugin) {
    snprintf(path, sizeof path, "%s%s", WEFT_TEST_PLUGIN_DIR, c->net_plugin + 1);
    setenv("NCCL_NET_PLUGIN", path, 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  }
  if (c->yaml && c->policy) {
    snprintf(path, sizeof path, "%s/policy.yaml", dir);
    setenv("WEFT_POLICY", path, 1);
  } else if (c->yaml) {
    snprintf(path, sizeof path, "%s/rules.yaml", dir);
    setenv("WEFT_TUNER_CONFIG", path, 1);
  }
  if (c->csv) {
    snprintf(path, sizeof path, "%s/rules.conf", dir);
    setenv("NCCL_TUNER_CONFIG_FILE", path, 1);
  }
  snprintf(rs, sizeof rs, "%d", rank);
  snprintf(ns, sizeof ns, "%d", nranks);
  execl(self, self, "--rank", rs, ns, idhex, (char*)NULL);
  perror("exec");
  return 1;
}

/* The next "runs" or decision line for func from position *pos of log; 0 at the end. */
static int next_line(const char* log, size_t* pos, const char* key, char* out, size_t len) {
  const char* p = log + *pos;
  while (*p) {
    const char* e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    const char* hit = NULL;
    for (const char* q = p; q + strlen(key) <= p + l; q++)
      if (strncmp(q, key, strlen(key)) == 0) {
        hit = q + strlen(key);
        break;
      }
    *pos = (size_t)(p - log) + l + (e ? 1 : 0);
    if (hit) {
      size_t w = strcspn(hit, " \n");
      snprintf(out, len, "%.*s", (int)w, hit);
      return 1;
    }
    p = log + *pos;
  }
  return 0;
}

static char* slurp(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 1 << 22;
  char* buf = malloc(cap);
  size_t n = buf ? fread(buf, 1, cap - 1, f) : 0;
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

static int check_rank(int rank) {
  const tcase* c = the_case;
  char path[512];
  snprintf(path, sizeof path, "%s/rank%d.log", dir, rank);
  char* log = slurp(path);
  if (!log) {
    fprintf(stderr, "rank %d: no log at %s\n", rank, path);
    return 1;
  }
  int bad = 0;
  /* WARNs: exactly the expected one, once. */
  int warns = 0, matching = 0;
  for (char* l = log; l && *l;) {
    char* e = strchr(l, '\n');
    if (e) *e = '\0';
    if (strstr(l, " WARN ")) {
      warns++;
      if (c->warn && strstr(l, c->warn))
        matching++;
      else if (c->allow && strstr(l, c->allow))
        warns--;
      else
        fprintf(stderr, "rank %d: WARN: %s\n", rank, l);
    }
    if (e) *e = '\n';
    l = e ? e + 1 : NULL;
  }
  int want = c->warn && (!c->warn_rank0_only || rank == 0) ? 1 : 0;
  if (warns != want || matching != want) {
    fprintf(stderr, "rank %d: %d WARN line(s), %d naming \"%s\"; expected %d\n", rank, warns,
            matching, c->warn ? c->warn : "", want);
    bad = 1;
  }
  /* What ran, op by op, against the expectation or the model's decision. */
  size_t rpos = 0, dpos = 0;
  for (int op = 0; op < REPEAT * NSIZES + 1; op++) {
    char ran[64], decided[64], key[64];
    snprintf(key, sizeof key, "seq %d runs ", op + 1);
    int is_bcast = op == REPEAT * NSIZES;
    if (!next_line(log, &rpos, key, ran, sizeof ran) ||
        !next_line(log, &dpos, is_bcast ? "Broadcast 4000 bytes -> " : " bytes -> ", decided,
                   sizeof decided)) {
      fprintf(stderr, "rank %d: op %d: no runs/decision line in the log\n", rank, op + 1);
      bad = 1;
      break;
    }
    char expect[64];
    snprintf(expect, sizeof expect, "%s", decided);
    if (!is_bcast && strcmp(c->runs, "model") != 0) {
      const char* p = c->runs;
      for (int k = 0; k < op % NSIZES; k++) p = strchr(p, ',') + 1;
      snprintf(expect, sizeof expect, "%.*s", (int)strcspn(p, ","), p);
    }
    if (strcmp(ran, expect) != 0 || strcmp(ran, decided) != 0) {
      fprintf(stderr, "rank %d: op %d (%s %zu B) ran %s; decided %s, expected %s\n", rank, op + 1,
              is_bcast ? "Broadcast" : "AllReduce", is_bcast ? (size_t)4000 : ar_bytes[op % NSIZES],
              ran, decided, expect);
      bad = 1;
    }
  }
  /* Where the model decides, no decision may claim the tuner's hand. */
  if (strcmp(c->runs, "model") == 0 && strstr(log, "chosen by tuner")) {
    fprintf(stderr, "rank %d: a decision says \"chosen by tuner\" where the model decides\n", rank);
    bad = 1;
  }
  if (bad) fprintf(stderr, "--- rank %d log (%s) ---\n%s\n", rank, path, log);
  free(log);
  return bad;
}

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "--rank") == 0) return run_rank(atoi(argv[2]), atoi(argv[3]), argv[4]);
  test_require_weft_lib();
  if (argc == 2 && strcmp(argv[1], "list") == 0) {
    for (int i = 0; i < NCASES; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  EXPECT(argc == 2);
  for (int i = 0; i < NCASES; i++)
    if (strcmp(cases[i].name, argv[1]) == 0) the_case = &cases[i];
  if (!the_case) {
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
  }
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  EXPECT(n > 0);
  self[n] = '\0';
  snprintf(dir, sizeof dir, "/tmp/weft-tune-mp-%d", (int)getpid());
  EXPECT(mkdir(dir, 0700) == 0);
  char path[512];
  if (the_case->yaml) {
    snprintf(path, sizeof path, "%s/rules.yaml", dir);
    write_file(path, strcmp(the_case->yaml, "bad") == 0      ? "rules:\n  - algorithm: rign\n"
                     : strcmp(the_case->yaml, "direct") == 0 ? yaml_direct_rules
                                                             : yaml_rules);
    if (the_case->policy) {
      char pol[1024], ppath[512];
      snprintf(pol, sizeof pol,
               "version: 1\ndefaults:\n  tuner:\n    plugin: %s/libnccl-tuner-weft.so\n"
               "    config: %s\n",
               WEFT_TEST_LIBDIR, path);
      snprintf(ppath, sizeof ppath, "%s/policy.yaml", dir);
      write_file(ppath, pol);
    }
  }
  if (the_case->csv) {
    snprintf(path, sizeof path, "%s/rules.conf", dir);
    write_file(path, csv_rules);
  }
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id));
  for (size_t i = 0; i < sizeof id.internal; i++)
    snprintf(idhex + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
  int rc = test_fork_plain(2, exec_rank, NULL, 60);
  for (int r = 0; r < 2 && rc == 0; r++) rc |= check_rank(r);
  if (rc == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return rc;
}
