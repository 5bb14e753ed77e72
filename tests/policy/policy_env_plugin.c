/* libnccl-env-weft.so loaded the way NCCL loads an env plugin: the name NCCL_ENV_PLUGIN gives
 * tried as given, then as libnccl-env-<name>.so; ncclEnvPlugin_v2 looked up first, then
 * ncclEnvPlugin_v1; init, getEnv and finalize called from here. Every expected answer comes from
 * the policy text this test writes (random values), never from the policy engine:
 * - a cluster matching this host's name answers its settings, net and tuner keys; a variable set
 *   in the environment wins (getEnv returns the environment's own string);
 * - a host name that does not match falls to the defaults, or to nothing without defaults;
 * - a cluster with a node-count rule ahead of the match does not match (no communicator);
 * - every file of the bad corpus (and a generated 2 MiB one, a missing path) makes init succeed,
 *   logs exactly one WARN through the v2 logger naming the corpus's expected FILE:LINE:COL, and
 *   leaves getEnv answering from the environment alone, in bounded time;
 * - returned pointers keep their text across getEnv of other names and repeated getEnv of the
 *   same name; after finalize only the environment answers;
 * - the library needs no libnccl or libweft (DT_NEEDED);
 * - `weft-policy explain --env-plugin` prints the answers and settings hash the plugin gives.
 * Usage: policy_env_plugin LIBDIR BAD_DIR WEFT_POLICY_TOOL */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nccl_env.h"
#include "testutil.h"

static const char* libdir;
static const char* tool;
static char tmpdir[] = "/tmp/weft-envplug-XXXXXX";
static char hostname[256];

/* ---- what the logger received ---- */
static int nwarn, ninfo;
static char last_warn[2048];
static char all_info[16384];
static size_t info_used;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags, (void)file, (void)line;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (level == NCCL_LOG_WARN) {
    nwarn++;
    snprintf(last_warn, sizeof last_warn, "%s", buf);
  } else if (level == NCCL_LOG_INFO) {
    ninfo++;
    int n = snprintf(all_info + info_used, sizeof all_info - info_used, "%s\n", buf);
    if (n > 0 && info_used + (size_t)n < sizeof all_info) info_used += (size_t)n;
  }
}

static void reset_log(void) {
  nwarn = ninfo = 0;
  last_warn[0] = all_info[0] = '\0';
  info_used = 0;
}

/* ---- NCCL's way of finding the library and its table ---- */
static void* open_like_nccl(const char* name) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", name);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  if (strchr(name, '/') == NULL &&
      (strncmp(name, "lib", 3) || strlen(name) < 3 || strcmp(name + strlen(name) - 3, ".so"))) {
    snprintf(path, sizeof path, "libnccl-env-%s.so", name);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  return h;
}

typedef struct {
  const ncclEnv_v2_t* v2;
  const ncclEnv_v1_t* v1;
} tables;

static tables lookup(void* h) {
  tables t = {dlsym(h, "ncclEnvPlugin_v2"), NULL};
  if (t.v2 == NULL) t.v1 = dlsym(h, "ncclEnvPlugin_v1");
  return t;
}

static const ncclEnv_v2_t* plugin;

static void init_v2(void) {
  reset_log();
  EXPECT_OK(plugin->init(2, 30, 7, "", logger));
}

/* ---- files ---- */
static void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  EXPECT(fputs(text, f) >= 0);
  EXPECT(fclose(f) == 0);
  EXPECT(chmod(path, 0644) == 0);
}

static void expect_str(const char* got, const char* want, const char* what) {
  if (want == NULL && got == NULL) return;
  if (want == NULL || got == NULL || strcmp(got, want)) {
    fprintf(stderr, "%s: got %s%s%s, want %s%s%s\n", what, got ? "'" : "", got ? got : "NULL",
            got ? "'" : "", want ? "'" : "", want ? want : "NULL", want ? "'" : "");
    exit(1);
  }
}

