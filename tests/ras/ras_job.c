/* One rank of a host-mode job for the RAS tests (ras_test.py starts each rank as its own
 * process, NCCL_COMM_ID names the root): init, then AllReduce (sum, float, 1024 elements of
 * seeded random data, checked against the sum computed here from every rank's seed) until
 * DIR/stop exists (the ranks agree on it by an AllReduce) or the time runs out. It writes DIR/rank<R>.pid once init is done and
 * DIR/rank<R>.done with the count of checked AllReduces at the end. An AllReduce that fails
 * (a peer killed or stopped by the test) ends the loop; the process then waits for DIR/stop,
 * so that its RAS service stays up for the test's questions.
 *   ras_job RANK NRANKS DIR SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

enum { COUNT = 1024 };

static float val(uint64_t seed, int rank, int iter, int i) {
  uint64_t s = seed ^ ((uint64_t)(rank + 1) << 40) ^ ((uint64_t)iter << 20) ^ (uint64_t)i;
  s ^= s >> 33;
  s *= 0xff51afd7ed558ccdull;
  s ^= s >> 33;
  return (float)(s % 64); /* small integers: the float sum is exact in any order */
}

static int exists(const char* dir, const char* name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

static void put(const char* dir, int rank, const char* what, long v) {
  char p[512], tmp[520];
  snprintf(p, sizeof p, "%s/rank%d.%s", dir, rank, what);
  snprintf(tmp, sizeof tmp, "%s.tmp", p);
  FILE* f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "%ld\n", v);
  fclose(f);
  rename(tmp, p);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc != 5) {
    fprintf(stderr, "usage: ras_job RANK NRANKS DIR SECONDS\n");
    return 2;
  }
  int rank = atoi(argv[1]), nranks = atoi(argv[2]);
  const char* dir = argv[3];
  int secs = atoi(argv[4]);
  uint64_t seed = test_seed(0x5eed);
  if (rank == 0) printf("seed %llu\n", (unsigned long long)seed);
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  EXPECT_OK(ncclGetUniqueId(&id));
  ncclComm_t comm = NULL;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, id, rank));
  put(dir, rank, "pid", (long)getpid());
  float *buf = malloc(COUNT * sizeof *buf), *want = malloc(COUNT * sizeof *want);
  if (!buf || !want) return 1;
  long done = 0;
  int failed = 0;
  int* stop = malloc(sizeof *stop);
  if (!stop) return 1;
  for (int iter = 0; iter < secs * 2000; iter++) {
    *stop = exists(dir, "stop"); /* every rank stops after the same AllReduce */
    if (ncclAllReduce(stop, stop, 1, ncclInt32, ncclMax, comm, NULL) != ncclSuccess) {
      failed = 1;
      break;
    }
    if (*stop) break;
    for (int i = 0; i < COUNT; i++) {
      buf[i] = val(seed, rank, iter, i);
      want[i] = 0;
      for (int r = 0; r < nranks; r++) want[i] += val(seed, r, iter, i);
    }
    ncclResult_t res = ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, NULL);
    if (res != ncclSuccess) {
      failed = 1;
      break;
    }
    for (int i = 0; i < COUNT; i++)
      if (buf[i] != want[i]) {
        fprintf(stderr, "rank %d: AllReduce %d element %d: %g, want %g\n", rank, iter, i,
                buf[i], want[i]);
        return 1;
      }
    done++;
    usleep(1000); /* a job that also computes: the RAS tests measure answers, not speed */
  }
  put(dir, rank, "done", done);
  if (failed) {
    for (int t = 0; t < secs * 10 && !exists(dir, "stop"); t++) usleep(100000);
    ncclCommAbort(comm);
    return 0;
  }
  EXPECT_OK(ncclCommDestroy(comm));
  free(buf);
  free(want);
  free(stop);
  return 0;
}
