/* Host-mode collectives over net-ib: 2 ranks, AllReduce through the public API, with the IB
 * plugin as the only network (NCCL_NET_PLUGIN=weft-ib, NCCL_NET=weft-ib, NCCL_SHM_DISABLE=1) over
 * fakeverbs. Results are checked exactly on random int32 data; each rank's log must show that
 * net-ib carried it. Exits 77 (skip) while weft answers that the host data path is "not
 * available yet". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"

static int* skipped; /* shared between the ranks and the parent */

static int32_t value(int rank, size_t i, uint32_t salt) {
  uint64_t x = ((uint64_t)rank << 40) ^ ((uint64_t)i << 8) ^ salt;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return (int32_t)(x % 2001) - 1000;
}

/* 1 when the failure is weft saying the feature is not there yet. */
static int not_yet(ncclComm_t comm) {
  const char* e = ncclGetLastError(comm);
  if (e && strstr(e, "not available yet")) {
    fprintf(stderr, "skipping: %s\n", e);
    __atomic_store_n(skipped, 1, __ATOMIC_RELEASE);
    return 1;
  }
  fprintf(stderr, "last error: %s\n", e ? e : "(none)");
  return 0;
}

static int log_mentions(const char* text) {
  char path[256];
  snprintf(path, sizeof path, "%s/netib_coll.%d.log", getenv("NETIB_LOG_DIR"), (int)getpid());
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, text) != NULL;
  fclose(f);
  return found;
}

static int rank_main(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  ncclResult_t r = ncclCommInitRank(&comm, n, *id, rank);
  if (r != ncclSuccess) return not_yet(NULL) ? 0 : 1;
  const size_t counts[] = {0, 1, 1000, 70001, 1 << 20};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    size_t c = counts[k];
    int32_t* s = malloc((c ? c : 1) * sizeof *s);
    int32_t* d = malloc((c ? c : 1) * sizeof *d);
    EXPECT(s && d);
    for (size_t i = 0; i < c; i++) s[i] = value(rank, i, (uint32_t)k);
    r = ncclAllReduce(s, d, c, ncclInt32, ncclSum, comm, NULL);
    if (r != ncclSuccess) {
      int skip = not_yet(comm);
      ncclCommAbort(comm);
      return skip ? 0 : 1;
    }
    for (size_t i = 0; i < c; i++) {
      int32_t want = 0;
      for (int q = 0; q < n; q++) want += value(q, i, (uint32_t)k);
      if (d[i] != want) {
        fprintf(stderr, "rank %d: AllReduce of %zu: element %zu is %d, expected %d\n", rank, c, i,
                d[i], want);
        return 1;
      }
    }
    free(s);
    free(d);
  }
  EXPECT_OK(ncclCommDestroy(comm));
  if (!log_mentions("NET/IB: using")) {
    fprintf(stderr, "rank %d: the log does not show net-ib in use\n", rank);
    return 1;
  }
  return 0;
}

int main(void) {
  test_require_weft_lib();
  skipped = mmap(NULL, sizeof *skipped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT(skipped != MAP_FAILED);
  char dir[] = "/tmp/netib_coll.XXXXXX";
  EXPECT(mkdtemp(dir) != NULL);
  char logfile[300];
  snprintf(logfile, sizeof logfile, "%s/netib_coll.%%p.log", dir);
  setenv("NETIB_LOG_DIR", dir, 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  setenv("NCCL_DEBUG_FILE", logfile, 1);
  setenv("NCCL_NET_PLUGIN", "weft-ib", 1);
  setenv("NCCL_NET", "weft-ib", 1);
  setenv("NCCL_SHM_DISABLE", "1", 1);
  int rc = test_fork_ranks(2, rank_main, NULL, 120);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (rc == 0 && __atomic_load_n(skipped, __ATOMIC_ACQUIRE)) return TEST_SKIP_RC;
  return rc;
}