static const char* const names[] = {"NCCL_BUFFSIZE", "NCCL_NET_PLUGIN", "NCCL_NET",
                                    "NCCL_TUNER_PLUGIN", "WEFT_TIMEOUT_MS", "FI_PROVIDER",
                                    "NCCL_SOCKET_NTHREADS"};
enum { NNAMES = sizeof names / sizeof names[0] };

static void clear_env(void) {
  for (int i = 0; i < NNAMES; i++) unsetenv(names[i]);
}

/* `weft-policy explain --env-plugin` (WEFT_POLICY as set) against the live plugin: each
 * "  NAME=VALUE    #" answer line is what getEnv returns, and the hash is the one logged. */
static void explain_agrees(void) {
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "%s explain --env-plugin", tool);
  FILE* out = popen(cmd, "r");
  EXPECT(out != NULL);
  char line[1024];
  int answers = 0, hash_seen = 0;
  while (fgets(line, sizeof line, out)) {
    char* hash = strstr(line, "the env plugin logs: ");
    if (hash) {
      char* s = strstr(hash, "settings ");
      EXPECT(s != NULL);
      char want[64];
      snprintf(want, sizeof want, "%.25s", s);
      EXPECT(strstr(all_info, want) != NULL);
      hash_seen = 1;
      continue;
    }
    char* eq = strchr(line, '=');
    char* mark = strstr(line, "    #");
    if (strncmp(line, "  ", 2) || eq == NULL || mark == NULL || eq > mark) continue;
    *eq = '\0';
    *mark = '\0';
    expect_str(plugin->getEnv(line + 2), eq + 1, "explain --env-plugin against getEnv");
    answers++;
  }
  EXPECT(pclose(out) == 0);
  EXPECT(hash_seen);
  EXPECT_EQ_INT(answers, 6);
}

