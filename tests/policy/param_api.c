/* ncclParam* (issue 50): every key ncclParamGetAllParameterKeys lists reads through both APIs
 * (ncclParamGetParameter's text; ncclParamBind and the typed getter, ncclParamGet's bytes) and
 * equals the value an independent reference gives for the same environment: the process
 * environment as it was before the library started, else the NCCL_CONF_FILE this test wrote,
 * else what `weft-policy explain` says the policy file sets, else the default `weft-policy
 * schema` reports (an integer that does not parse or lies outside the schema's range: that
 * default). The key list is the schema's. Random values (seed printed) go in each source, with
 * one name set in two of them (the higher source must win) and one bad value. Unknown keys,
 * bad handles, a getter too narrow for the value, and ncclParamDumpAll are checked too.
 *
 * Usage: param_api WEFT_POLICY_BINARY */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "weft.h"

extern char** environ;

#define MAXK 512

typedef struct {
  char name[64], value[512];
} kv;

typedef struct {
  kv def[MAXK]; /* schema: default ("" when unset) */
  int is_int[MAXK];
  long long lo[MAXK], hi[MAXK];
  int n;
} schema;

static kv env0[MAXK * 4], conf[16], pol[16];
static int n_env0, n_conf, n_pol;

static const char* lookup(const kv* t, int n, const char* name) {
  for (int i = 0; i < n; i++)
    if (strcmp(t[i].name, name) == 0) return t[i].value;
  return NULL;
}

static void add(kv* t, int* n, const char* name, const char* value) {
  snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
  snprintf(t[*n].value, sizeof t[*n].value, "%s", value);
  (*n)++;
}

static FILE* run(const char* cmd) {
  FILE* f = popen(cmd, "r");
  if (!f) {
    fprintf(stderr, "cannot run %s: %s\n", cmd, strerror(errno));
    exit(1);
  }
  return f;
}

/* | `NAME` | INT | default | lo..hi | help | */
static void read_schema(const char* tool, schema* s) {
  char cmd[4096], line[4096];
  snprintf(cmd, sizeof cmd, "'%s' schema", tool);
  FILE* f = run(cmd);
  s->n = 0;
  while (fgets(line, sizeof line, f)) {
    char name[64], kind[16], def[512], range[128];
    if (sscanf(line, "| `%63[^`]` | %15[A-Z] | %511[^|]| %127[^|]|", name, kind, def, range) < 3)
      continue;
    if (strcmp(kind, "INT") != 0 && strcmp(kind, "STR") != 0) continue;
    EXPECT(s->n < MAXK);
    char* e = def + strlen(def);
    while (e > def && e[-1] == ' ') *--e = '\0';
    if (strcmp(def, "(unset)") == 0) def[0] = '\0';
    snprintf(s->def[s->n].name, sizeof s->def[s->n].name, "%s", name);
    snprintf(s->def[s->n].value, sizeof s->def[s->n].value, "%s", def);
    s->is_int[s->n] = strcmp(kind, "INT") == 0;
    s->lo[s->n] = s->hi[s->n] = 0;
    if (s->is_int[s->n]) EXPECT(sscanf(range, "%lld..%lld", &s->lo[s->n], &s->hi[s->n]) == 2);
    s->n++;
  }
  pclose(f);
  EXPECT(s->n > 20);
}

/* "  NAME=value    # settings, line N..." lines of weft-policy explain. */
static void read_policy_report(const char* tool, const char* file) {
  char cmd[4096], line[4096];
  snprintf(cmd, sizeof cmd, "'%s' explain '%s'", tool, file);
  FILE* f = run(cmd);
  while (fgets(line, sizeof line, f)) {
    char name[64], value[512];
    if (sscanf(line, "  %63[A-Z0-9_]=%511[^ ]    # settings", name, value) == 2 &&
        strstr(line, "# settings"))
      add(pol, &n_pol, name, value);
  }
  pclose(f);
}

static int parse_ll(const char* s, long long* out) {
  if (!*s) return 0;
  char* end;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (errno || *end) return 0;
  *out = v;
  return 1;
}

