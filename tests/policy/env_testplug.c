/* A stand-in third-party env plugin for tests/policy/policy_env_core.c, built three ways:
 * libnccl-env-testv2.so (ncclEnvPlugin_v2 only), libnccl-env-testv1.so (_v1 only) and
 * libnccl-env-testfail.so (v2, init fails). It answers the environment first, then the
 * KEY=VALUE lines of the file WEFT_TEST_ENV_MAP names, into one buffer per name that it
 * rewrites on every call (as the ABI allows), and appends what it was asked to the file
 * WEFT_TEST_ENV_LOG: "init MAJOR.MINOR.PATCH logger=0|1", "get NAME", "finalize". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_env.h"

enum { MAX_KEYS = 32 };
static char keys[MAX_KEYS][64], values[MAX_KEYS][256], answers[MAX_KEYS][256];
static int nkeys;

static void note(const char* line) {
  const char* path = getenv("WEFT_TEST_ENV_LOG");
  FILE* f = path ? fopen(path, "a") : NULL;
  if (f == NULL) return;
  fprintf(f, "%s\n", line);
  fclose(f);
}

static ncclResult_t init_common(uint8_t major, uint8_t minor, uint8_t patch, int logger) {
  char what[64];
  snprintf(what, sizeof what, "init %d.%d.%d logger=%d", major, minor, patch, logger);
  note(what);
#ifdef ENV_TEST_INITFAIL
  return ncclInternalError;
#endif
  const char* path = getenv("WEFT_TEST_ENV_MAP");
  FILE* f = path ? fopen(path, "r") : NULL;
  char line[400];
  while (f && nkeys < MAX_KEYS && fgets(line, sizeof line, f)) {
    char* eq = strchr(line, '=');
    if (eq == NULL) continue;
    *eq = '\0';
    line[strcspn(line, "\n")] = '\0';
    eq[1 + strcspn(eq + 1, "\n")] = '\0';
    snprintf(keys[nkeys], sizeof keys[0], "%.63s", line);
    snprintf(values[nkeys], sizeof values[0], "%.255s", eq + 1);
    nkeys++;
  }
  if (f) fclose(f);
  return ncclSuccess;
}

#ifndef ENV_TEST_V1
static ncclResult_t init_v2(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix,
                            ncclDebugLogger_t logger) {
  (void)suffix;
  return init_common(major, minor, patch, logger != NULL);
}
#else

static ncclResult_t init_v1(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  (void)suffix;
  return init_common(major, minor, patch, 0);
}
#endif

static ncclResult_t finalize(void) {
  note("finalize");
  return ncclSuccess;
}

static const char* get(const char* name) {
  char what[128];
  snprintf(what, sizeof what, "get %.100s", name);
  note(what);
  const char* v = getenv(name);
  if (v) return v;
  for (int i = 0; i < nkeys; i++) {
    if (strcmp(keys[i], name)) continue;
    /* Garble the previous answer first: a caller that kept it sees the change. */
    memset(answers[i], 'x', sizeof answers[i] - 1);
    snprintf(answers[i], sizeof answers[i], "%s", values[i]);
    return answers[i];
  }
  return NULL;
}

#define EXPORT __attribute__((visibility("default")))
#ifdef ENV_TEST_V1
EXPORT const ncclEnv_v1_t ncclEnvPlugin_v1 = {"test-env", init_v1, finalize, get};
#else
EXPORT const ncclEnv_v2_t ncclEnvPlugin_v2 = {"test-env", init_v2, finalize, get};
#endif
