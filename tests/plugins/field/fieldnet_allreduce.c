/* Host-mode AllReduce over a field-case net plugin (tests/plugins/field/), 2 or 3 forked ranks,
 * NCCL_SHM_DISABLE=1 so every byte crosses the network, the plugin named by NCCL_NET_PLUGIN.
 *   fieldnet_allreduce ok NET N        NCCL_NET=NET must be used; int32 sums of random data at
 *                                      several sizes, checked against the sum each rank computes
 *   fieldnet_allreduce twice NET N     the same in two communicators one after the other in each
 *                                      rank (the loader drops the library with the first and
 *                                      loads it again for the second)
 *   fieldnet_allreduce fallback NET N  NET is unusable: the built-in Socket serves, and the log
 *                                      has one WARN naming the plugin's file and the reason
 *   fieldnet_allreduce timeout NET N   connections never complete: AllReduce fails within
 *                                      WEFT_TIMEOUT_MS + slack; the log reports the pending
 *                                      connection (peer, plugin call) before, and at, the bound
 * Logs go to one file per rank (NCCL_DEBUG_FILE); each mode checks its lines. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const char* mode;
static const char* net;
static char logdir[64];

/* Lines of this rank's log (its process's file) holding text. */
static int log_has(int rank, const char* text) {
  (void)rank;
  char path[160];
  snprintf(path, sizeof path, "%s/rank.%d.log", logdir, (int)getpid());
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f)) n += strstr(line, text) != NULL;
  fclose(f);
  return n;
}

static int32_t val(uint64_t seed, int rank, size_t i) {
  uint64_t s = seed ^ ((uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull);
  s ^= s >> 31;
  s *= 0x94d049bb133111ebull;
  s ^= s >> 29;
  return (int32_t)(s % 2001) - 1000;
}

static const size_t counts[] = {1, 1023, 65536 + 5, (1u << 20) + 3};

/* AllReduce of every size on one communicator, checked element by element. */
static int run_checked(ncclComm_t comm, int rank, int nranks, uint64_t seed) {
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    size_t n = counts[k];
    int32_t* s = malloc(n * sizeof *s);
    int32_t* r = malloc(n * sizeof *r);
    EXPECT(s && r);
    for (size_t i = 0; i < n; i++) s[i] = val(seed + k, rank, i);
    memset(r, 0xEE, n * sizeof *r);
    ncclResult_t res = ncclAllReduce(s, r, n, ncclInt32, ncclSum, comm, NULL);
    if (res != ncclSuccess) {
      fprintf(stderr, "rank %d: ncclAllReduce(%zu): %s: %s\n", rank, n, ncclGetErrorString(res),
              ncclGetLastError(comm));
      return 1;
    }
    for (size_t i = 0; i < n; i++) {
      int64_t want = 0;
      for (int q = 0; q < nranks; q++) want += val(seed + k, q, i);
      if (r[i] != (int32_t)want) {
        fprintf(stderr, "rank %d: %zu elements: element %zu is %d, expected %lld\n", rank, n, i,
                r[i], (long long)want);
        return 1;
      }
    }
    free(s);
    free(r);
  }
  return 0;
}

static int one_comm(int rank, int nranks, ncclUniqueId* id, uint64_t seed) {
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  if (run_checked(comm, rank, nranks, seed)) return 1;
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  uint64_t seed = test_seed(0xf1e1d);
  char want[160];
  if (!strcmp(mode, "ok")) {
    EXPECT(one_comm(rank, nranks, id, seed) == 0);
    snprintf(want, sizeof want, "NET/%s plugin ", net);
    EXPECT(log_has(rank, want) >= 1);
    return 0;
  }
  if (!strcmp(mode, "fallback")) {
    EXPECT(one_comm(rank, nranks, id, seed) == 0);
    EXPECT(log_has(rank, "NET/Socket plugin built-in (v11) selected") == 1);
    const char* lib = strrchr(getenv("NCCL_NET_PLUGIN"), '/');
    snprintf(want, sizeof want, "NET/Plugin: %s", getenv("NCCL_NET_PLUGIN"));
    EXPECT(lib != NULL && log_has(rank, want) >= 1);
    EXPECT(log_has(rank, "no devices (devices() reported 0), skipping") == 1);
    return 0;
  }
  /* timeout: the first collective sets the connections up and must fail within the bound. */
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  int32_t x = rank, y = 0;
  double t0 = now_s();
  ncclResult_t res = ncclAllReduce(&x, &y, 1, ncclInt32, ncclSum, comm, NULL);
  double dt = now_s() - t0;
  double bound = atof(getenv("WEFT_TIMEOUT_MS")) / 1000.0;
  EXPECT(res != ncclSuccess);
  EXPECT(dt >= bound - 0.5 && dt < bound + 20);
  EXPECT(log_has(rank, "still pending after 5000 ms: the plugin's accept has not returned") >= 1);
  EXPECT(log_has(rank, "not established after") >= 1);
  EXPECT(log_has(rank, "(WEFT_TIMEOUT_MS): the plugin's accept has not returned for") >= 1);
  snprintf(want, sizeof want, "from rank %d", (rank + 1) % nranks);
  EXPECT(log_has(rank, want) >= 1);
  ncclCommAbort(comm);
  return 0;
}

/* Two communicators in turn: the first carries the second's unique id (rank 0's) to the others,
 * then goes, taking the last reference to the plugin with it. */
static int rank_twice(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  uint64_t seed = test_seed(0xf1e1d);
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  if (run_checked(comm, rank, nranks, seed)) return 1;
  ncclUniqueId next;
  memset(&next, 0, sizeof next);
  if (rank == 0) EXPECT_OK(ncclGetUniqueId(&next));
  EXPECT_OK(ncclBroadcast(&next, &next, sizeof next, ncclUint8, 0, comm, NULL));
  EXPECT_OK(ncclCommDestroy(comm));
  EXPECT(one_comm(rank, nranks, &next, seed + 1000) == 0);
  char want[160];
  snprintf(want, sizeof want, "NET/%s plugin ", net);
  EXPECT(log_has(rank, want) == 2); /* selected once per communicator */
  EXPECT(log_has(rank, "NET/Plugin: loaded ") == 2); /* and loaded (init, table) each time */
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc < 4) {
    fprintf(stderr, "usage: %s ok|twice|fallback|timeout NET NRANKS\n", argv[0]);
    return 2;
  }
  mode = argv[1];
  net = argv[2];
  int n = atoi(argv[3]);
  snprintf(logdir, sizeof logdir, "/tmp/fieldnet.XXXXXX");
  EXPECT(mkdtemp(logdir) != NULL);
  char logfile[128];
  snprintf(logfile, sizeof logfile, "%s/rank.%%p.log", logdir);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  setenv("NCCL_DEBUG_FILE", logfile, 1);
  setenv("NCCL_SHM_DISABLE", "1", 1);
  if (strcmp(mode, "fallback") != 0) setenv("NCCL_NET", net, 1);
  int rc = test_fork_ranks(n, !strcmp(mode, "twice") ? rank_twice : rank_main, NULL, 240);
  if (rc != 0 || getenv("FIELDNET_KEEP_LOGS")) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "tail -n 25 %s/rank.*.log >&2", logdir);
    if (system(cmd) != 0) fprintf(stderr, "(no logs)\n");
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", logdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", logdir);
  return rc;
}
