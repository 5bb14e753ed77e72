/* devcomm_interop (label gpu): kernels built against weft's nccl_device.h and against NVIDIA's
 * 2.30.7 one meet at the same LSA barrier and read each other's memory, on one GPU, without
 * weft's library: the test lays out two LSA ranks by hand with the frozen 2.30 layouts
 * (abi/nccl_devcomm.h) and a flat mapping (two allocations 4 GiB apart in one reservation),
 * then runs rank 0 and rank 1 on two streams at once, for each pairing of headers
 * (weft/weft, weft/NVIDIA, NVIDIA/weft, NVIDIA/NVIDIA), twice each so that the barrier's epoch
 * carries over between launches and between headers. Checks every rank's sums against a host
 * reference (random inputs, seed printed) and every pointer the kernels computed against the
 * mapping. Exit 77 without a GPU. Built and run by devcomm_interop_check.cmake. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_devcomm.h"
#include "nccl_device.h"
#include "gpu_world.h" /* CUDA_OK */

#define INTEROP_KERNEL interopKernelWeft
#define INTEROP_LAUNCH interopLaunchWeft
#include "devcomm_interop_kernel.cuh"

void interopLaunchNvidia(ncclWindow_t win, void const* devComm, uint32_t seed, int round0,
                         int rounds, uintptr_t* pointers, int blocks, cudaStream_t stream);