int main(int argc, char** argv) {
  EXPECT(argc == 2);
  const char* tool = argv[1];
  uint64_t seed = test_seed((uint64_t)getpid());
  fprintf(stderr, "seed %" PRIu64 " (WEFT_TEST_SEED reruns it)\n", seed);
  uint64_t rs = seed;

  /* The sources, written before the library reads anything. */
  char dir[] = "/tmp/weft-param-XXXXXX";
  EXPECT(mkdtemp(dir) != NULL);
  char conf_path[256], pol_path[256], v[64];
  snprintf(conf_path, sizeof conf_path, "%s/nccl.conf", dir);
  snprintf(pol_path, sizeof pol_path, "%s/policy.yaml", dir);
  long long buff_env = 65536LL * (1 + (long long)(test_rand(&rs) % 64));
  long long buff_conf = 65536LL * (65 + (long long)(test_rand(&rs) % 64)); /* loses to env */
  long long hang_conf = (long long)(test_rand(&rs) % 100000);
  long long nch_conf = 1 + (long long)(test_rand(&rs) % 32);
  long long nch_pol = 33 + (long long)(test_rand(&rs) % 32); /* loses to the conf file */
  long long tmo_pol = 100 + (long long)(test_rand(&rs) % 1000000);
  long long thr_pol = 1 + (long long)(test_rand(&rs) % 16);
  FILE* f = fopen(conf_path, "w");
  EXPECT(f != NULL);
  fprintf(f, "# written by param_api\nNCCL_BUFFSIZE=%lld\nWEFT_HANG_REPORT_MS=%lld\n"
             "NCCL_MAX_NCHANNELS=%lld\n", buff_conf, hang_conf, nch_conf);
  fclose(f);
  f = fopen(pol_path, "w");
  EXPECT(f != NULL);
  fprintf(f, "version: 1\nclusters:\n  - name: every-host\n    match:\n      hostname: \"*\"\n"
             "    settings:\n      WEFT_TIMEOUT_MS: %lld\n      NCCL_MAX_NCHANNELS: %lld\n"
             "      NCCL_SOCKET_NTHREADS: %lld\n      NCCL_PROTO: Simple\n",
          tmo_pol, nch_pol, thr_pol);
  fclose(f);
  setenv("NCCL_CONF_FILE", conf_path, 1);
  setenv("WEFT_POLICY", pol_path, 1);
  snprintf(v, sizeof v, "0x%llx", buff_env);
  setenv("NCCL_BUFFSIZE", v, 1);
  setenv("NCCL_MIN_NCHANNELS", "999", 1); /* out of range: the library uses the default */
  unsetenv("NCCL_PARAM_DUMP_ALL");
  for (char** e = environ; *e; e++) {
    const char* eq = strchr(*e, '=');
    if (!eq || eq - *e >= 64 || n_env0 >= (int)(sizeof env0 / sizeof env0[0])) continue;
    char name[64];
    memcpy(name, *e, (size_t)(eq - *e));
    name[eq - *e] = '\0';
    add(env0, &n_env0, name, eq + 1);
  }
  snprintf(v, sizeof v, "%lld", buff_conf);
  add(conf, &n_conf, "NCCL_BUFFSIZE", v);
  snprintf(v, sizeof v, "%lld", hang_conf);
  add(conf, &n_conf, "WEFT_HANG_REPORT_MS", v);
  snprintf(v, sizeof v, "%lld", nch_conf);
  add(conf, &n_conf, "NCCL_MAX_NCHANNELS", v);

  test_require_weft_lib();
  static schema s;
  read_schema(tool, &s);
  read_policy_report(tool, pol_path);
  EXPECT(lookup(pol, n_pol, "WEFT_TIMEOUT_MS") != NULL); /* the report was read */

  /* A communicator applies the policy, as any program's first init does. */
  ncclUniqueId id;
  ncclComm_t comm;
  EXPECT_OK(ncclGetUniqueId(&id));
  EXPECT_OK(ncclCommInitRank(&comm, 1, id, 0));

  const char** keys = NULL;
  const char* text = NULL;
  int nkeys = 0, len = 0;
  EXPECT_OK(ncclParamGetAllParameterKeys(&keys, &nkeys));
  /* The schema leaves out what a policy may not set (its note names WEFT_POLICY and WEFT_TEST_*):
   * those keys are compared with the environment, else unset. */
  int bad = 0, outside = 0;
  for (int k = 0; k < nkeys; k++) {
    const char* key = keys[k];
    int si = -1;
    for (int i = 0; i < s.n; i++)
      if (strcmp(s.def[i].name, key) == 0) si = i;
    if (si < 0) {
      const char* e = lookup(env0, n_env0, key);
      if (strcmp(key, "WEFT_POLICY") != 0 && strncmp(key, "WEFT_TEST_", 10) != 0) {
        fprintf(stderr, "%s: not in weft-policy schema\n", key);
        bad++;
      } else if (ncclParamGetParameter(key, &text, &len) != ncclSuccess ||
                 strcmp(text, e ? e : "") != 0) {
        fprintf(stderr, "%s: '%s', expected '%s'\n", key, text, e ? e : "");
        bad++;
      }
      outside++;
      continue;
    }
    const char* want = lookup(env0, n_env0, key);
    const char* from = "environment";
    if (!want) want = lookup(conf, n_conf, key), from = "conf file";
    if (!want) want = lookup(pol, n_pol, key), from = "policy";
    if (!want || !*want) want = s.def[si].value, from = "default";

    text = NULL;
    len = -1;
    EXPECT_OK(ncclParamGetParameter(key, &text, &len));
    EXPECT(text != NULL && len == (int)strlen(text));
    char text_copy[512];
    snprintf(text_copy, sizeof text_copy, "%s", text);
    ncclParamHandle_t h = NULL;
    EXPECT_OK(ncclParamBind(&h, key));
    char raw[512];
    int rawlen = 0;
    EXPECT_OK(ncclParamGet(h, raw, sizeof raw, &rawlen));
    if (s.is_int[si]) {
      long long w, got;
      if (!parse_ll(want, &w) || w < s.lo[si] || w > s.hi[si]) {
        EXPECT(parse_ll(s.def[si].value, &w));
        from = "default (bad value)";
      }
      int64_t typed = 0;
      EXPECT_OK(ncclParamGetI64(h, &typed));
      EXPECT(parse_ll(text_copy, &got));
      EXPECT_EQ_INT(rawlen, 8);
      int64_t rawv;
      memcpy(&rawv, raw, 8);
      const char* str = NULL;
      EXPECT_RES(ncclParamGetStr(h, &str), ncclInvalidArgument);
      if (got != w || typed != w || rawv != w) {
        fprintf(stderr, "%s: text %s, I64 %" PRId64 ", bytes %" PRId64 "; expected %lld (%s)\n",
                key, text_copy, typed, rawv, w, from);
        bad++;
      }
    } else {
      const char* str = NULL;
      EXPECT_OK(ncclParamGetStr(h, &str));
      int64_t typed;
      EXPECT_RES(ncclParamGetI64(h, &typed), ncclInvalidArgument);
      if (strcmp(text_copy, want) != 0 || strcmp(str, want) != 0 ||
          rawlen != (int)strlen(want) + 1 || memcmp(raw, want, (size_t)rawlen) != 0) {
        fprintf(stderr, "%s: text '%s', string '%s'; expected '%s' (%s)\n", key, text_copy, str,
                want, from);
        bad++;
      }
    }
  }
  fprintf(stderr, "%d keys compared (%d outside the schema), %d wrong\n", nkeys, outside, bad);
  EXPECT_EQ_INT(bad, 0);
  EXPECT_EQ_INT(nkeys - outside, s.n);

  /* Narrow getters answer when the value fits; unknown keys and bad handles are refused. */
  ncclParamHandle_t h;
  EXPECT_OK(ncclParamBind(&h, "NCCL_BUFFSIZE"));
  int8_t i8;
  uint32_t u32;
  EXPECT_RES(ncclParamGetI8(h, &i8), ncclInvalidArgument);
  EXPECT_OK(ncclParamGetU32(h, &u32));
  EXPECT_EQ_INT(u32, buff_env);
  EXPECT_RES(ncclParamBind(&h, "NCCL_NO_SUCH_SETTING"), ncclInvalidArgument);
  EXPECT_RES(ncclParamBind(NULL, "NCCL_BUFFSIZE"), ncclInvalidArgument);
  EXPECT_RES(ncclParamBind(&h, NULL), ncclInvalidArgument);
  text = "x";
  len = 7;
  EXPECT_RES(ncclParamGetParameter("nccl_buffsize", &text, &len), ncclInvalidArgument);
  EXPECT(text == NULL && len == 0);
  int64_t i64;
  EXPECT_RES(ncclParamGetI64((ncclParamHandle_t)(void*)&i64, &i64), ncclInvalidArgument);
  EXPECT_RES(ncclParamGetI64(NULL, &i64), ncclInvalidArgument);
  char small[4];
  EXPECT_OK(ncclParamBind(&h, "NCCL_BUFFSIZE"));
  EXPECT_RES(ncclParamGet(h, small, sizeof small, &len), ncclInvalidArgument);

  /* ncclParamDumpAll: every key with the value read above. */
  char dump_path[256];
  snprintf(dump_path, sizeof dump_path, "%s/dump.txt", dir);
  fflush(stdout);
  int saved = dup(1);
  FILE* d = fopen(dump_path, "w");
  EXPECT(saved >= 0 && d != NULL);
  dup2(fileno(d), 1);
  ncclParamDumpAll();
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  fclose(d);
  d = fopen(dump_path, "r");
  static char dump[1 << 20];
  size_t nd = fread(dump, 1, sizeof dump - 1, d);
  dump[nd] = '\0';
  fclose(d);
  for (int k = 0; k < nkeys; k++) {
    char want[700];
    EXPECT_OK(ncclParamGetParameter(keys[k], &text, &len));
    snprintf(want, sizeof want, "%s (", keys[k]);
    char* at = strstr(dump, want);
    if (!at || (k + 1 < nkeys && !strstr(at, "value="))) {
      fprintf(stderr, "ncclParamDumpAll lacks %s\n", keys[k]);
      return 1;
    }
    snprintf(want, sizeof want, "value=%s ", *text ? text : "<unset>");
    char* nl = strstr(at, "\n    value=");
    EXPECT(nl != NULL && strncmp(nl + 5, want, strlen(want)) == 0);
  }

  EXPECT_OK(ncclCommDestroy(comm));
  unlink(dump_path);
  unlink(conf_path);
  unlink(pol_path);
  rmdir(dir);
  return 0;
}
