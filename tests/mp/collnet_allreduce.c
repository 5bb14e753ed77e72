/* CollNet AllReduce in host mode through the fixture CollNet plugin
 * (tests/plugins/broken/collnet_ref.c beside refnet: libnccl-net-collnet-refnet.so), on forked
 * ranks that NCCL_HOSTID places on "hosts" of their own (2 hosts x 2 ranks, 3 hosts x 1 rank).
 *
 *   collnet_allreduce plugin <hosts> <ppn>   NCCL_COLLNET_ENABLE=1 and the fixture as the net
 *       plugin: every (type, operator) the fixture claims, random data, sizes 1 .. 3 steps with
 *       odd counts, in place and out of place, checked against a reference each rank computes
 *       alone (integer-valued floats, so every order of the sums is exact). Forced to
 *       CollNetChain: each leader's iallreduce count (the fixture's counter) must grow, the other
 *       ranks' not. Unclaimed pairs (float16 sum, float32 avg) must run elsewhere (the counter
 *       unchanged) and still be right. And the cost model, asked with NCCL_ALGO unset
 *       (weftCommTuneQuery), picks CollNetChain for a small float sum.
 *   collnet_allreduce noplugin   NCCL_COLLNET_ENABLE=1, the built-in socket net (no CollNet):
 *       the query never answers CollNet, and NCCL_ALGO=CollNetChain still gives right results.
 *   collnet_allreduce nodev      the fixture reporting 0 devices: the same, and no iallreduce.
 *   collnet_allreduce failing    the fixture failing every iallreduce (2 x 2): a CollNet
 *       AllReduce returns an error on every rank, promptly, and the communicator is freed.
 *   collnet_allreduce interleaved   the fixture, but 2 hosts whose ranks alternate (0 and 2 on
 *       one, 1 and 3 on the other: not host-major, so no leaders' group): the same.
 *
 * Seed: WEFT_TEST_SEED (printed). */

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"
#include "nccl_common.h"
#include "testutil.h"

/* weft's extension (core/api/api_tune.c): what the communicator would run, nothing run. */
ncclResult_t weftCommTuneQuery(ncclComm_t comm, int coll, size_t count, ncclDataType_t datatype,
                               int* algorithm, int* protocol, int* nChannels, float* predictedUs);

#ifndef PLUGIN_DIR
#error PLUGIN_DIR must name the folder of the fixture plugins
#endif

typedef struct {
  int mode; /* 0 plugin, 1 noplugin, 2 nodev, 3 interleaved, 4 failing */
  int ppn;
  uint64_t seed;
  char lib[512];
} args_t;

static size_t tsize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

/* Rank r's element i: a small integer (as the type), so sums and products of a few ranks stay
 * exact in every type and every order. */
static int64_t input(uint64_t seed, int r, size_t i, ncclRedOp_t op) {
  uint64_t s = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(r + 1)) ^ (i * 0xbf58476d1ce4e5b9ull);
  s ^= s >> 31;
  s *= 0x94d049bb133111ebull;
  s ^= s >> 29;
  if (op == ncclProd) return (int64_t)(s % 5) - 2; /* -2..2 */
  return (int64_t)(s % 201) - 100;                  /* -100..100 */
}

static void store(void* b, ncclDataType_t t, size_t i, int64_t v) {
  switch (t) {
    case ncclInt8: ((int8_t*)b)[i] = (int8_t)v; break;
    case ncclUint8: ((uint8_t*)b)[i] = (uint8_t)v; break;
    case ncclInt32: ((int32_t*)b)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t*)b)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t*)b)[i] = v; break;
    case ncclUint64: ((uint64_t*)b)[i] = (uint64_t)v; break;
    case ncclFloat32: ((float*)b)[i] = (float)v; break;
    case ncclFloat64: ((double*)b)[i] = (double)v; break;
    default: break;
  }
}

