/* A bad value of any setting gets a WARN naming the setting and its default, and reads as the
 * default: every integer setting of the table, every string setting with a closed set of values
 * (WEFT_PARAM_CHOICES), NCCL_SOCKET_FAMILY=AF_UNIX and NCCL_P2P_LEVEL=garbage among them, and
 * the log's own NCCL_DEBUG (reported on stderr whatever the level) and NCCL_DEBUG_SUBSYS.
 * Good values (each choice, an integer where "#" allows one) read back unchanged and warn
 * nothing. The garbage is random (seed printed). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/log.h"
#include "util/param.h"

static char* slurp(const char* path) {
  static char buf[65536];
  buf[0] = '\0';
  FILE* f = fopen(path, "r");
  if (!f) return buf;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void last_warn(char* buf, size_t len) { weft_log_last_error(buf, len); }

/* The WARN for name: names it, the value and "default". */
static void expect_warned(const char* name, const char* value) {
  char w[1024];
  last_warn(w, sizeof w);
  if (!strstr(w, name) || !strstr(w, value) || !strstr(w, "default")) {
    fprintf(stderr, "%s=%s: no WARN naming it, the value and the default (last WARN: '%s')\n",
            name, value, w);
    exit(1);
  }
}

int main(void) {
  test_require_weft_lib();
  uint64_t rng = test_seed(4141);
  char garbage[32];
  snprintf(garbage, sizeof garbage, "garbage-%06x", (unsigned)(test_rand(&rng) & 0xffffff));
  int nparams = 0;
  const weft_param_info* table = param_table(&nparams);
  int n_int = 0, n_choice = 0, n_free = 0;
  unsetenv("NCCL_CONF_FILE");
  setenv("HOME", "/nonexistent", 1);
  for (int id = 0; id < nparams; id++) {
    const weft_param_info* p = &table[id];
    if (!strcmp(p->name, "NCCL_DEBUG") || !strcmp(p->name, "NCCL_DEBUG_SUBSYS") ||
        !strcmp(p->name, "NCCL_DEBUG_FILE"))
      continue; /* the log's own, below */
    char expected[256];
    if (p->kind == WEFT_PARAM_INT) {
      setenv(p->name, garbage, 1);
      int64_t def = 0;
      EXPECT(param_parse_int(p->def, &def));
      EXPECT_EQ_INT(param_int((weft_param_id)id), def);
      expect_warned(p->name, garbage);
      n_int++;
    } else if (!param_value_allowed(p, garbage, expected, sizeof expected)) {
      setenv(p->name, garbage, 1);
      EXPECT(strcmp(param_str((weft_param_id)id), p->def) == 0);
      expect_warned(p->name, garbage);
      EXPECT(strstr(expected, "expected") == NULL && expected[0] != '\0');
      n_choice++;
    } else {
      n_free++; /* free text: a path, a name, a list of prefixes */
    }
    unsetenv(p->name);
  }
  printf("%d integer and %d closed-set settings warn and keep the default; %d free-text\n", n_int,
         n_choice, n_free);
  EXPECT(n_int > 20 && n_choice >= 4);

  /* The issue's cases by name; their good values read back without a WARN. */
  const char* good[][2] = {{"NCCL_SOCKET_FAMILY", "AF_INET6"}, {"NCCL_SOCKET_FAMILY", "af_inet"},
                           {"NCCL_P2P_LEVEL", "PXB"},         {"NCCL_P2P_LEVEL", "3"},
                           {"NCCL_NET_GDR_LEVEL", "SYS"},      {"NCCL_IB_ADDR_FAMILY", "AF_INET6"}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    const weft_param_info* p = param_find(good[i][0]);
    EXPECT(p != NULL);
    EXPECT(param_value_allowed(p, good[i][1], NULL, 0));
  }
  const weft_param_info* fam = param_find("NCCL_SOCKET_FAMILY");
  EXPECT(!param_value_allowed(fam, "AF_UNIX", NULL, 0));
  EXPECT(!param_value_allowed(param_find("NCCL_P2P_LEVEL"), "-1", NULL, 0));
  EXPECT(!param_value_allowed(param_find("NCCL_P2P_LEVEL"), "PXB,SYS", NULL, 0));
  EXPECT(param_value_allowed(param_find("NCCL_DEBUG_SUBSYS"), "^init,NET", NULL, 0));
  EXPECT(!param_value_allowed(param_find("NCCL_DEBUG_SUBSYS"), "INIT,NETT", NULL, 0));

  /* NCCL_DEBUG=garbage turns logging off, so its WARN goes to stderr regardless. */
  char errpath[] = "/tmp/weft-badlog-XXXXXX";
  int fd = mkstemp(errpath);
  EXPECT(fd >= 0);
  int saved = dup(2);
  EXPECT(saved >= 0 && dup2(fd, 2) == 2);
  setenv("NCCL_DEBUG", garbage, 1);
  weft_log_reset();
  EXPECT_EQ_INT(weft_log_level(), NCCL_LOG_NONE);
  /* NCCL_DEBUG_SUBSYS with an unknown name: a WARN (logging is on at WARN). */
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NOSUCH", 1);
  weft_log_reset();
  fflush(stderr);
  EXPECT(dup2(saved, 2) == 2);
  close(saved);
  close(fd);
  char* err = slurp(errpath);
  unlink(errpath);
  char want[128];
  snprintf(want, sizeof want, "NCCL WARN NCCL_DEBUG=%s: expected VERSION", garbage);
  if (!strstr(err, want) || !strstr(err, "using the default") ||
      !strstr(err, "NCCL_DEBUG_SUBSYS=INIT,NOSUCH: expected") || !strstr(err, "default is")) {
    fprintf(stderr, "the log's settings did not warn as expected; stderr was:\n%s\n", err);
    return 1;
  }
  unsetenv("NCCL_DEBUG_SUBSYS");
  weft_log_reset();
  printf("NCCL_DEBUG and NCCL_DEBUG_SUBSYS warn too\n");
  return 0;
}
