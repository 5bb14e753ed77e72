/* The policy engine without a communicator: matching (first match wins, globs, NICs, GPU
 * models from a fake /proc tree, environment conditions, ranges and facts not known yet),
 * what a choice sets and its hash, glob checks, suggestions, file checks, and the precedence
 * of the environment over the policy. Each check names what it expected. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/engine/policy_internal.h"
#include "testutil.h"
#include "util/log.h"
#include "util/param.h"

static char tmpdir[] = "/tmp/weft-policy-unit-XXXXXX";

static weft_policy* load(const char* text) {
  policy_errors e;
  weft_policy* p = NULL;
  if (policy_load_buffer("t.yaml", text, strlen(text), &p, &e) != 0) {
    for (int i = 0; i < e.n; i++) fprintf(stderr, "%s\n", e.msg[i]);
    fprintf(stderr, "expected a valid policy:\n%s\n", text);
    exit(1);
  }
  return p;
}

static void expect_error(const char* text, const char* want) {
  policy_errors e;
  weft_policy* p = NULL;
  if (policy_load_buffer("t.yaml", text, strlen(text), &p, &e) == 0) {
    fprintf(stderr, "expected an error '%s' for:\n%s\n", want, text);
    exit(1);
  }
  if (strstr(e.msg[0], want) == NULL) {
    fprintf(stderr, "expected '%s', got '%s'\n", want, e.msg[0]);
    exit(1);
  }
}

static void facts(policy_facts* f, const char* host) {
  memset(f, 0, sizeof *f);
  snprintf(f->hostname, sizeof f->hostname, "%s", host);
  f->nodes_min = f->rpn_min = 1;
  f->nodes_max = f->rpn_max = INT_MAX;
}

static const char* chosen(const weft_policy* p, const policy_facts* f) {
  policy_choice ch;
  policy_choose(p, f, &ch);
  if (!ch.decided) return "(undecided)";
  return policy_cluster_name(p, ch.cluster);
}

#define EXPECT_STR(a, b)                                                               \
  do {                                                                                 \
    const char *a_ = (a), *b_ = (b);                                                   \
    if (strcmp(a_, b_)) {                                                              \
      fprintf(stderr, "%s:%d: %s is '%s', expected '%s'\n", __FILE__, __LINE__, #a, a_, b_); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static void first_match_wins(void) {
  weft_policy* p = load("version: 1\nclusters:\n"
                        "  - {name: one, match: {hostname: 'gpu-*'}}\n"
                        "  - {name: two, match: {hostname: 'gpu-1*'}}\n"
                        "  - {name: any, match: {}}\n");
  policy_facts f;
  facts(&f, "gpu-12");
  EXPECT_STR(chosen(p, &f), "one");
  facts(&f, "GPU-12"); /* host names compare case-insensitively */
  EXPECT_STR(chosen(p, &f), "one");
  facts(&f, "cpu-1");
  EXPECT_STR(chosen(p, &f), "any");
  char why[512];
  EXPECT_EQ_INT(policy_eval_cluster(p, 0, &f, why, sizeof why), POLICY_NO);
  EXPECT(strstr(why, "hostname 'cpu-1' matches none of 'gpu-*'") != NULL);
  policy_free(p);
}