/* The reference of element i over n ranks, as the type holds it (integers wrap as the type). */
static void reference(void* out, ncclDataType_t t, ncclRedOp_t op, uint64_t seed, int n,
                      size_t i) {
  if (t == ncclFloat32 || t == ncclFloat64) {
    double acc = (double)input(seed, 0, i, op);
    for (int r = 1; r < n; r++) {
      double x = (double)input(seed, r, i, op);
      if (op == ncclSum) acc += x;
      else if (op == ncclProd) acc *= x;
      else if ((op == ncclMax) == (x > acc)) acc = x;
    }
    if (t == ncclFloat32) ((float*)out)[0] = (float)acc;
    else ((double*)out)[0] = acc;
    return;
  }
  int is_signed = t == ncclInt8 || t == ncclInt32 || t == ncclInt64;
  int bits = (int)tsize(t) * 8;
  uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  uint64_t acc = (uint64_t)input(seed, 0, i, op) & mask;
  for (int r = 1; r < n; r++) {
    uint64_t x = (uint64_t)input(seed, r, i, op) & mask;
    if (op == ncclSum) acc = (acc + x) & mask;
    else if (op == ncclProd) acc = (acc * x) & mask;
    else {
      int64_t sa = (int64_t)(acc << (64 - bits)) >> (64 - bits);
      int64_t sx = (int64_t)(x << (64 - bits)) >> (64 - bits);
      int gt = is_signed ? sx > sa : x > acc;
      if ((op == ncclMax) == gt && x != acc) acc = x;
    }
  }
  store(out, t, 0, (int64_t)acc);
}

static unsigned long* fixture_counter(const char* lib) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) return NULL;
  unsigned long* c = dlsym(h, "collnet_ref_iallreduce_calls");
  dlclose(h); /* weft's loader holds its own reference */
  return c;
}

static unsigned long calls(const args_t* a) {
  unsigned long* c = a->lib[0] ? fixture_counter(a->lib) : NULL;
  return c ? __atomic_load_n(c, __ATOMIC_RELAXED) : 0;
}

/* One AllReduce checked against the reference. Returns 0 when right. */
static int run_case(ncclComm_t comm, int rank, int n, ncclDataType_t t, ncclRedOp_t op,
                    size_t count, int in_place, uint64_t seed) {
  size_t e = tsize(t);
  char* send = malloc(count * e + 1);
  char* recv = malloc(count * e + 1);
  char* want = malloc(e);
  EXPECT(send && recv && want);
  for (size_t i = 0; i < count; i++) store(send, t, i, input(seed, rank, i, op));
  memset(recv, 0x5a, count * e);
  void* out = in_place ? send : recv;
  EXPECT_OK(ncclAllReduce(send, out, count, t, op, comm, NULL));
  int bad = 0;
  for (size_t i = 0; i < count && !bad; i++) {
    reference(want, t, op, seed, n, i);
    if (memcmp((char*)out + i * e, want, e) != 0) {
      fprintf(stderr, "rank %d: type %d op %d count %zu %s: element %zu differs from the "
              "reference\n", rank, (int)t, (int)op, count, in_place ? "in place" : "out of place",
              i);
      bad = 1;
    }
  }
  free(send);
  free(recv);
  free(want);
  return bad;
}

/* float16 sum and float32 avg, which the fixture does not claim: checked loosely (the values
 * are small integers: exact in half for these sizes, and avg of integers within 1e-6). */
