/* Parameters: environment > policy > NCCL_CONF_FILE > /etc/nccl.conf > default; bad values
 * keep the default; the table has no duplicate names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/param.h"

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

  /* The policy overrides a conf-file value but not the user's environment. */
  EXPECT_EQ_INT(param_apply_policy("NCCL_BUFFSIZE", "131072"), 1);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_BUFFSIZE), 131072);
  EXPECT_EQ_INT(param_source_of("NCCL_BUFFSIZE"), WEFT_SRC_POLICY);
  EXPECT_EQ_INT(param_apply_policy("NCCL_SHM_DISABLE", "0"), 0);
  EXPECT_EQ_INT(param_int(WEFT_PARAM_SHM_DISABLE), 1);

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
