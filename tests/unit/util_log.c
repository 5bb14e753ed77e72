/* Logging grammar: NCCL_DEBUG levels, NCCL_DEBUG_SUBSYS with ^, NCCL_DEBUG_FILE with %h/%p,
 * and the last-error text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/log.h"

static char* slurp(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

int main(void) {
  test_require_weft_lib();
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "^INIT,COLL", 1);
  weft_log_reset();
  EXPECT_EQ_INT(weft_log_level(), NCCL_LOG_INFO);
  EXPECT(!weft_log_enabled(NCCL_LOG_INFO, NCCL_INIT));
  EXPECT(!weft_log_enabled(NCCL_LOG_INFO, NCCL_COLL));
  EXPECT(weft_log_enabled(NCCL_LOG_INFO, NCCL_NET));
  EXPECT(weft_log_enabled(NCCL_LOG_WARN, NCCL_INIT)); /* WARN ignores the subsystem mask */
  EXPECT(!weft_log_enabled(NCCL_LOG_TRACE, NCCL_NET));

  setenv("NCCL_DEBUG_SUBSYS", "net,Bootstrap", 1); /* names are case-insensitive */
  weft_log_reset();
  EXPECT(weft_log_enabled(NCCL_LOG_INFO, NCCL_NET));
  EXPECT(weft_log_enabled(NCCL_LOG_INFO, NCCL_BOOTSTRAP));
  EXPECT(!weft_log_enabled(NCCL_LOG_INFO, NCCL_INIT));

  unsetenv("NCCL_DEBUG_SUBSYS"); /* default: INIT, BOOTSTRAP, ENV */
  weft_log_reset();
  EXPECT(weft_log_enabled(NCCL_LOG_INFO, NCCL_INIT));
  EXPECT(weft_log_enabled(NCCL_LOG_INFO, NCCL_ENV));
  EXPECT(!weft_log_enabled(NCCL_LOG_INFO, NCCL_NET));

  setenv("NCCL_DEBUG", "WARN", 1);
  weft_log_reset();
  EXPECT(!weft_log_enabled(NCCL_LOG_INFO, NCCL_INIT));
  EXPECT(weft_log_enabled(NCCL_LOG_WARN, NCCL_ALL));
  setenv("NCCL_DEBUG", "VERSION", 1);
  weft_log_reset();
  EXPECT(weft_log_enabled(NCCL_LOG_VERSION, NCCL_INIT));
  EXPECT(!weft_log_enabled(NCCL_LOG_WARN, NCCL_ALL));
  setenv("NCCL_DEBUG", "bogus", 1);
  weft_log_reset();
  EXPECT_EQ_INT(weft_log_level(), NCCL_LOG_NONE);

  /* File sink: %h and %p expand; WARN lines carry file:line; TRACE is not printed at INFO. */
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  char* dot = strchr(host, '.');
  if (dot) *dot = '\0';
  char dir[] = "/tmp/weft-log-XXXXXX";
  EXPECT(mkdtemp(dir) != NULL);
  char pattern[256], expect_path[512];
  snprintf(pattern, sizeof pattern, "%s/log.%%h.%%p.%%%%", dir);
  snprintf(expect_path, sizeof expect_path, "%s/log.%s.%d.%%", dir, host, (int)getpid());
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "NET", 1);
  setenv("NCCL_DEBUG_FILE", pattern, 1);
  weft_log_reset();
  uint64_t rng = test_seed(7);
  unsigned token = (unsigned)test_rand(&rng);
  INFO(NCCL_NET, "net line %u", token);
  INFO(NCCL_INIT, "init line %u", token);
  WARN("warn line %u", token + 1);
  weft_log(NCCL_LOG_TRACE, NCCL_NET, __FILE__, __LINE__, "trace line %u", token);
  unsetenv("NCCL_DEBUG_FILE");
  weft_log_reset(); /* closes the file (and does not reopen it) */
  char* text = slurp(expect_path);
  EXPECT(text != NULL);
  char want[64];
  snprintf(want, sizeof want, "NCCL INFO net line %u", token);
  EXPECT(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "init line %u", token);
  EXPECT(strstr(text, want) == NULL);
  snprintf(want, sizeof want, "NCCL WARN util_log.c:");
  EXPECT(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "warn line %u", token + 1);
  EXPECT(strstr(text, want) != NULL);
  EXPECT(strstr(text, "trace line") == NULL);
  char last[256];
  weft_log_last_error(last, sizeof last);
  EXPECT(strcmp(last, want) == 0);
  unlink(expect_path);
  rmdir(dir);
  return 0;
}
