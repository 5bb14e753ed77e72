/* The LSA flat mapping of symmetric windows on one shared GPU (issue 39): ranks of one
 * communicator sharing a GPU are LSA peers; every peer's ncclMemAlloc window is reachable at
 * ncclGetLsaDevicePointer(window, offset, peer), which is flat + peer * stride + offset, read
 * and written here with the copy engines (cudaMemcpy from and to those addresses) and checked
 * against each rank's random contents. Also: ncclGetPeerDevicePointer agrees, the LSA team and
 * properties say so, a window on cudaMalloc memory is refused for LSA pointers with
 * ncclInvalidUsage, windows can be registered and released again (several rounds, several
 * sizes). Ranks (gpu_one_gpu.h): `--inproc N` (N ranks in this process on GPU 0) or
 * `--procs N` (N processes on GPU 0). Exits 77 without a usable GPU. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_one_gpu.h"
#include "gpu_world.h"
#include "nccl.h"
#include "testutil.h"

#define MAXR 8
#define MARK_OFF 4096 /* each rank writes 1 KiB at MARK_OFF + writer * 1 KiB of its next peer */

static uint64_t g_seed;

/* Word i of rank r's buffer in round k. */
static uint32_t pat(int k, int r, size_t i) {
  uint64_t x = g_seed ^ ((uint64_t)k << 56) ^ ((uint64_t)r << 48) ^ (i * 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (uint32_t)x;
}

typedef struct {
  int n, nlocal, first; /* ranks in all; driven here; the first driven here */
  ncclComm_t comm[MAXR];
  void* buf[MAXR];
  ncclWindow_t win[MAXR];
  size_t bytes;
} world;

/* A barrier across every rank: a one-int AllReduce, waited for. */
static void barrier(world* w) {
  int* d[MAXR];
  EXPECT_OK(ncclGroupStart());
  for (int l = 0; l < w->nlocal; l++) {
    CUDA_OK(cudaMalloc((void**)&d[l], sizeof(int)));
    EXPECT_OK(ncclAllReduce(d[l], d[l], 1, ncclInt, ncclSum, w->comm[l], 0));
  }
  EXPECT_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(0));
  for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaFree(d[l]));
}

static void register_all(world* w, int flags) {
  EXPECT_OK(ncclGroupStart());
  for (int l = 0; l < w->nlocal; l++)
    EXPECT_OK(ncclCommWindowRegister(w->comm[l], w->buf[l], w->bytes, &w->win[l], flags));
  EXPECT_OK(ncclGroupEnd());
}

static void deregister_all(world* w) {
  EXPECT_OK(ncclGroupStart());
  for (int l = 0; l < w->nlocal; l++) EXPECT_OK(ncclCommWindowDeregister(w->comm[l], w->win[l]));
  EXPECT_OK(ncclGroupEnd());
}

static void check_words(const uint32_t* got, int k, int r, size_t first, size_t count,
                        const char* what, int me) {
  for (size_t i = 0; i < count; i++)
    if (got[i] != pat(k, r, first + i)) {
      fprintf(stderr, "FAIL rank %d: %s: word %zu of rank %d's window is 0x%08x, expected "
              "0x%08x (seed 0x%llx)\n", me, what, first + i, r, got[i], pat(k, r, first + i),
              (unsigned long long)g_seed);
      exit(1);
    }
}