/* The cluster that names this host, and what it sets. */
static void matching_host(uint64_t* rng) {
  char path[PATH_MAX], text[4096], buff[32], timeout[32];
  snprintf(path, sizeof path, "%s/match.yaml", tmpdir);
  snprintf(buff, sizeof buff, "%d", 65536 * (1 + (int)(test_rand(rng) % 500)));
  snprintf(timeout, sizeof timeout, "%d", 1000 + (int)(test_rand(rng) % 100000));
  /* A node-count rule first (cannot match here), then a non-matching host, then this host. */
  snprintf(text, sizeof text,
           "version: 1\n"
           "clusters:\n"
           "  - name: big\n"
           "    match: {nodes: {min: 2}}\n"
           "    settings: {NCCL_BUFFSIZE: 65536}\n"
           "  - name: other\n"
           "    match: {hostname: 'no-such-host-*'}\n"
           "    settings: {NCCL_BUFFSIZE: 131072}\n"
           "  - name: here\n"
           "    match: {hostname: '%s'}\n"
           "    net: {plugin: weft-socket, name: Socket}\n"
           "    tuner: none\n"
           "    settings: {NCCL_BUFFSIZE: %s, WEFT_TIMEOUT_MS: %s}\n"
           "    plugin_env: {FI_PROVIDER: 'tcp;ofi_rxm'}\n"
           "defaults:\n"
           "  settings: {NCCL_SOCKET_NTHREADS: 3}\n",
           hostname, buff, timeout);
  write_file(path, text);
  setenv("WEFT_POLICY", path, 1);
  clear_env();
  init_v2();
  EXPECT_EQ_INT(nwarn, 0);
  expect_str(plugin->getEnv("NCCL_BUFFSIZE"), buff, "NCCL_BUFFSIZE");
  expect_str(plugin->getEnv("WEFT_TIMEOUT_MS"), timeout, "WEFT_TIMEOUT_MS");
  expect_str(plugin->getEnv("NCCL_NET_PLUGIN"), "weft-socket", "NCCL_NET_PLUGIN");
  expect_str(plugin->getEnv("NCCL_NET"), "Socket", "NCCL_NET");
  expect_str(plugin->getEnv("NCCL_TUNER_PLUGIN"), "none", "NCCL_TUNER_PLUGIN");
  expect_str(plugin->getEnv("FI_PROVIDER"), "tcp;ofi_rxm", "FI_PROVIDER");
  /* The defaults are not merged into a matched cluster. */
  expect_str(plugin->getEnv("NCCL_SOCKET_NTHREADS"), NULL, "NCCL_SOCKET_NTHREADS");
  expect_str(plugin->getEnv("NCCL_NO_SUCH_SETTING"), NULL, "an unset name");
  expect_str(plugin->getEnv(NULL), NULL, "getEnv(NULL)");
  /* The log names the cluster and its settings hash, and the rule it could not evaluate. */
  EXPECT(strstr(all_info, "cluster 'here'") != NULL);
  EXPECT(strstr(all_info, "settings ") != NULL);
  EXPECT(strstr(all_info, "'big' does not match") != NULL);
  EXPECT(strstr(all_info, "NCCL_NET_PLUGIN=weft-socket") != NULL);
  explain_agrees();

  /* Pointer stability: the text stays while other names are asked, and the same again. */
  const char* p1 = plugin->getEnv("NCCL_BUFFSIZE");
  char copy[64];
  snprintf(copy, sizeof copy, "%s", p1);
  for (int i = 0; i < 1000; i++) {
    const char* o = plugin->getEnv(names[test_rand(rng) % NNAMES]);
    (void)o;
  }
  expect_str(p1, copy, "NCCL_BUFFSIZE after other getEnv calls");
  const char* p2 = plugin->getEnv("NCCL_BUFFSIZE");
  expect_str(p2, copy, "NCCL_BUFFSIZE asked again");
  expect_str(p1, copy, "the first NCCL_BUFFSIZE pointer after the second call");

  /* The environment wins, with its own string. */
  char env_buff[32];
  snprintf(env_buff, sizeof env_buff, "%d", 65536 * (600 + (int)(test_rand(rng) % 100)));
  setenv("NCCL_BUFFSIZE", env_buff, 1);
  const char* e = plugin->getEnv("NCCL_BUFFSIZE");
  EXPECT(e == getenv("NCCL_BUFFSIZE"));
  expect_str(e, env_buff, "NCCL_BUFFSIZE from the environment");
  setenv("NCCL_NET_PLUGIN", "", 1); /* set, even empty, is the environment's answer */
  expect_str(plugin->getEnv("NCCL_NET_PLUGIN"), "", "empty NCCL_NET_PLUGIN from the environment");
  /* The policy's answer was kept: the first pointer still reads the policy's value. */
  expect_str(p1, copy, "the policy's NCCL_BUFFSIZE string after the environment answered");
  EXPECT_OK(plugin->finalize());
  clear_env();
  /* After finalize only the environment answers. */
  expect_str(plugin->getEnv("WEFT_TIMEOUT_MS"), NULL, "WEFT_TIMEOUT_MS after finalize");

  /* At init, a variable already in the environment is logged as winning. */
  setenv("WEFT_TIMEOUT_MS", "777", 1);
  init_v2();
  EXPECT(strstr(all_info, "WEFT_TIMEOUT_MS=777 set in the environment wins") != NULL);
  expect_str(plugin->getEnv("WEFT_TIMEOUT_MS"), "777", "WEFT_TIMEOUT_MS from the environment");
  expect_str(plugin->getEnv("NCCL_BUFFSIZE"), buff, "NCCL_BUFFSIZE again");
  EXPECT_OK(plugin->finalize());
  clear_env();
}