static void nics_gpus_and_defaults(void) {
  weft_policy* p = load("version: 1\nclusters:\n"
                        "  - {name: ib, match: {nic: 'mlx5_*', gpu: '*h100*'}}\n"
                        "defaults: {settings: {NCCL_ALGO: Ring}}\n");
  policy_facts f;
  facts(&f, "h");
  policy_facts_add_nic(&f, "eth0");
  policy_facts_add_nic(&f, "mlx5_1");
  EXPECT_STR(chosen(p, &f), "(defaults)"); /* no GPU */
  /* A fake /proc/driver/nvidia/gpus tree. */
  char dir[PATH_MAX], sub[PATH_MAX + 32], file[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/gpus", tmpdir);
  EXPECT(mkdir(dir, 0700) == 0);
  snprintf(sub, sizeof sub, "%s/0000:1b:00.0", dir);
  EXPECT(mkdir(sub, 0700) == 0);
  snprintf(file, sizeof file, "%s/information", sub);
  FILE* out = fopen(file, "w");
  EXPECT(out != NULL);
  fprintf(out, "Model: \t\t NVIDIA H100 80GB HBM3  \nIRQ:   \t\t 42\n");
  fclose(out);
  policy_facts_read_gpus(&f, dir);
  EXPECT_EQ_INT(f.ngpus, 1);
  EXPECT_STR(f.gpus[0], "NVIDIA H100 80GB HBM3");
  EXPECT_STR(chosen(p, &f), "ib");
  f.nnics = 0; /* NIC names are case-sensitive */
  policy_facts_add_nic(&f, "MLX5_1");
  EXPECT_STR(chosen(p, &f), "(defaults)");
  const policy_item* items;
  EXPECT_EQ_INT(policy_items(p, -1, &items), 1);
  EXPECT_STR(items[0].value, "Ring");
  policy_free(p);
  /* No defaults: nothing is set. */
  p = load("version: 1\nclusters: [{name: x, match: {hostname: nope}}]\n");
  EXPECT_EQ_INT(policy_items(p, -1, &items), 0);
  EXPECT(policy_settings_hash(p, -1) == 0);
  policy_free(p);
}

static void environment_conditions(void) {
  weft_policy* p = load("version: 1\nclusters:\n"
                        "  - {name: eq, match: {env: {WPU_SITE: \"north\"}}}\n"
                        "  - {name: set, match: {env: {WPU_FLAG: true, WPU_OFF: false}}}\n"
                        "  - {name: quoted-true, match: {env: {WPU_FLAG: \"true\"}}}\n");
  policy_facts f;
  facts(&f, "h");
  unsetenv("WPU_SITE");
  unsetenv("WPU_FLAG");
  unsetenv("WPU_OFF");
  EXPECT_STR(chosen(p, &f), "(defaults)");
  setenv("WPU_FLAG", "yes", 1);
  EXPECT_STR(chosen(p, &f), "set");
  setenv("WPU_OFF", "", 1); /* set, even empty */
  EXPECT_STR(chosen(p, &f), "(defaults)");
  setenv("WPU_FLAG", "true", 1);
  EXPECT_STR(chosen(p, &f), "quoted-true");
  setenv("WPU_SITE", "north", 1);
  EXPECT_STR(chosen(p, &f), "eq");
  setenv("WPU_SITE", "North", 1); /* equality is exact */
  EXPECT_STR(chosen(p, &f), "quoted-true");
  unsetenv("WPU_SITE");
  unsetenv("WPU_FLAG");
  unsetenv("WPU_OFF");
  policy_free(p);
}

static void ranges_and_unknown_facts(void) {
  weft_policy* p = load("version: 1\nclusters:\n"
                        "  - {name: big, match: {nodes: {min: 4}}}\n"
                        "  - {name: dense, match: {ranks_per_node: {min: 2, max: 8}}}\n"
                        "  - {name: rest, match: {}}\n");
  policy_facts f;
  facts(&f, "h");
  EXPECT_STR(chosen(p, &f), "(undecided)");
  f.nodes_max = f.rpn_max = 3; /* a 3-rank communicator: never 4 nodes */
  EXPECT_STR(chosen(p, &f), "(undecided)"); /* ranks per node may still be 2..3 */
  f.nodes_max = f.rpn_max = 1; /* one rank decides everything */
  EXPECT_STR(chosen(p, &f), "rest");
  f.nodes_min = f.nodes_max = 8;
  EXPECT_STR(chosen(p, &f), "big");
  f.nodes_min = f.nodes_max = 2;
  f.rpn_min = f.rpn_max = 8;
  EXPECT_STR(chosen(p, &f), "dense");
  f.rpn_min = f.rpn_max = 9;
  EXPECT_STR(chosen(p, &f), "rest");
  policy_free(p);
}

static void items_and_hash(void) {
  weft_policy* a = load("version: 1\nclusters:\n  - name: c\n    match: {}\n"
                        "    net: {plugin: [ib, /opt/x.so], name: IB}\n"
                        "    settings: {NCCL_BUFFSIZE: 0x100000, NCCL_P2P_DISABLE: yes}\n");
  weft_policy* b = load("version: 1\nclusters:\n  - name: c\n    match: {}\n"
                        "    settings: {NCCL_P2P_DISABLE: 1, NCCL_BUFFSIZE: 1048576}\n"
                        "    net: {name: IB, plugin: [ib, /opt/x.so]}\n");
  weft_policy* c = load("version: 1\nclusters:\n  - name: c\n    match: {}\n"
                        "    net: {plugin: [ib, /opt/x.so], name: IB}\n"
                        "    settings: {NCCL_BUFFSIZE: 0x100000, NCCL_P2P_DISABLE: no}\n");
  const policy_item* it;
  EXPECT_EQ_INT(policy_items(a, 0, &it), 4);
  EXPECT_STR(it[0].name, "NCCL_NET_PLUGIN");
  EXPECT_STR(it[0].value, "ib,/opt/x.so");
  EXPECT_STR(it[1].name, "NCCL_NET");
  EXPECT_STR(it[2].value, "1048576"); /* integers normalized */
  EXPECT_STR(it[3].value, "1");       /* booleans for 0..1 settings */
  /* Same items in another order and spelling: same hash. Another value: another hash. */
  EXPECT(policy_settings_hash(a, 0) == policy_settings_hash(b, 0));
  EXPECT(policy_settings_hash(a, 0) != policy_settings_hash(c, 0));
  EXPECT(policy_settings_hash(a, 0) != 0);
  policy_free(a);
  policy_free(b);
  policy_free(c);
}

static void env_wins_over_policy(void) {
  char log[PATH_MAX];
  snprintf(log, sizeof log, "%s/log.txt", tmpdir);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "ENV", 1);
  setenv("NCCL_DEBUG_FILE", log, 1);
  weft_log_reset();
  setenv("NCCL_PROTO", "LL", 1); /* the user's choice, before weft looked */
  unsetenv("NCCL_ALGO");
  weft_policy* p =
      load("version: 1\ndefaults:\n  settings: {NCCL_PROTO: Simple, NCCL_ALGO: Ring}\n");
  EXPECT_EQ_INT(policy_apply(p, -1), 1);
  EXPECT_STR(getenv("NCCL_PROTO"), "LL");
  EXPECT_STR(getenv("NCCL_ALGO"), "Ring");
  EXPECT_EQ_INT(param_source_of("NCCL_PROTO"), WEFT_SRC_ENV);
  EXPECT_EQ_INT(param_source_of("NCCL_ALGO"), WEFT_SRC_POLICY);
  EXPECT_STR(param_str(WEFT_PARAM_ALGO), "Ring");
  /* A second policy may change what a policy set (not what the user set). */
  weft_policy* q =
      load("version: 1\ndefaults:\n  settings: {NCCL_PROTO: LL128, NCCL_ALGO: Tree}\n");
  EXPECT_EQ_INT(policy_apply(q, -1), 1);
  EXPECT_STR(getenv("NCCL_ALGO"), "Tree");
  EXPECT_STR(getenv("NCCL_PROTO"), "LL");
  policy_free(p);
  policy_free(q);
  unsetenv("NCCL_DEBUG_FILE");
  weft_log_reset(); /* close the file sink (without reopening, which would truncate it) */
  FILE* in = fopen(log, "r");
  EXPECT(in != NULL);
  char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, in);
  text[n] = '\0';
  fclose(in);
  EXPECT(strstr(text, "NCCL_PROTO=LL set in the environment wins over '(defaults)' "
                      "NCCL_PROTO=Simple") != NULL);
  EXPECT(strstr(text, "policy: NCCL_ALGO=Ring (settings of '(defaults)'") != NULL);
  EXPECT(strstr(text, "applied cluster '(defaults)' for an earlier communicator") != NULL);
  unsetenv("NCCL_DEBUG");
  weft_log_reset();
}

