/* NCCL_ALGO / NCCL_PROTO are parsed once, at init: an unknown name fails ncclCommInitRank with
 * ncclInvalidUsage on every rank (and a WARN naming it), instead of failing the first
 * collective. Usage: host_bad_env VAR VALUE */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int rank_main(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  EXPECT_RES(ncclCommInitRank(&comm, n, *id, rank), ncclInvalidUsage);
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc < 3) return 2;
  setenv(argv[1], argv[2], 1);
  return test_fork_ranks(2, rank_main, NULL, 60);
}
