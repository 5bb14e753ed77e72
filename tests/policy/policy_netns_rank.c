/* One rank of the two-host policy test (policy_netns.sh runs one per namespace). Usage:
 * policy_netns_rank RANK NRANKS, with NCCL_COMM_ID and WEFT_POLICY set, and
 *   POLTEST_EXPECT=ok        init passes; then each NAME=VALUE of POLTEST_ENV (';'-separated)
 *                            must be in this process's environment (the cluster's settings)
 *   POLTEST_EXPECT=mismatch  init fails with ncclInvalidUsage; each text of POLTEST_ERR
 *                            ('|'-separated) is in the error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static int check_list(const char* list, char sep, int (*one)(const char*)) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", list ? list : "");
  char* save = NULL;
  char seps[2] = {sep, '\0'};
  for (char* t = strtok_r(buf, seps, &save); t; t = strtok_r(NULL, seps, &save))
    if (!one(t)) return 0;
  return 1;
}

static int env_has(const char* pair) {
  const char* eq = strchr(pair, '=');
  if (eq == NULL) return 0;
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)(eq - pair), pair);
  const char* v = getenv(name);
  if (v == NULL || strcmp(v, eq + 1)) {
    fprintf(stderr, "expected %s, found %s=%s\n", pair, name, v ? v : "(unset)");
    return 0;
  }
  return 1;
}

static int error_has(const char* text) {
  const char* err = ncclGetLastError(NULL);
  if (strstr(err, text) == NULL) {
    fprintf(stderr, "error lacks \"%s\": %s\n", text, err);
    return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc != 3) return 2;
  int rank = atoi(argv[1]), nranks = atoi(argv[2]);
  const char* expect = getenv("POLTEST_EXPECT");
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id)); /* from NCCL_COMM_ID */
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
  if (expect && !strcmp(expect, "mismatch")) {
    EXPECT_RES(r, ncclInvalidUsage);
    EXPECT(check_list(getenv("POLTEST_ERR"), '|', error_has));
    printf("rank %d on %s: init failed as expected: %s\n", rank, host, ncclGetLastError(NULL));
    return 0;
  }
  EXPECT_OK(r);
  EXPECT(check_list(getenv("POLTEST_ENV"), ';', env_has));
  EXPECT_OK(ncclCommDestroy(comm));
  printf("rank %d on %s: init passed; %s\n", rank, host, getenv("POLTEST_ENV"));
  return 0;
}
