/* weft's core reads its settings through an env plugin (NCCL_ENV_PLUGIN), in NCCL's order. Each
 * case is a fresh process (the plugin is chosen once per process) running a 1-rank
 * ncclCommInitRank; the stand-in plugin (env_testplug.c) logs what it is asked and answers
 * from a map file. Observables: the init result, the plugin's log and weft's own log file.
 * - v2 by path: init gets weft's NCCL version and a logger; the core asks it WEFT_POLICY and
 *   the buffer sizes; a WEFT_POLICY the plugin answers with a missing path fails init with
 *   ncclInvalidUsage (as a missing WEFT_POLICY from the environment does), and the same run
 *   without that answer succeeds; finalize runs at exit;
 * - v1 named in NCCL_CONF_FILE, not the environment: the conf files apply before the plugin is
 *   chosen; init gets no logger;
 * - a policy setting the plugin also answers: the plugin's value wins, and weft's log says so;
 * - the whole order, one name won at each level: environment > NCCL_CONF_FILE > env plugin >
 *   policy (docs/env.md states it);
 * - NCCL_ENV_PLUGIN=weft (weft's own policy plugin): recognised and not consulted;
 * - a missing library, a failing init: one WARN each, init succeeds from the environment;
 * - none: no plugin.
 * Usage: policy_env_core PLUGIN_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static const char* plugdir;
static char tmpdir[] = "/tmp/weft-envcore-XXXXXX";
static char plog_path[512], wlog_path[512], map_path[512];

static void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  EXPECT(fputs(text, f) >= 0);
  EXPECT(fclose(f) == 0);
  EXPECT(chmod(path, 0644) == 0);
}

static char* read_file(const char* path) {
  static char buf[1 << 16];
  buf[0] = '\0';
  FILE* f = fopen(path, "r");
  if (f == NULL) return buf;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Run a 1-rank init in a child with the given KEY=VALUE environment entries (NULL ends);
 * returns the init result. Both logs start empty. */
