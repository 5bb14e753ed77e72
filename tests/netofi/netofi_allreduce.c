/* Host-mode collectives through the public API with the libfabric plugin as the network
 * (NCCL_NET_PLUGIN = libnccl-net-weft-ofi.so, NCCL_NET=weft-ofi so nothing else may be picked,
 * NCCL_SHM_DISABLE / NCCL_P2P_DISABLE so every byte crosses the plugin). N forked ranks run
 * AllReduce (sum) on int32 and on float holding small integers (exact in any reduction order)
 * of several sizes, on random data, and check every element against the sum each rank computes
 * alone. While weft's host data path still answers "not available yet" the test skips (77). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"

static int* not_available; /* shared with the ranks */

static int is_not_available(ncclResult_t res, ncclComm_t comm) {
  const char* msg = ncclGetLastError(comm);
  return res == ncclInvalidUsage && msg && strstr(msg, "not available yet");
}

static int32_t val(uint64_t seed, int rank, size_t i) {
  uint64_t s = seed ^ ((uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull);
  s ^= s >> 31;
  s *= 0x94d049bb133111ebull;
  s ^= s >> 29;
  return (int32_t)(s % 2001) - 1000;
}

static const size_t counts[] = {1, 1023, 65536 + 5, (1u << 20) + 3};

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRank(&comm, nranks, *id, rank);
  if (res != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommInitRank: %s: %s\n", rank, ncclGetErrorString(res),
            ncclGetLastError(NULL));
    return 1;
  }
  uint64_t seed = test_seed(0x0f1ab1e5);
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    size_t n = counts[k];
    int32_t* si = malloc(n * sizeof *si);
    int32_t* ri = malloc(n * sizeof *ri);
    float* sf = malloc(n * sizeof *sf);
    float* rf = malloc(n * sizeof *rf);
    EXPECT(si && ri && sf && rf);
    for (size_t i = 0; i < n; i++) {
      si[i] = val(seed + k, rank, i);
      sf[i] = (float)val(seed + k + 100, rank, i);
    }
    memset(ri, 0xEE, n * sizeof *ri);
    memset(rf, 0xEE, n * sizeof *rf);
    res = ncclAllReduce(si, ri, n, ncclInt32, ncclSum, comm, NULL);
    if (is_not_available(res, comm)) {
      __atomic_store_n(not_available, 1, __ATOMIC_RELEASE);
      printf("rank %d: %s\n", rank, ncclGetLastError(comm));
      ncclCommDestroy(comm);
      return 0;
    }
    if (res != ncclSuccess) {
      fprintf(stderr, "rank %d: ncclAllReduce(int32, %zu): %s: %s\n", rank, n,
              ncclGetErrorString(res), ncclGetLastError(comm));
      return 1;
    }
    res = ncclAllReduce(sf, rf, n, ncclFloat32, ncclSum, comm, NULL);
    if (res != ncclSuccess) {
      fprintf(stderr, "rank %d: ncclAllReduce(float, %zu): %s: %s\n", rank, n,
              ncclGetErrorString(res), ncclGetLastError(comm));
      return 1;
    }
    for (size_t i = 0; i < n; i++) {
      int64_t want_i = 0, want_f = 0;
      for (int r = 0; r < nranks; r++) {
        want_i += val(seed + k, r, i);
        want_f += val(seed + k + 100, r, i);
      }
      if (ri[i] != (int32_t)want_i || rf[i] != (float)want_f) {
        fprintf(stderr, "rank %d: %zu elements, element %zu: int32 %d (want %lld), float %g "
                "(want %lld)\n",
                rank, n, i, ri[i], (long long)want_i, (double)rf[i], (long long)want_f);
        return 1;
      }
    }
    free(si);
    free(ri);
    free(sf);
    free(rf);
  }
  EXPECT_OK(ncclCommFinalize(comm));
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int n = argc > 1 ? atoi(argv[1]) : 2;
  const char* plugin = getenv("NCCL_NET_PLUGIN");
  if (plugin == NULL || strstr(plugin, "nccl-net-weft-ofi") == NULL) {
    fprintf(stderr, "NCCL_NET_PLUGIN must name libnccl-net-weft-ofi.so (it is %s)\n",
            plugin ? plugin : "unset");
    return 1;
  }
  not_available = mmap(NULL, sizeof *not_available, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT(not_available != MAP_FAILED);
  *not_available = 0;
  int rc = test_fork_ranks(n, rank_main, NULL, 240);
  if (rc == 0 && __atomic_load_n(not_available, __ATOMIC_ACQUIRE)) {
    printf("SKIP: host-mode collectives are not available yet in this weft build\n");
    return TEST_SKIP_RC;
  }
  return rc;
}