static void globs(void) {
  static const struct {
    const char* pat;
    const char* why; /* NULL: valid */
    size_t at;
  } cases[] = {
      {"gpu-*", NULL, 0},
      {"node[0-9][0-9]", NULL, 0},
      {"[!a-c]x", NULL, 0},
      {"[]]", NULL, 0},
      {"a\\*", NULL, 0},
      {"[[:digit:]]*", NULL, 0},
      {"", "empty glob", 0},
      {"ab[cd", "unterminated", 2},
      {"x[z-a]", "reversed", 2},
      {"a b", "whitespace", 1},
      {"a\\", "backslash", 1},
      {"[[:dig:]]", "character class", 1},
      {"a]", "without '['", 1},
      {"[a\tb]", "whitespace", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t at = 99;
    const char* why = pl_glob_check(cases[i].pat, &at);
    if ((why == NULL) != (cases[i].why == NULL) ||
        (why && (strstr(why, cases[i].why) == NULL || at != cases[i].at))) {
      fprintf(stderr, "glob '%s': got %s at %zu, expected %s at %zu\n", cases[i].pat,
              why ? why : "valid", at, cases[i].why ? cases[i].why : "valid", cases[i].at);
      exit(1);
    }
  }
  EXPECT(pl_glob_match("gpu-[0-9]*", "GPU-7a", 1));
  EXPECT(!pl_glob_match("gpu-[0-9]*", "GPU-7a", 0));
}

static void suggestions(void) {
  const char* keys[] = {"hostname", "nic", "gpu", "nodes", "ranks_per_node", "env"};
  EXPECT_STR(pl_suggest("hostnme", keys, 6), "hostname");
  EXPECT_STR(pl_suggest("Hostname", keys, 6), "hostname");
  EXPECT_STR(pl_suggest("ranks_per_nodes", keys, 6), "ranks_per_node");
  EXPECT_STR(pl_suggest("nics", keys, 6), "nic");
  EXPECT(pl_suggest("completely-different", keys, 6) == NULL);
  expect_error("version: 1\nclusters:\n  - {name: a, match: {}, settings: {NCCL_BUFSIZE: 65536}}\n",
               "did you mean 'NCCL_BUFFSIZE'?");
}

static void files(void) {
  policy_errors e;
  weft_policy* p = NULL;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/p.yaml", tmpdir);
  FILE* out = fopen(path, "w");
  EXPECT(out != NULL);
  fprintf(out, "version: 1\n");
  fclose(out);
  EXPECT(chmod(path, 0644) == 0);
  EXPECT_EQ_INT(policy_load_file(path, &p, &e), 0);
  EXPECT_STR(policy_path(p), path);
  policy_free(p);
  EXPECT(chmod(path, 0666) == 0);
  EXPECT_EQ_INT(policy_load_file(path, &p, &e), -1);
  EXPECT(strstr(e.msg[0], "writable by everyone") != NULL);
  EXPECT_EQ_INT(policy_load_file(tmpdir, &p, &e), -1);
  EXPECT(strstr(e.msg[0], "not a regular file") != NULL);
  snprintf(path, sizeof path, "%s/fifo", tmpdir);
  EXPECT(mkfifo(path, 0600) == 0);
  EXPECT_EQ_INT(policy_load_file(path, &p, &e), -1); /* and returns at once */
  EXPECT(strstr(e.msg[0], "not a regular file") != NULL);
  snprintf(path, sizeof path, "%s/missing.yaml", tmpdir);
  EXPECT_EQ_INT(policy_load_file(path, &p, &e), -1);
  EXPECT(strstr(e.msg[0], "No such file") != NULL);
  /* Several errors in one file are all reported, in order. */
  EXPECT_EQ_INT(policy_load_buffer("m.yaml", "version: 1\nfoo: 1\nbar: 2\n", 22, &p, &e), -1);
  EXPECT_EQ_INT(e.n, 2);
  EXPECT(strncmp(e.msg[0], "m.yaml:2:1: ", 12) == 0);
  EXPECT(strncmp(e.msg[1], "m.yaml:3:1: ", 12) == 0);
}

static void cleanup(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void) {
  if (mkdtemp(tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  atexit(cleanup);
  first_match_wins();
  nics_gpus_and_defaults();
  environment_conditions();
  ranges_and_unknown_facts();
  items_and_hash();
  env_wins_over_policy();
  globs();
  suggestions();
  files();
  printf("policy unit tests passed\n");
  return 0;
}