/* This host matches no cluster: the defaults answer, or nothing when there are none. */
static void other_host(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/other.yaml", tmpdir);
  write_file(path,
             "version: 1\n"
             "clusters:\n"
             "  - name: ib\n"
             "    match: {hostname: 'no-such-host-*'}\n"
             "    net: ib\n"
             "    settings: {NCCL_BUFFSIZE: 131072}\n"
             "  - name: two-per-node\n"
             "    match: {ranks_per_node: 2}\n"
             "    settings: {NCCL_BUFFSIZE: 262144}\n"
             "defaults:\n"
             "  net: {plugin: none, name: Socket}\n"
             "  settings: {NCCL_SOCKET_NTHREADS: 3}\n");
  setenv("WEFT_POLICY", path, 1);
  init_v2();
  EXPECT_EQ_INT(nwarn, 0);
  expect_str(plugin->getEnv("NCCL_BUFFSIZE"), NULL, "NCCL_BUFFSIZE from no cluster");
  expect_str(plugin->getEnv("NCCL_NET_PLUGIN"), "none", "NCCL_NET_PLUGIN of the defaults");
  expect_str(plugin->getEnv("NCCL_NET"), "Socket", "NCCL_NET of the defaults");
  expect_str(plugin->getEnv("NCCL_SOCKET_NTHREADS"), "3", "NCCL_SOCKET_NTHREADS of the defaults");
  EXPECT(strstr(all_info, "'two-per-node' does not match") != NULL);
  EXPECT_OK(plugin->finalize());

  write_file(path,
             "version: 1\n"
             "clusters:\n"
             "  - name: ib\n"
             "    match: {hostname: 'no-such-host-*'}\n"
             "    net: ib\n");
  init_v2();
  EXPECT_EQ_INT(nwarn, 0);
  for (int i = 0; i < NNAMES; i++) expect_str(plugin->getEnv(names[i]), NULL, names[i]);
  EXPECT_OK(plugin->finalize());

  /* WEFT_POLICY=none: off, quietly. */
  setenv("WEFT_POLICY", "none", 1);
  init_v2();
  EXPECT_EQ_INT(nwarn, 0);
  expect_str(plugin->getEnv("NCCL_NET_PLUGIN"), NULL, "NCCL_NET_PLUGIN with WEFT_POLICY=none");
  EXPECT_OK(plugin->finalize());
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A file the plugin must refuse: init succeeds, one WARN containing want (may be NULL), and
 * nothing but the environment answers. */
static void refused(const char* path, const char* want) {
  setenv("WEFT_POLICY", path, 1);
  setenv("NCCL_SOCKET_NTHREADS", "5", 1);
  double t0 = now_s();
  init_v2();
  double dt = now_s() - t0;
  if (nwarn != 1 || (want && !strstr(last_warn, want))) {
    fprintf(stderr, "%s: %d WARN lines, last '%s'; wanted one containing '%s'\n", path, nwarn,
            last_warn, want ? want : "");
    exit(1);
  }
  EXPECT(strstr(last_warn, "answering from the environment alone") != NULL);
  EXPECT(dt < 3.0);
  expect_str(plugin->getEnv("NCCL_SOCKET_NTHREADS"), "5", "the environment beside a bad policy");
  expect_str(plugin->getEnv("NCCL_NET_PLUGIN"), NULL, "NCCL_NET_PLUGIN beside a bad policy");
  expect_str(plugin->getEnv("NCCL_BUFFSIZE"), NULL, "NCCL_BUFFSIZE beside a bad policy");
  EXPECT_OK(plugin->finalize());
  unsetenv("NCCL_SOCKET_NTHREADS");
}

/* Every file of the corpus; its first line reads "# expect: LINE:COL: text". */
static int bad_corpus(const char* dir) {
  DIR* d = opendir(dir);
  EXPECT(d != NULL);
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".yaml")) continue;
    char path[PATH_MAX], line[512], want[PATH_MAX + 600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE* f = fopen(path, "r");
    EXPECT(f != NULL);
    want[0] = '\0';
    if (fgets(line, sizeof line, f) && !strncmp(line, "# expect: ", 10)) {
      line[strcspn(line, "\n")] = '\0';
      char* text = line + 10;
      char* colon = strchr(text, ':');
      colon = colon ? strchr(colon + 1, ':') : NULL; /* end of LINE:COL */
      if (colon) *colon = '\0';
      snprintf(want, sizeof want, "%s:%s:", path, text);
    }
    fclose(f);
    refused(path, want[0] ? want : NULL);
    n++;
  }
  closedir(d);
  return n;
}

