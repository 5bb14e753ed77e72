/* A small NCCL application, built against an installed weft the way a user builds one against
 * NCCL (#include <nccl.h>, link the library; nothing weft-specific), by tests/install. It forks
 * NRANKS processes that rendezvous through ncclGetUniqueId/ncclCommInitRank and run AllReduce
 * (int64 sum and float max), Broadcast and a ring of Send/Recv on pseudo-random data, each
 * result compared with a reference computed here from the same seeds, then agree on the verdict
 * with one more AllReduce. Buffers are host memory:
 * run it with WEFT_DEVICE=host. Prints the file the NCCL functions were loaded from
 * ("nccl_app: library PATH") so the caller can check it ran on the installed weft, and "nccl_app:
 * OK" when every rank passed. Usage: nccl_app [NRANKS (default 3)] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define COUNT 100003 /* odd, so no size is a multiple of any chunk */

#define CHECK(call)                                                                      \
  do {                                                                                   \
    ncclResult_t r_ = (call);                                                            \
    if (r_ != ncclSuccess) {                                                             \
      fprintf(stderr, "rank %d: %s failed: %s\n", rank, #call, ncclGetErrorString(r_)); \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

static uint64_t mix(uint64_t x) { /* splitmix64 */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static int64_t ival(uint64_t seed, int rank, size_t i) {
  return (int64_t)(mix(seed ^ ((uint64_t)rank << 40) ^ i) % 2000001) - 1000000;
}
static float fval(uint64_t seed, int rank, size_t i) {
  return (float)(mix(~seed ^ ((uint64_t)rank << 40) ^ i) % 1000003) / 7.0f - 70000.0f;
}

static int run_rank(int rank, int nranks, ncclUniqueId id, uint64_t seed) {
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int64_t* is = malloc(COUNT * sizeof *is);
  int64_t* ir = malloc(COUNT * sizeof *ir);
  float* fs = malloc(COUNT * sizeof *fs);
  float* fr = malloc(COUNT * sizeof *fr);
  if (!is || !ir || !fs || !fr) return 1;
  for (size_t i = 0; i < COUNT; i++) is[i] = ival(seed, rank, i), fs[i] = fval(seed, rank, i);
  int bad = 0;

  CHECK(ncclAllReduce(is, ir, COUNT, ncclInt64, ncclSum, comm, NULL));
  for (size_t i = 0; i < COUNT; i++) {
    int64_t want = 0;
    for (int r = 0; r < nranks; r++) want += ival(seed, r, i);
    if (ir[i] != want && bad++ < 3)
      fprintf(stderr, "rank %d: allreduce sum [%zu] = %" PRId64 ", want %" PRId64 "\n", rank, i,
              ir[i], want);
  }
  CHECK(ncclAllReduce(fs, fr, COUNT, ncclFloat, ncclMax, comm, NULL));
  for (size_t i = 0; i < COUNT; i++) {
    float want = fval(seed, 0, i);
    for (int r = 1; r < nranks; r++)
      if (fval(seed, r, i) > want) want = fval(seed, r, i);
    if (fr[i] != want && bad++ < 3)
      fprintf(stderr, "rank %d: allreduce max [%zu] = %g, want %g\n", rank, i, fr[i], want);
  }
  int root = nranks - 1;
  CHECK(ncclBroadcast(is, ir, COUNT, ncclInt64, root, comm, NULL));
  for (size_t i = 0; i < COUNT; i++)
    if (ir[i] != ival(seed, root, i) && bad++ < 3)
      fprintf(stderr, "rank %d: broadcast [%zu] wrong\n", rank, i);
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  CHECK(ncclGroupStart());
  CHECK(ncclSend(fs, COUNT, ncclFloat, next, comm, NULL));
  CHECK(ncclRecv(fr, COUNT, ncclFloat, prev, comm, NULL));
  CHECK(ncclGroupEnd());
  for (size_t i = 0; i < COUNT; i++)
    if (fr[i] != fval(seed, prev, i) && bad++ < 3)
      fprintf(stderr, "rank %d: recv from %d [%zu] wrong\n", rank, prev, i);

  /* Every rank learns whether any failed (and none destroys its communicator while a peer is
   * still setting up the point-to-point connections of the group above). */
  int32_t mine = bad, total = -1;
  CHECK(ncclAllReduce(&mine, &total, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(ncclCommDestroy(comm));
  free(is), free(ir), free(fs), free(fr);
  if (total != 0) fprintf(stderr, "rank %d: %d mismatches over all ranks\n", rank, (int)total);
  return total != 0;
}

int main(int argc, char** argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 3, rank = -1;
  if (nranks < 1 || nranks > 16) {
    fprintf(stderr, "nccl_app: NRANKS must be 1..16\n");
    return 2;
  }
  Dl_info info;
  if (!dladdr((void*)&ncclAllReduce, &info) || !info.dli_fname) {
    fprintf(stderr, "nccl_app: cannot tell which library holds ncclAllReduce\n");
    return 2;
  }
  int version = 0;
  CHECK(ncclGetVersion(&version));
  printf("nccl_app: library %s\nnccl_app: version %d\n", info.dli_fname, version);
  fflush(stdout);
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  uint64_t seed = mix((uint64_t)getpid());
  pid_t pids[16];
  for (int r = 0; r < nranks; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(run_rank(r, nranks, id, seed));
    if (pids[r] < 0) return 2;
  }
  int failed = 0;
  for (int r = 0; r < nranks; r++) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "nccl_app: rank %d failed (status 0x%x)\n", r, st);
      failed = 1;
    }
  }
  if (!failed) printf("nccl_app: OK (%d ranks)\n", nranks);
  return failed;
}
