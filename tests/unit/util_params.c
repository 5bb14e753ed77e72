/* Parameters: environment > NCCL_CONF_FILE > /etc/nccl.conf > env plugin > policy > default
 * (stock NCCL's order with an env plugin); bad values keep the default; the table has no
 * duplicate names. The env plugin is stood in for by a source function, as core/plugin
 * registers it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/param.h"

static int plugin_value;
static char plugin_buf[32];

/* Answers the environment first, then NCCL_MIN_NCHANNELS itself, into one reused buffer. */
static const char* fake_plugin_get(const char* name) {
  const char* v = getenv(name);
  if (v) return v;
  if (strcmp(name, "NCCL_MIN_NCHANNELS")) return NULL;
  snprintf(plugin_buf, sizeof plugin_buf, "%d", plugin_value);
  return plugin_buf;
}

int main(void) {
  test_require_weft_lib();
  char path[] = "/tmp/weft-conf-XXXXXX";
  int fd = mkstemp(path);
  EXPECT(fd >= 0);
  uint64_t rng = test_seed(42);
  int buff = 65536 * (1 + (int)(test_rand(&rng) % 100));
  char text[512];
  snprintf(text, sizeof text,
           "# comment line\n"
           "NCCL_BUFFSIZE = %d\n"
           "NCCL_P2P_DISABLE=1   # trailing comment\n"
           "garbage line without equals\n"
           "NCCL_SHM_DISABLE=0\n"
           "NCCL_MAX_NCHANNELS=not-a-number\n"
           "WEFT_TIMEOUT_MS=5\n",
           buff);
  EXPECT(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  setenv("NCCL_CONF_FILE", path, 1);
  setenv("NCCL_SHM_DISABLE", "1", 1); /* the environment wins over the file */
  unsetenv("NCCL_BUFFSIZE");
  unsetenv("NCCL_P2P_DISABLE");
  unsetenv("NCCL_MAX_NCHANNELS");
  unsetenv("WEFT_TIMEOUT_MS");
  unsetenv("NCCL_LL_BUFFSIZE");
  unsetenv("NCCL_MIN_NCHANNELS");
  unsetenv("NCCL_P2P_LEVEL");

  EXPECT_EQ_INT(param_int(WEFT_PARAM_BUFFSIZE), buff);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_P2P_DISABLE), 1);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_SHM_DISABLE), 1);
  EXPECT_EQ_INT(param_source_of("NCCL_SHM_DISABLE"), WEFT_SRC_ENV);
  EXPECT_EQ_INT(param_source_of("NCCL_BUFFSIZE"), WEFT_SRC_CONF_USER);
  EXPECT_EQ_INT(param_source_of("NCCL_LL_BUFFSIZE"), WEFT_SRC_DEFAULT);
  /* Not a number, and below the minimum: both keep the default. */
  EXPECT_EQ_INT(param_int(WEFT_PARAM_MAX_NCHANNELS), 64);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_TIMEOUT_MS), 600000);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_LL_BUFFSIZE), 524288);

  /* The policy overrides neither a conf-file value nor the environment; it sets what nothing
   * set, and a later policy value replaces an earlier one. */
  EXPECT_EQ_INT(param_apply_policy("NCCL_BUFFSIZE", "131072"), 0);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_BUFFSIZE), buff);
  EXPECT_EQ_INT(param_source_of("NCCL_BUFFSIZE"), WEFT_SRC_CONF_USER);
  EXPECT_EQ_INT(param_apply_policy("NCCL_SHM_DISABLE", "0"), 0);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_SHM_DISABLE), 1);
  int ll = 65536 * (2 + (int)(test_rand(&rng) % 50));
  char llv[32];
  snprintf(llv, sizeof llv, "%d", ll);
  EXPECT_EQ_INT(param_apply_policy("NCCL_LL_BUFFSIZE", "131072"), 1);
  EXPECT_EQ_INT(param_apply_policy("NCCL_LL_BUFFSIZE", llv), 1);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_LL_BUFFSIZE), ll);
  EXPECT_EQ_INT(param_source_of("NCCL_LL_BUFFSIZE"), WEFT_SRC_POLICY);

  /* An env plugin: asked after the environment and the conf files (it sees them first, as
   * NCCL's plugins do through getenv), ahead of the policy; its strings are copied. */
  plugin_value = 1 + (int)(test_rand(&rng) % 16);
  param_set_env_source(fake_plugin_get);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_MIN_NCHANNELS), plugin_value);
  EXPECT_EQ_INT(param_source_of("NCCL_MIN_NCHANNELS"), WEFT_SRC_ENV_PLUGIN);
  const char* first = param_str(WEFT_PARAM_MIN_NCHANNELS);
  EXPECT(first != plugin_buf);
  snprintf(plugin_buf, sizeof plugin_buf, "%s", "garbage"); /* the plugin reuses its buffer */
  EXPECT_EQ_INT(atoi(first), plugin_value);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_SHM_DISABLE), 1);    /* environment */
  EXPECT_EQ_INT(param_int(WEFT_PARAM_BUFFSIZE), buff);    /* conf file */
  EXPECT_EQ_INT(param_apply_policy("NCCL_MIN_NCHANNELS", "2"), 0);
  EXPECT_EQ_INT(param_apply_policy("NCCL_P2P_LEVEL", "PIX"), 1);
  param_set_env_source(NULL);

  /* Integer grammar: base 0, whole string. */
  int64_t v;
  EXPECT(param_parse_int("0x10", &v) && v == 16);
  EXPECT(param_parse_int(" -7 ", &v) && v == -7);
  EXPECT(!param_parse_int("12abc", &v));
  EXPECT(!param_parse_int("", &v));
  EXPECT(!param_parse_int("99999999999999999999999", &v));

  int n;
  const weft_param_info* t = param_table(&n);
  EXPECT(n == WEFT_PARAM_COUNT && n > 10);
  for (int i = 0; i < n; i++) {
    EXPECT(t[i].help && *t[i].help);
    for (int j = 0; j < i; j++) EXPECT(strcmp(t[i].name, t[j].name) != 0);
    if (t[i].kind == WEFT_PARAM_INT) {
      int64_t d;
      EXPECT(param_parse_int(t[i].def, &d) && d >= t[i].min && d <= t[i].max);
    }
  }
  EXPECT(param_find("NCCL_ALGO") == param_info(WEFT_PARAM_ALGO));
  EXPECT(param_find("NCCL_NO_SUCH_THING") == NULL);
  unlink(path);
  return 0;
}
