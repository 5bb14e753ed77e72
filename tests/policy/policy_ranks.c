/* Policy agreement across forked ranks of one communicator (host mode, one machine):
 *   agree         one file: init passes, the cluster's settings are in every rank's
 *                 environment, and a rank whose environment sets a name keeps its value
 *   deferred      the cluster depends on nodes / ranks per node: chosen after the rank
 *                 exchange and applied then
 *   files-differ  rank 2 reads another file: every rank fails, naming ranks and clusters
 *   invalid       rank 1's file is invalid: every rank fails, naming rank 1 and the error
 *   env           the ranks of one host differ only by an env: condition: every rank fails,
 *                 and the hint names that condition, not --hostname
 *   hosts         each rank in its own UTS namespace with its own host name (root or user
 *                 namespaces; skipped otherwise): a file that sends hosts to different
 *                 clusters fails with the named error, a consistent one passes
 * Usage: policy_ranks CASE */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char tmpdir[] = "/tmp/weft-policy-ranks-XXXXXX";

typedef struct {
  const char* file[8]; /* per rank */
  int uts;             /* each rank: its own host name polhost-<rank> */
} case_args;

static const char* write_policy(const char* name, const char* text) {
  static char paths[8][PATH_MAX];
  static int n;
  char* path = paths[n++ % 8];
  snprintf(path, PATH_MAX, "%s/%s", tmpdir, name);
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  fputs(text, f);
  fclose(f);
  return path;
}

static const char* last_error(void) { return ncclGetLastError(NULL); }

#define EXPECT_ERR_HAS(text)                                                           \
  do {                                                                                 \
    if (strstr(last_error(), (text)) == NULL) {                                        \
      fprintf(stderr, "%s:%d: last error lacks \"%s\": %s\n", __FILE__, __LINE__, (text), \
              last_error());                                                           \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static void enter_uts(int rank) {
  char name[32];
  snprintf(name, sizeof name, "polhost-%d", rank);
  if (unshare(CLONE_NEWUTS) != 0 || sethostname(name, strlen(name)) != 0) {
    perror("unshare/sethostname");
    exit(1);
  }
}

static ncclResult_t init(int rank, int nranks, ncclUniqueId* id, const case_args* a,
                         ncclComm_t* comm) {
  if (a->uts) enter_uts(rank);
  setenv("WEFT_POLICY", a->file[rank], 1);
  return ncclCommInitRank(comm, nranks, *id, rank);
}

static const char* env_or(const char* name) {
  const char* v = getenv(name);
  return v ? v : "(unset)";
}

static int agree_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  if (rank == 1) setenv("NCCL_ALGO", "Tree", 1); /* the user's choice wins on this rank */
  ncclComm_t comm;
  EXPECT_OK(init(rank, nranks, id, arg, &comm));
  EXPECT(!strcmp(env_or("NCCL_NET_PLUGIN"), "none"));
  EXPECT(!strcmp(env_or("NCCL_NET"), "Socket"));
  EXPECT(!strcmp(env_or("NCCL_ALGO"), rank == 1 ? "Tree" : "Ring"));
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

static int deferred_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  ncclComm_t comm;
  EXPECT_OK(init(rank, nranks, id, arg, &comm));
  /* One host, 3 ranks: not 'multi-node' (nodes >= 2), but 'dense' (ranks_per_node >= 3). */
  EXPECT(!strcmp(env_or("NCCL_PROTO"), "LL"));
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

static int mismatch_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT_RES(init(rank, nranks, id, arg, &comm), ncclInvalidUsage);
  EXPECT_ERR_HAS("policy mismatch");
  EXPECT_ERR_HAS("ranks 0-1 (");
  EXPECT_ERR_HAS("chose cluster 'alpha'");
  EXPECT_ERR_HAS("rank 2 (");
  EXPECT_ERR_HAS("chose cluster 'beta'");
  return 0;
}

static int env_split_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  if (rank == 1) setenv("POLTEST_TAG", "on", 1);
  ncclComm_t comm = NULL;
  EXPECT_RES(init(rank, nranks, id, arg, &comm), ncclInvalidUsage);
  EXPECT_ERR_HAS("policy mismatch");
  EXPECT_ERR_HAS("rank 1 (");
  EXPECT_ERR_HAS("chose cluster 'tagged'");
  EXPECT_ERR_HAS("ranks of one host chose differently: the file's env: conditions "
                 "(POLTEST_TAG of 'tagged')");
  if (strstr(last_error(), "--hostname")) {
    fprintf(stderr, "the hint suggests --hostname for an env: split: %s\n", last_error());
    exit(1);
  }
  return 0;
}

static int invalid_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT_RES(init(rank, nranks, id, arg, &comm), ncclInvalidUsage);
  EXPECT_ERR_HAS("rank 1 (");
  EXPECT_ERR_HAS("cannot use its policy file");
  EXPECT_ERR_HAS("broken.yaml:3:1: unknown key 'clustr' in the top level "
                 "(did you mean 'clusters'?)");
  return 0;
}