static int run_case(const char* const* env) {
  unlink(plog_path);
  unlink(wlog_path);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    unsetenv("NCCL_ENV_PLUGIN");
    unsetenv("WEFT_POLICY");
    unsetenv("NCCL_CONF_FILE");
    setenv("HOME", tmpdir, 1); /* no ~/.nccl.conf of the user's */
    setenv("WEFT_TEST_ENV_LOG", plog_path, 1);
    setenv("WEFT_TEST_ENV_MAP", map_path, 1);
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,ENV", 1);
    setenv("NCCL_DEBUG_FILE", wlog_path, 1);
    for (int i = 0; env[i]; i++) EXPECT(putenv((char*)env[i]) == 0);
    ncclUniqueId id;
    ncclComm_t comm;
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r == ncclSuccess) r = ncclCommInitRank(&comm, 1, id, 0);
    if (r == ncclSuccess) ncclCommDestroy(comm);
    exit((int)r);
  }
  int status = 0;
  EXPECT(waitpid(pid, &status, 0) == pid);
  EXPECT(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static void expect_in(const char* text, const char* want, const char* what) {
  if (strstr(text, want)) return;
  fprintf(stderr, "%s: '%s' not found in:\n%s\n", what, want, text);
  exit(1);
}

static void expect_not_in(const char* text, const char* want, const char* what) {
  if (!strstr(text, want)) return;
  fprintf(stderr, "%s: '%s' found in:\n%s\n", what, want, text);
  exit(1);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  EXPECT(argc == 2);
  plugdir = argv[1];
  EXPECT(mkdtemp(tmpdir) != NULL);
  snprintf(plog_path, sizeof plog_path, "%s/plugin.log", tmpdir);
  snprintf(wlog_path, sizeof wlog_path, "%s/weft.log", tmpdir);
  snprintf(map_path, sizeof map_path, "%s/map", tmpdir);
  char v2[600], v1[600], fail[600], conf[600], policy[600];
  snprintf(v2, sizeof v2, "NCCL_ENV_PLUGIN=%s/libnccl-env-testv2.so", plugdir);
  snprintf(v1, sizeof v1, "%s/libnccl-env-testv1.so", plugdir);
  snprintf(fail, sizeof fail, "NCCL_ENV_PLUGIN=%s/libnccl-env-testfail.so", plugdir);

  /* v2 by path; the plugin answers WEFT_POLICY with a path that does not exist. */
  char missing[600];
  snprintf(missing, sizeof missing, "WEFT_POLICY=%s/no-such-policy.yaml\n", tmpdir);
  write_file(map_path, missing);
  const char* e_v2[] = {v2, NULL};
  EXPECT_EQ_INT(run_case(e_v2), ncclInvalidUsage);
  char* plog = read_file(plog_path);
  expect_in(plog, "init 2.27.7 logger=1", "v2 init");
  expect_in(plog, "get WEFT_POLICY", "the core asks the plugin");
  expect_in(plog, "finalize", "finalize at exit");
  expect_in(read_file(wlog_path), "ENV/Plugin: using test-env (v2)", "weft's log");

  /* The same without that answer: init succeeds, and other settings were asked too. */
  write_file(map_path, "NCCL_UNRELATED=1\n");
  EXPECT_EQ_INT(run_case(e_v2), ncclSuccess);
  plog = read_file(plog_path);
  expect_in(plog, "get NCCL_BUFFSIZE", "NCCL_BUFFSIZE through the plugin");

  /* v1, named only in NCCL_CONF_FILE. */
  snprintf(conf, sizeof conf, "%s/nccl.conf", tmpdir);
  char conf_text[700];
  snprintf(conf_text, sizeof conf_text, "NCCL_ENV_PLUGIN=%s\n", v1);
  write_file(conf, conf_text);
  write_file(map_path, missing);
  char conf_env[700];
  snprintf(conf_env, sizeof conf_env, "NCCL_CONF_FILE=%s", conf);
  const char* e_v1[] = {conf_env, NULL};
  EXPECT_EQ_INT(run_case(e_v1), ncclInvalidUsage);
  plog = read_file(plog_path);
  expect_in(plog, "init 2.27.7 logger=0", "v1 init from the conf file's NCCL_ENV_PLUGIN");
  expect_in(plog, "get WEFT_POLICY", "v1 getEnv");

  /* The policy sets NCCL_BUFFSIZE and NCCL_LL_BUFFSIZE; the plugin answers NCCL_BUFFSIZE: the
   * plugin wins there, the policy applies the other. */
  uint64_t rng = test_seed(1919);
  int buff = 65536 * (2 + (int)(test_rand(&rng) % 100));
  char map_text[200], policy_text[400], policy_env[700], want[200];
  snprintf(map_text, sizeof map_text, "NCCL_BUFFSIZE=%d\n", buff);
  write_file(map_path, map_text);
  snprintf(policy, sizeof policy, "%s/policy.yaml", tmpdir);
  snprintf(policy_text, sizeof policy_text,
           "version: 1\ndefaults:\n  settings: {NCCL_BUFFSIZE: 131072, NCCL_LL_BUFFSIZE: 262144}\n");
  write_file(policy, policy_text);
  snprintf(policy_env, sizeof policy_env, "WEFT_POLICY=%s", policy);
  const char* e_pol[] = {v2, policy_env, NULL};
  EXPECT_EQ_INT(run_case(e_pol), ncclSuccess);
  snprintf(want, sizeof want, "NCCL_BUFFSIZE=%d answered by the env plugin wins", buff);
  char* wlog = read_file(wlog_path);
  expect_in(wlog, want, "the plugin over the policy");
  expect_in(wlog, "policy: NCCL_LL_BUFFSIZE=262144 (settings", "the policy where the plugin is silent");

  /* The whole order at once (docs/env.md, "Where a value comes from"): the policy sets four
   * names; the environment sets the first, NCCL_CONF_FILE the first two, the env plugin answers
   * the first three. Each level wins over those below it, and weft's log names the winner. */
  int v_env = 65536 * (2 + (int)(test_rand(&rng) % 50)), v_conf = v_env + 65536;
  int ll_conf = 4096 * (2 + (int)(test_rand(&rng) % 50)), ll_plug = ll_conf + 4096;
  int nt_plug = 1 + (int)(test_rand(&rng) % 8);
  snprintf(conf_text, sizeof conf_text, "NCCL_BUFFSIZE=%d\nNCCL_LL_BUFFSIZE=%d\n", v_conf,
           ll_conf);
  write_file(conf, conf_text);
  snprintf(map_text, sizeof map_text,
           "NCCL_BUFFSIZE=%d\nNCCL_LL_BUFFSIZE=%d\nNCCL_SOCKET_NTHREADS=%d\n", v_conf + 65536,
           ll_plug, nt_plug);
  write_file(map_path, map_text);
  snprintf(policy_text, sizeof policy_text,
           "version: 1\ndefaults:\n  settings: {NCCL_BUFFSIZE: 131072, NCCL_LL_BUFFSIZE: 8192, "
           "NCCL_SOCKET_NTHREADS: 9, NCCL_NSOCKS_PERTHREAD: 2}\n");
  write_file(policy, policy_text);
  char env_buff[64];
  snprintf(env_buff, sizeof env_buff, "NCCL_BUFFSIZE=%d", v_env);
  const char* e_all[] = {v2, policy_env, conf_env, env_buff, NULL};
  EXPECT_EQ_INT(run_case(e_all), ncclSuccess);
  wlog = read_file(wlog_path);
  snprintf(want, sizeof want, "NCCL_BUFFSIZE=%d set in the environment wins over", v_env);
  expect_in(wlog, want, "the environment over the conf file, the plugin and the policy");
  snprintf(want, sizeof want, "NCCL_LL_BUFFSIZE=%d set in the user's nccl.conf wins over", ll_conf);
  expect_in(wlog, want, "NCCL_CONF_FILE over the plugin and the policy");
  snprintf(want, sizeof want, "NCCL_SOCKET_NTHREADS=%d answered by the env plugin wins over",
           nt_plug);
  expect_in(wlog, want, "the env plugin over the policy");
  expect_in(wlog, "policy: NCCL_NSOCKS_PERTHREAD=2 (settings", "the policy over the default");

  /* weft's own policy plugin: recognised, not consulted. */
  write_file(map_path, "");
  const char* e_weft[] = {"NCCL_ENV_PLUGIN=weft", NULL};
  EXPECT_EQ_INT(run_case(e_weft), ncclSuccess);
  expect_in(read_file(wlog_path), "is weft's policy plugin", "NCCL_ENV_PLUGIN=weft");

  /* A library that is not there, and one whose init fails: one WARN, init succeeds. */
  char nothere[600];
  snprintf(nothere, sizeof nothere, "NCCL_ENV_PLUGIN=%s/libnccl-env-nothere.so", plugdir);
  const char* e_missing[] = {nothere, NULL};
  EXPECT_EQ_INT(run_case(e_missing), ncclSuccess);
  expect_in(read_file(wlog_path), "cannot be opened", "a missing env plugin");
  write_file(map_path, missing);
  const char* e_fail[] = {fail, NULL};
  EXPECT_EQ_INT(run_case(e_fail), ncclSuccess); /* its WEFT_POLICY answer is not used */
  wlog = read_file(wlog_path);
  expect_in(wlog, "init returned 3", "a failing init");
  expect_not_in(read_file(plog_path), "get ", "a plugin whose init failed is not asked");

  /* none: the test plugin is never loaded, even with the map in place. */
  const char* e_none[] = {"NCCL_ENV_PLUGIN=none", NULL};
  EXPECT_EQ_INT(run_case(e_none), ncclSuccess);
  expect_in(read_file(wlog_path), "NCCL_ENV_PLUGIN=none", "none");
  EXPECT(access(plog_path, F_OK) != 0);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  printf("env plugin in the core: v2, v1 from nccl.conf, precedence, weft's own, failures\n");
  return 0;
}