static void generated_and_missing(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/huge.yaml", tmpdir);
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  fputs("version: 1\nclusters: []\n", f);
  for (int i = 0; i < (2 << 20) / 32; i++) fputs("# padding padding padding pad\n", f);
  EXPECT(fclose(f) == 0);
  refused(path, "larger than");
  snprintf(path, sizeof path, "%s/no-such-file.yaml", tmpdir);
  refused(path, "cannot open");
  /* Writable by everyone: refused, never used. */
  snprintf(path, sizeof path, "%s/open.yaml", tmpdir);
  write_file(path, "version: 1\ndefaults: {settings: {NCCL_BUFFSIZE: 131072}}\n");
  EXPECT(chmod(path, 0666) == 0);
  refused(path, "writable by everyone");
}

/* The v1 table (NCCL 2.28.7 .. 2.30.4): no logger; the same answers. */
static void v1_table(void* h) {
  const ncclEnv_v1_t* v1 = dlsym(h, "ncclEnvPlugin_v1");
  EXPECT(v1 != NULL && v1->init && v1->getEnv && v1->finalize);
  expect_str(v1->name, plugin->name, "the v1 table's name");
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/v1.yaml", tmpdir);
  write_file(path, "version: 1\ndefaults: {settings: {NCCL_BUFFSIZE: 196608}}\n");
  setenv("WEFT_POLICY", path, 1);
  EXPECT_OK(v1->init(2, 28, 9, ""));
  expect_str(v1->getEnv("NCCL_BUFFSIZE"), "196608", "NCCL_BUFFSIZE through v1");
  EXPECT_OK(v1->finalize());
}

/* No libnccl or libweft among the library's DT_NEEDED. */
static void self_contained(void* h) {
  struct link_map* lm = NULL;
  EXPECT(dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL);
  const char* strtab = NULL;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; d++)
    if (d->d_tag == DT_STRTAB) strtab = (const char*)d->d_un.d_ptr;
  EXPECT(strtab != NULL);
  int needed = 0;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; d++) {
    if (d->d_tag != DT_NEEDED) continue;
    const char* dep = strtab + d->d_un.d_val;
    needed++;
    if (strstr(dep, "nccl") || strstr(dep, "weft")) {
      fprintf(stderr, "%s needs %s\n", lm->l_name, dep);
      exit(1);
    }
  }
  EXPECT(needed >= 1); /* libc at least: the walk saw the table */
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  EXPECT(argc == 4);
  libdir = argv[1];
  tool = argv[3];
  EXPECT(mkdtemp(tmpdir) != NULL);
  EXPECT(gethostname(hostname, sizeof hostname - 1) == 0);
  uint64_t rng = test_seed(19);

  /* By path, then by name through the loader path (this binary's RPATH holds LIBDIR). */
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/libnccl-env-weft.so", libdir);
  void* by_path = open_like_nccl(path);
  EXPECT(by_path != NULL);
  void* by_name = open_like_nccl("weft");
  if (by_name == NULL) fprintf(stderr, "dlopen by name: %s\n", dlerror());
  EXPECT(by_name == by_path);
  dlclose(by_name);
  EXPECT(open_like_nccl("libnccl-env-no-such-plugin.so") == NULL);

  tables t = lookup(by_path);
  EXPECT(t.v2 != NULL && t.v1 == NULL);
  plugin = t.v2;
  EXPECT(plugin->name && !strcmp(plugin->name, "weft-policy"));
  self_contained(by_path);

  matching_host(&rng);
  other_host();
  int nbad = bad_corpus(argv[2]);
  EXPECT(nbad >= 50);
  generated_and_missing();
  v1_table(by_path);

  printf("env plugin: matching/other host, %d bad corpus files + 3 generated refused, v1 ok\n",
         nbad);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  dlclose(by_path);
  return 0;
}