static int hosts_split_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT_RES(init(rank, nranks, id, arg, &comm), ncclInvalidUsage);
  EXPECT_ERR_HAS("policy mismatch");
  EXPECT_ERR_HAS("ranks 0,2 (polhost-0, polhost-2) chose cluster 'even'");
  EXPECT_ERR_HAS("rank 1 (polhost-1) chose cluster 'odd'");
  return 0;
}

static int hosts_agree_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  ncclComm_t comm;
  EXPECT_OK(init(rank, nranks, id, arg, &comm));
  EXPECT(!strcmp(env_or("NCCL_ALGO"), "Ring"));
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

/* Whether a child may enter a new UTS namespace (root, or user namespaces allowed). */
static int uts_available(void) {
  pid_t p = fork();
  if (p == 0) _exit(unshare(CLONE_NEWUTS) == 0 ? 0 : 1);
  int st = 0;
  waitpid(p, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static const char* const same_cluster =
    "version: 1\nclusters:\n"
    "  - name: lab\n    match: {hostname: '*', env: {WEFT_POLICY: true}}\n"
    "    net: {plugin: none, name: Socket}\n    settings: {NCCL_ALGO: Ring}\n";

static void cleanup(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc != 2) {
    fprintf(stderr, "usage: policy_ranks agree|deferred|files-differ|env|invalid|hosts\n");
    return 2;
  }
  EXPECT(mkdtemp(tmpdir) != NULL);
  atexit(cleanup);
  const char* what = argv[1];
  case_args a = {{0}, 0};
  if (!strcmp(what, "agree")) {
    const char* f = write_policy("lab.yaml", same_cluster);
    for (int r = 0; r < 3; r++) a.file[r] = f;
    return test_fork_ranks(3, agree_rank, &a, 60);
  }
  if (!strcmp(what, "deferred")) {
    const char* f = write_policy(
        "deferred.yaml",
        "version: 1\nclusters:\n"
        "  - {name: multi-node, match: {nodes: {min: 2}}, settings: {NCCL_PROTO: Simple}}\n"
        "  - {name: dense, match: {ranks_per_node: {min: 3}}, settings: {NCCL_PROTO: LL}}\n"
        "defaults: {settings: {NCCL_PROTO: LL128}}\n");
    for (int r = 0; r < 3; r++) a.file[r] = f;
    return test_fork_ranks(3, deferred_rank, &a, 60);
  }
  if (!strcmp(what, "files-differ")) {
    const char* f1 =
        write_policy("alpha.yaml", "version: 1\nclusters: [{name: alpha, match: {}}]\n");
    const char* f2 =
        write_policy("beta.yaml", "version: 1\nclusters: [{name: beta, match: {}}]\n");
    a.file[0] = a.file[1] = f1;
    a.file[2] = f2;
    return test_fork_ranks(3, mismatch_rank, &a, 60);
  }
  if (!strcmp(what, "env")) {
    const char* f = write_policy("env.yaml", "version: 1\nclusters:\n"
                                             "  - {name: tagged, match: {env: {POLTEST_TAG: 'on'}}}\n"
                                             "  - {name: plain, match: {}}\n");
    for (int r = 0; r < 3; r++) a.file[r] = f;
    return test_fork_ranks(3, env_split_rank, &a, 60);
  }
  if (!strcmp(what, "invalid")) {
    const char* good = write_policy("lab.yaml", same_cluster);
    const char* bad = write_policy("broken.yaml", "version: 1\n# a typo\nclustr: []\n");
    a.file[0] = a.file[2] = good;
    a.file[1] = bad;
    return test_fork_ranks(3, invalid_rank, &a, 60);
  }
  if (!strcmp(what, "hosts")) {
    if (!uts_available()) {
      printf("SKIP: cannot create UTS namespaces here (needs root or user namespaces)\n");
      return TEST_SKIP_RC;
    }
    a.uts = 1;
    const char* split = write_policy(
        "split.yaml", "version: 1\nclusters:\n"
                      "  - {name: even, match: {hostname: [polhost-0, polhost-2]}}\n"
                      "  - {name: odd, match: {hostname: 'polhost-[13579]'}}\n");
    for (int r = 0; r < 3; r++) a.file[r] = split;
    if (test_fork_ranks(3, hosts_split_rank, &a, 60)) return 1;
    const char* agree = write_policy(
        "hosts.yaml", "version: 1\nclusters:\n"
                      "  - {name: lab, match: {hostname: 'polhost-*'},\n"
                      "     settings: {NCCL_ALGO: Ring}}\n"
                      "  - {name: elsewhere, match: {}}\n");
    for (int r = 0; r < 3; r++) a.file[r] = agree;
    return test_fork_ranks(3, hosts_agree_rank, &a, 60);
  }
  fprintf(stderr, "unknown case '%s'\n", what);
  return 2;
}