static int run_unclaimed(ncclComm_t comm, int rank, int n, uint64_t seed) {
  size_t count = 1003;
  uint16_t* h = malloc(count * 2);
  float* f = malloc(count * 4);
  EXPECT(h && f);
  for (size_t i = 0; i < count; i++) {
    int64_t v = input(seed, rank, i, ncclProd); /* -2..2 */
    uint16_t sign = v < 0 ? 0x8000 : 0, m = (uint16_t)(v < 0 ? -v : v);
    h[i] = m == 0 ? 0 : (uint16_t)(sign | (m == 1 ? 0x3c00 : 0x4000)); /* 1.0 or 2.0 */
    f[i] = (float)input(seed, rank, i, ncclSum);
  }
  EXPECT_OK(ncclAllReduce(h, h, count, ncclFloat16, ncclSum, comm, NULL));
  EXPECT_OK(ncclAllReduce(f, f, count, ncclFloat32, ncclAvg, comm, NULL));
  int bad = 0;
  for (size_t i = 0; i < count && !bad; i++) {
    int64_t s = 0;
    double avg = 0;
    for (int r = 0; r < n; r++) {
      s += input(seed, r, i, ncclProd);
      avg += (double)input(seed, r, i, ncclSum);
    }
    avg /= n;
    /* half of a small integer: sign, exponent 15 + floor(log2 |s|), mantissa */
    uint16_t want = 0;
    if (s != 0) {
      int64_t m = s < 0 ? -s : s;
      int ex = 0;
      while ((m >> (ex + 1)) > 0) ex++;
      want = (uint16_t)((s < 0 ? 0x8000 : 0) | ((15 + ex) << 10) |
                        (((m << 10) >> ex) & 0x3ff));
    }
    if (h[i] != want || (f[i] - avg > 1e-4 || avg - f[i] > 1e-4)) {
      fprintf(stderr, "rank %d: unclaimed pair element %zu: half 0x%04x want 0x%04x, avg %g want "
              "%g\n", rank, i, h[i], want, (double)f[i], avg);
      bad = 1;
    }
  }
  free(h);
  free(f);
  return bad;
}

/* Mode 4: the plugin fails; the operation must fail everywhere (a leader's plugin error, the
 * others' peer gone wrong), and the communicator still be freed. */