#define CU_OK(call)                                                                           \
  do {                                                                                        \
    CUresult r_ = (call);                                                                     \
    if (r_ != CUDA_SUCCESS) {                                                                 \
      fprintf(stderr, "FAIL %s:%d: %s = %d\n", __FILE__, __LINE__, #call, (int)r_);          \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)
enum { kRanks = 2, kBlocks = 4, kRounds = 7 };
static const uint64_t k4G = UINT64_C(1) << 32;

typedef void (*Launch)(ncclWindow_t, void const*, uint32_t, int, int, uintptr_t*, int,
                       cudaStream_t);

/* Waits for both streams, at most 30 s: a barrier that never opens must not hang the test. */
static void waitBoth(cudaStream_t s[kRanks], const char* what) {
  time_t deadline = time(NULL) + 30;
  for (;;) {
    cudaError_t a = cudaStreamQuery(s[0]), b = cudaStreamQuery(s[1]);
    if (a == cudaSuccess && b == cudaSuccess) return;
    bool aBad = a != cudaSuccess && a != cudaErrorNotReady;
    bool bBad = b != cudaSuccess && b != cudaErrorNotReady;
    if (aBad || bBad) {
      fprintf(stderr, "FAIL %s: %s / %s\n", what, cudaGetErrorString(a), cudaGetErrorString(b));
      exit(1);
    }
    if (time(NULL) > deadline) {
      fprintf(stderr, "FAIL %s: the kernels did not finish in 30 s (barrier never opened)\n", what);
      exit(1);
    }
  }
}

int main(void) {
  const char* env = getenv("WEFT_TEST_SEED");
  uint32_t seed = env ? (uint32_t)strtoul(env, NULL, 0) : (uint32_t)time(NULL);
  printf("seed %u (WEFT_TEST_SEED to repeat)\n", seed);
  int nDev = 0;
  if (cudaGetDeviceCount(&nDev) != cudaSuccess || nDev == 0) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(0));

  /* The flat LSA mapping: rank r's copy at base + r * 4 GiB. */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  size_t size = ((size_t)(1 << 20) + gran - 1) / gran * gran;
  CUdeviceptr base = 0;
  CU_OK(cuMemAddressReserve(&base, k4G + size, 0, 0, 0));
  CUmemGenericAllocationHandle mem[kRanks];
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int r = 0; r < kRanks; r++) {
    CU_OK(cuMemCreate(&mem[r], size, &prop, 0));
    CU_OK(cuMemMap(base + r * k4G, size, 0, mem[r], 0));
    CU_OK(cuMemSetAccess(base + r * k4G, size, &access, 1));
    CUDA_OK(cudaMemset((void*)(base + r * k4G), 0, size));
  }

  /* What the library would make: device windows (2.32 form), peer deltas, window tables. */
  struct Dev {
    ncclWindowVidmem_v2_32_t win[kRanks];
    ncclDevWindowTable_v2_30_t table[kRanks];
    int32_t delta[kRanks];
    uintptr_t pointers[kRanks][INTEROP_POINTERS];
  };
  struct Dev host;
  memset(&host, 0, sizeof host);
  struct Dev* dev = NULL;
  CUDA_OK(cudaMalloc((void**)&dev, sizeof *dev));
  ncclDevComm_v2_30_t comm[kRanks];
  for (int r = 0; r < kRanks; r++) {
    host.delta[r] = r; /* LSA rank r is 1 * r units of 4 GiB from lsaFlatBase */
    ncclWindowVidmem_v2_32_t* w = &host.win[r];
    w->lsaFlatBase = (uintptr_t)base;
    w->lsaRank = r;
    w->worldRank = r;
    w->stride4G = 1;
    w->lsaPeerDelta4G = (uintptr_t)dev->delta;
    host.table[r].entries[0].base = (uintptr_t)(base + r * k4G);
    host.table[r].entries[0].size = size;
    host.table[r].entries[0].window = (uintptr_t)&dev->win[r];
    ncclDevComm_v2_30_t* c = &comm[r];
    memset(c, 0, sizeof *c);
    c->magic = NCCL_API_MAGIC;
    c->version = 23007;
    c->rank = c->lsaRank = r;
    c->nRanks = c->lsaSize = kRanks;
    c->nRanks_rcp32 = c->lsaSize_rcp32 = ncclDevCommRcp32(kRanks);
    c->windowTable = (uintptr_t)&dev->table[r];
    c->resourceWindow = (uintptr_t)&dev->win[r];
    c->resourceWindow_inlined.lsaFlatBase = (uintptr_t)base;
    c->resourceWindow_inlined.stride4G = 1;
    c->lsaBarrier.bufHandle = 0; /* the barrier words at offset 0 of each copy */
    c->lsaBarrier.nBarriers = kBlocks;
  }
  CUDA_OK(cudaMemcpy(dev, &host, sizeof host, cudaMemcpyHostToDevice));

  cudaStream_t stream[kRanks];
  for (int r = 0; r < kRanks; r++)
    CUDA_OK(cudaStreamCreateWithFlags(&stream[r], cudaStreamNonBlocking));
  const Launch launch[2] = {interopLaunchWeft, interopLaunchNvidia};
  const char* name[2] = {"weft", "NVIDIA"};
  int elems = INTEROP_ELEMS_PER_BLOCK * kBlocks, failures = 0;
  float* sums = (float*)malloc(sizeof(float) * elems);
  for (int pairing = 0; pairing < 4; pairing++) {
    int hdr[kRanks] = {pairing >> 1, pairing & 1};
    char what[64];
    snprintf(what, sizeof what, "rank 0 %s, rank 1 %s", name[hdr[0]], name[hdr[1]]);
    int round0 = pairing * 2 * kRounds;
    for (int r = 0; r < kRanks; r++)
      CUDA_OK(cudaMemset((char*)(base + r * k4G) + INTEROP_IN_OFFSET, 0, sizeof(float) * 2 * elems));
    CUDA_OK(cudaDeviceSynchronize());
    for (int launchNo = 0; launchNo < 2; launchNo++) {
      for (int r = 0; r < kRanks; r++)
        launch[hdr[r]]((ncclWindow_t)&dev->win[r], &comm[r], seed, round0 + launchNo * kRounds,
                       kRounds, dev->pointers[r], kBlocks, stream[r]);
      CUDA_OK(cudaGetLastError());
      waitBoth(stream, what);
    }
    for (int r = 0; r < kRanks; r++) {
      CUDA_OK(cudaMemcpy(sums, (char*)(base + r * k4G) + INTEROP_IN_OFFSET + sizeof(float) * elems,
                       sizeof(float) * elems, cudaMemcpyDeviceToHost));
      int bad = 0;
      for (int i = 0; i < elems; i++) {
        double want = 0;
        for (int k = round0; k < round0 + 2 * kRounds; k++)
          for (int p = 0; p < kRanks; p++) want += interopInput(seed, p, k, i);
        if ((double)sums[i] != want && bad++ < 3)
          fprintf(stderr, "FAIL %s: rank %d sum[%d] = %.0f, want %.0f\n", what, r, i, sums[i],
                  want);
      }
      failures += bad;
      uintptr_t got[INTEROP_POINTERS];
      CUDA_OK(cudaMemcpy(got, dev->pointers[r], sizeof got, cudaMemcpyDeviceToHost));
      uintptr_t mine = (uintptr_t)(base + r * k4G), other = (uintptr_t)(base + (1 - r) * k4G);
      uintptr_t want[INTEROP_POINTERS] = {
          mine + 8,  (uintptr_t)base + 8, (uintptr_t)(base + k4G) + 8, other + 8, other + 8,
          (uintptr_t)&dev->win[r], mine, other, other,
          10002 /* rail: 1 rank, rank 0, stride 2 */};
      for (int p = 0; p < INTEROP_POINTERS; p++)
        if (got[p] != want[p]) {
          fprintf(stderr, "FAIL %s: rank %d pointer %d = %#lx, want %#lx\n", what, r, p,
                  (unsigned long)got[p], (unsigned long)want[p]);
          failures++;
        }
    }
    printf("%s: %d rounds over 2 launches, sums and pointers %s\n", what, 2 * kRounds,
           failures ? "WRONG" : "right");
  }
  free(sums);
  for (int r = 0; r < kRanks; r++) {
    CUDA_OK(cudaStreamDestroy(stream[r]));
    CU_OK(cuMemUnmap(base + r * k4G, size));
    CU_OK(cuMemRelease(mem[r]));
  }
  CU_OK(cuMemAddressFree(base, k4G + size));
  CUDA_OK(cudaFree(dev));
  if (failures) {
    fprintf(stderr, "%d failures (seed %u)\n", failures, seed);
    return 1;
  }
  printf("devcomm_interop: OK\n");
  return 0;
}