static void round_trip(world* w, int k, uint64_t* rng) {
  size_t words = w->bytes / 4;
  uint32_t* host = malloc(w->bytes);
  EXPECT(host);
  for (int l = 0; l < w->nlocal; l++) {
    EXPECT_OK(ncclMemAlloc(&w->buf[l], w->bytes));
    for (size_t i = 0; i < words; i++) host[i] = pat(k, w->first + l, i);
    CUDA_OK(cudaMemcpy(w->buf[l], host, w->bytes, cudaMemcpyHostToDevice));
  }
  register_all(w, NCCL_WIN_COLL_SYMMETRIC);
  for (int l = 0; l < w->nlocal; l++) {
    int me = w->first + l;
    ncclTeam_t lsa = ncclTeamLsa(w->comm[l]);
    EXPECT(lsa.nRanks == w->n && lsa.rank == me && lsa.stride == 1);
    ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
    EXPECT_OK(ncclCommQueryProperties(w->comm[l], &props));
    EXPECT_EQ_INT(props.nLsaTeams, 1);
    EXPECT_EQ_INT(props.rank, me);
    EXPECT_EQ_INT(props.multimemSupport, 0);
    char* base = NULL;
    for (int q = 0; q < w->n; q++) {
      size_t first = (size_t)(test_rand(rng) % (words - 1024));
      void *p = NULL, *pp = NULL;
      EXPECT_OK(ncclGetLsaDevicePointer(w->win[l], first * 4, q, &p));
      EXPECT_OK(ncclGetPeerDevicePointer(w->win[l], first * 4, q, &pp));
      EXPECT(p == pp && p != NULL);
      void* p0 = NULL;
      EXPECT_OK(ncclGetLsaDevicePointer(w->win[l], 0, q, &p0));
      if (q == 0) base = p0;
      /* flat + q * stride: equal strides, multiples of 4 GiB */
      EXPECT(((uintptr_t)p0 - (uintptr_t)base) % (1ull << 32) == 0);
      if (q > 0) EXPECT((uintptr_t)p0 - (uintptr_t)base == q * (((uintptr_t)p0 - (uintptr_t)base) / q));
      uint32_t got[1024];
      CUDA_OK(cudaMemcpy(got, p, sizeof got, cudaMemcpyDeviceToHost));
      check_words(got, k, q, first, 1024, "read through the LSA pointer", me);
      /* the last word of the window too */
      EXPECT_OK(ncclGetLsaDevicePointer(w->win[l], (words - 1) * 4, q, &p));
      CUDA_OK(cudaMemcpy(got, p, 4, cudaMemcpyDeviceToHost));
      check_words(got, k, q, words - 1, 1, "the last word through the LSA pointer", me);
    }
    void* p;
    EXPECT_RES(ncclGetLsaDevicePointer(w->win[l], w->bytes, 0, &p), ncclInvalidArgument);
    EXPECT_RES(ncclGetLsaDevicePointer(w->win[l], 0, w->n, &p), ncclInvalidArgument);
    p = (void*)1;
    EXPECT_OK(ncclGetLsaMultimemDevicePointer(w->win[l], 0, &p));
    EXPECT(p == NULL);
  }
  /* Each rank writes 1 KiB into its next peer's window through the flat mapping. */
  for (int l = 0; l < w->nlocal; l++) {
    int me = w->first + l, to = (me + 1) % w->n;
    uint32_t mark[256];
    for (int i = 0; i < 256; i++) mark[i] = pat(k + 100, me, (size_t)i);
    void* p;
    EXPECT_OK(ncclGetLsaDevicePointer(w->win[l], MARK_OFF + (size_t)me * 1024, to, &p));
    CUDA_OK(cudaMemcpy(p, mark, sizeof mark, cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaDeviceSynchronize());
  barrier(w);
  for (int l = 0; l < w->nlocal; l++) {
    int me = w->first + l, from = (me + w->n - 1) % w->n;
    uint32_t got[256];
    CUDA_OK(cudaMemcpy(got, (char*)w->buf[l] + MARK_OFF + (size_t)from * 1024, sizeof got,
                  cudaMemcpyDeviceToHost));
    check_words(got, k + 100, from, 0, 256, "a peer's write through the LSA pointer", me);
  }
  barrier(w);
  deregister_all(w);
  for (int l = 0; l < w->nlocal; l++) EXPECT_OK(ncclMemFree(w->buf[l]));
  free(host);
}

/* A window on cudaMalloc memory: collectives keep it, LSA pointers to peers are refused. */
static void malloc_window(world* w) {
  for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaMalloc(&w->buf[l], w->bytes));
  register_all(w, NCCL_WIN_COLL_SYMMETRIC);
  for (int l = 0; l < w->nlocal; l++) {
    void* p;
    EXPECT_RES(ncclGetLsaDevicePointer(w->win[l], 0, (w->first + l + 1) % w->n, &p),
               ncclInvalidUsage);
  }
  deregister_all(w);
  for (int l = 0; l < w->nlocal; l++) CUDA_OK(cudaFree(w->buf[l]));
}

static int run(world* w) {
  uint64_t rng = g_seed ^ (uint64_t)w->first;
  static const size_t sizes[] = {(2u << 20) + 3 * 4096, 64u << 10, 6u << 20};
  for (int k = 0; k < 3; k++) {
    w->bytes = sizes[k];
    round_trip(w, k, &rng);
  }
  if (w->n > 1) malloc_window(w);
  for (int l = 0; l < w->nlocal; l++) EXPECT_OK(ncclCommDestroy(w->comm[l]));
  return 0;
}

static int body(ncclComm_t* comms, int nlocal, int first, int nranks, void* arg) {
  (void)arg;
  world w;
  memset(&w, 0, sizeof w);
  w.n = nranks;
  w.nlocal = nlocal;
  w.first = first;
  memcpy(w.comm, comms, (size_t)nlocal * sizeof *comms);
  return run(&w);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  g_seed = test_seed(0x6c73616d6170ull);
  int procs;
  int n = gpu_one_gpu_args(argc, argv, MAXR, &procs);
  if (n == 0) return 2;
  printf("seed 0x%llx, %d ranks %s\n", (unsigned long long)g_seed, n,
         procs ? "in as many processes" : "in this process");
  int rc = gpu_one_gpu_run(n, procs, body, NULL, 240);
  if (rc == 0 && !procs) printf("ok\n");
  return rc;
}