static int failing_main(int rank, int nranks, ncclUniqueId* id, const args_t* a) {
  setenv("NCCL_ALGO", "AllReduce:CollNetChain", 1);
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  float* buf = calloc(1000, sizeof *buf);
  EXPECT(buf != NULL);
  ncclResult_t r = ncclAllReduce(buf, buf, 1000, ncclFloat32, ncclSum, comm, NULL);
  free(buf);
  if (r == ncclSuccess) {
    fprintf(stderr, "rank %d: AllReduce through a failing CollNet plugin returned success\n",
            rank);
    return 1;
  }
  if (rank % a->ppn == 0 && calls(a) == 0) {
    fprintf(stderr, "rank %d: the leader never called the plugin\n", rank);
    return 1;
  }
  ncclResult_t async = ncclSuccess;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async != ncclSuccess);
  EXPECT_OK(ncclCommAbort(comm));
  return 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  const args_t* a = arg;
  char host[32];
  snprintf(host, sizeof host, "collnet-host-%d", a->mode == 3 ? rank % 2 : rank / a->ppn);
  setenv("NCCL_HOSTID", host, 1);
  if (a->mode == 4) return failing_main(rank, nranks, id, a);
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  int leader = a->mode != 3 && rank % a->ppn == 0, bad = 0;
  /* The model alone (NCCL_ALGO unset): CollNet for a small sum only with a usable plugin. */
  int algo = -1;
  EXPECT_OK(weftCommTuneQuery(comm, ncclFuncAllReduce, 2, ncclFloat32, &algo, NULL, NULL, NULL));
  /* (Within a host over shared memory: with NCCL_SHM_DISABLE=1 its steps cost net hops and the
   * model rightly prefers RecDoubling.) */
  const char* noshm = getenv("NCCL_SHM_DISABLE");
  if (a->mode == 0 && algo != NCCL_ALGO_COLLNET_CHAIN && !(noshm && atoi(noshm) == 1)) {
    fprintf(stderr, "rank %d: the model chose algorithm %d for 8 bytes, not CollNetChain\n", rank,
            algo);
    bad = 1;
  }
  for (size_t c = 1; a->mode != 0 && c < (8u << 20); c = c * 4 + 1) {
    EXPECT_OK(weftCommTuneQuery(comm, ncclFuncAllReduce, c, ncclFloat32, &algo, NULL, NULL, NULL));
    if (algo == NCCL_ALGO_COLLNET_CHAIN || algo == NCCL_ALGO_COLLNET_DIRECT) {
      fprintf(stderr, "rank %d: CollNet chosen for %zu floats without a usable plugin\n", rank,
              c);
      bad = 1;
    }
  }
  setenv("NCCL_ALGO", "AllReduce:CollNetChain", 1); /* read at each init: this comm keeps its */
  ncclComm_t forced;
  EXPECT_OK(ncclCommSplit(comm, 0, rank, &forced, NULL));
  static const ncclDataType_t types[] = {ncclInt8,  ncclUint8,  ncclInt32,   ncclUint32,
                                         ncclInt64, ncclUint64, ncclFloat32, ncclFloat64};
  static const size_t sizes[] = {1, 7, 1000, 65537, 300001};
  uint64_t s = a->seed;
  for (int k = 0; k < 24 && !bad; k++) {
    ncclDataType_t t = types[k % 8];
    ncclRedOp_t op = (ncclRedOp_t)((k / 8 + k) % 4);
    size_t count = sizes[k % 5];
    if (count * tsize(t) > (1u << 20)) count = (1u << 20) / tsize(t) + 3; /* 2-3 steps */
    int in_place = (k / 3) & 1;
    unsigned long before = calls(a);
    bad |= run_case(forced, rank, nranks, t, op, count, in_place, s + (uint64_t)k);
    unsigned long made = calls(a) - before;
    int want_calls = a->mode == 0 && leader;
    if ((made > 0) != want_calls) {
      fprintf(stderr, "rank %d (%s): %lu iallreduce call(s) for case %d, expected %s\n", rank,
              leader ? "leader" : "not a leader", made, k, want_calls ? "some" : "none");
      bad = 1;
    }
  }
  unsigned long before = calls(a);
  if (!bad) bad |= run_unclaimed(forced, rank, nranks, s ^ 0x55);
  if (calls(a) != before) {
    fprintf(stderr, "rank %d: an unclaimed pair went through the plugin\n", rank);
    bad = 1;
  }
  EXPECT_OK(ncclCommDestroy(forced));
  EXPECT_OK(ncclCommDestroy(comm));
  return bad;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc < 2) {
    fprintf(stderr, "usage: %s plugin <hosts> <ppn> | noplugin | nodev | interleaved | failing\n",
            argv[0]);
    return 2;
  }
  args_t a;
  memset(&a, 0, sizeof a);
  int hosts = 2;
  a.ppn = 2;
  a.seed = test_seed(0xc011e7);
  if (strcmp(argv[1], "plugin") == 0) {
    a.mode = 0;
    if (argc >= 4) hosts = atoi(argv[2]), a.ppn = atoi(argv[3]);
    snprintf(a.lib, sizeof a.lib, "%s/libnccl-net-collnet-refnet.so", PLUGIN_DIR);
  } else if (strcmp(argv[1], "noplugin") == 0) {
    a.mode = 1;
  } else if (strcmp(argv[1], "failing") == 0) {
    a.mode = 4;
    snprintf(a.lib, sizeof a.lib, "%s/libnccl-net-collnet-failing.so", PLUGIN_DIR);
  } else if (strcmp(argv[1], "interleaved") == 0) {
    a.mode = 3;
    snprintf(a.lib, sizeof a.lib, "%s/libnccl-net-collnet-refnet.so", PLUGIN_DIR);
  } else if (strcmp(argv[1], "nodev") == 0) {
    a.mode = 2;
    snprintf(a.lib, sizeof a.lib, "%s/libnccl-net-collnet-nodev.so", PLUGIN_DIR);
  } else {
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  if (hosts < 2 || a.ppn < 1 || hosts * a.ppn > 8) {
    fprintf(stderr, "hosts %d x ppn %d: want 2+ hosts, at most 8 ranks\n", hosts, a.ppn);
    return 2;
  }
  printf("collnet_allreduce %s: %d hosts x %d rank(s), seed 0x%llx\n", argv[1], hosts, a.ppn,
         (unsigned long long)a.seed);
  setenv("NCCL_COLLNET_ENABLE", "1", 1);
  setenv("WEFT_DEVICE", "host", 1);
  if (a.lib[0]) setenv("NCCL_NET_PLUGIN", a.lib, 1);
  else setenv("NCCL_NET_PLUGIN", "none", 1);
  return test_fork_ranks(hosts * a.ppn, rank_main, &a, 100);
}
