/* devcomm_layout_select: the helpers of abi/nccl_devcomm.h. Which versions select which layout
 * (and which are refused), how a device communicator handed back is recognised (2.29's carry
 * no version), the sizes per layout, that the *_rcp32 reciprocal makes the kernels'
 * division exact, and that the LSA barrier's word macros tile the buffer exactly once. Random
 * cases use a printed seed (WEFT_TEST_SEED to repeat one). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nccl_devcomm.h"
#include "testutil.h"
#include "devcomm_check.h"

static uint64_t rng;
static uint32_t next32(void) { return (uint32_t)(test_rand(&rng) >> 16); }

static void versions_select_layouts(void) {
  static const struct {
    uint32_t version;
    ncclDevCommLayout_t layout;
  } cases[] = {
      {22707, NCCL_DEVCOMM_LAYOUT_V2_30},   /* weft's own headers, reporting 2.27.7 */
      {23000, NCCL_DEVCOMM_LAYOUT_V2_30},   {23003, NCCL_DEVCOMM_LAYOUT_V2_30},
      {23007, NCCL_DEVCOMM_LAYOUT_V2_30},   {23206, NCCL_DEVCOMM_LAYOUT_V2_32},
      {22902, NCCL_DEVCOMM_LAYOUT_V2_29_2}, {22903, NCCL_DEVCOMM_LAYOUT_V2_29_2},
      {22905, NCCL_DEVCOMM_LAYOUT_V2_29_7}, {22906, NCCL_DEVCOMM_LAYOUT_V2_29_7},
      {22907, NCCL_DEVCOMM_LAYOUT_V2_29_7}, /* NVIDIA's 2.30.7 converts exactly these */
      {22900, NCCL_DEVCOMM_LAYOUT_UNKNOWN}, {22901, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {22904, NCCL_DEVCOMM_LAYOUT_UNKNOWN}, {22908, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {22706, NCCL_DEVCOMM_LAYOUT_UNKNOWN}, {22809, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {22999, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {23008, NCCL_DEVCOMM_LAYOUT_UNKNOWN}, {23102, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {23203, NCCL_DEVCOMM_LAYOUT_UNKNOWN}, {23207, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {0, NCCL_DEVCOMM_LAYOUT_UNKNOWN},     {UINT32_MAX, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    CHECK(ncclDevCommLayoutOf(cases[i].version) == cases[i].layout,
          "version %u: layout %d, want %d", cases[i].version,
          (int)ncclDevCommLayoutOf(cases[i].version), (int)cases[i].layout);
  CHECK(ncclDevCommSizeOf(NCCL_DEVCOMM_LAYOUT_V2_30) == 240, "v2_30 devComm size");
  CHECK(ncclDevCommSizeOf(NCCL_DEVCOMM_LAYOUT_V2_32) == 248, "v2_32 devComm size");
  CHECK(ncclDevCommRequirementsSizeOf(NCCL_DEVCOMM_LAYOUT_V2_30) == 96, "v2_30 reqs size");
  CHECK(ncclDevCommRequirementsSizeOf(NCCL_DEVCOMM_LAYOUT_V2_32) == 136, "v2_32 reqs size");
  CHECK(ncclCommPropertiesSizeOf(NCCL_DEVCOMM_LAYOUT_V2_30) == 56, "v2_30 props size");
  CHECK(ncclCommPropertiesSizeOf(NCCL_DEVCOMM_LAYOUT_V2_32) == 152, "v2_32 props size");
  CHECK(ncclDevCommSizeOf(NCCL_DEVCOMM_LAYOUT_V2_29_2) == 200, "v2_29_2 devComm size");
  CHECK(ncclDevCommSizeOf(NCCL_DEVCOMM_LAYOUT_V2_29_7) == 224, "v2_29_7 devComm size");
  CHECK(ncclDevCommRequirementsSizeOf(NCCL_DEVCOMM_LAYOUT_V2_29_2) == 72, "v2_29_2 reqs size");
  CHECK(ncclDevCommRequirementsSizeOf(NCCL_DEVCOMM_LAYOUT_V2_29_7) == 88, "v2_29_7 reqs size");
  CHECK(ncclCommPropertiesSizeOf(NCCL_DEVCOMM_LAYOUT_V2_29_2) == 40, "v2_29_2 props size");
  CHECK(ncclCommPropertiesSizeOf(NCCL_DEVCOMM_LAYOUT_V2_29_7) == 56, "v2_29_7 props size");
  CHECK(ncclDevCommSizeOf(NCCL_DEVCOMM_LAYOUT_UNKNOWN) == 0 &&
            ncclDevCommRequirementsSizeOf(NCCL_DEVCOMM_LAYOUT_UNKNOWN) == 0 &&
            ncclCommPropertiesSizeOf(NCCL_DEVCOMM_LAYOUT_UNKNOWN) == 0,
        "UNKNOWN has no size");
}

/* A device communicator handed back: versioned ones by their version (only layouts that carry
 * one), anything else is 2.29's, whose first words are a rank and nRanks. */
static void devcomms_select_layouts(void) {
  static const struct {
    uint32_t magic, version;
    ncclDevCommLayout_t layout;
  } cases[] = {
      {NCCL_API_MAGIC, 23007, NCCL_DEVCOMM_LAYOUT_V2_30},
      {NCCL_API_MAGIC, 22707, NCCL_DEVCOMM_LAYOUT_V2_30},
      {NCCL_API_MAGIC, 23206, NCCL_DEVCOMM_LAYOUT_V2_32},
      {NCCL_API_MAGIC, 22907, NCCL_DEVCOMM_LAYOUT_UNKNOWN}, /* 2.29's carry no version */
      {NCCL_API_MAGIC, 22902, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {NCCL_API_MAGIC, 23100, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
      {NCCL_API_MAGIC, 0, NCCL_DEVCOMM_LAYOUT_UNKNOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ncclDevCommHead_t h = {cases[i].magic, cases[i].version};
    CHECK(ncclDevCommLayoutOfDevComm(&h) == cases[i].layout, "devComm magic 0x%x version %u: "
          "layout %d, want %d", h.magic, h.version, (int)ncclDevCommLayoutOfDevComm(&h),
          (int)cases[i].layout);
  }
  for (int i = 0; i < 1000; i++) { /* 2.29: rank, nRanks */
    uint32_t nranks = 1 + next32() % 0x7fffffffu;
    ncclDevCommHead_t h = {next32() % nranks, nranks};
    CHECK(ncclDevCommLayoutOfDevComm(&h) == NCCL_DEVCOMM_LAYOUT_V2_29_2,
          "rank %u of %u: not read as 2.29", h.magic, h.version);
  }
  CHECK(ncclDevCommLayoutVersioned(NCCL_DEVCOMM_LAYOUT_V2_30) &&
            ncclDevCommLayoutVersioned(NCCL_DEVCOMM_LAYOUT_V2_32) &&
            !ncclDevCommLayoutVersioned(NCCL_DEVCOMM_LAYOUT_V2_29_2) &&
            !ncclDevCommLayoutVersioned(NCCL_DEVCOMM_LAYOUT_V2_29_7),
        "versioned layouts");
}

/* Kernels divide x by n as: q = rcp ? high half of x * rcp : x, plus one if x - q*n >= n. */
static void reciprocal_divides_exactly(void) {
  for (int i = 0; i < 200000; i++) {
    uint32_t n = i < 64 ? (uint32_t)i + 1 : 1 + next32() % (i % 2 ? 4096u : 0x7fffffffu);
    uint32_t x = i % 3 ? next32() % 0x80000000u : next32() % (n * 4u + 1);
    uint32_t rcp = ncclDevCommRcp32(n);
    uint32_t q = rcp == 0 ? x : (uint32_t)(((uint64_t)x * rcp) >> 32);
    if (x - q * n >= n) q++;
    CHECK(q == x / n, "%u / %u: %u with rcp %u", x, n, q, rcp);
    if (failures > 10) return;
  }
}

/* Every word of an LSA barrier buffer is named by exactly one macro, and nothing beyond it. */
static void barrier_words_tile_the_buffer(void) {
  for (int i = 0; i < 300; i++) {
    int nBarriers = 1 + (int)(next32() % 40), nRanks = 1 + (int)(next32() % 72);
    int words = NCCL_LSA_BARRIER_WORDS(nBarriers, nRanks);
    CHECK(NCCL_LSA_BARRIER_BYTES(nBarriers, nRanks) == (size_t)words * 4, "bytes");
    unsigned char* seen = calloc((size_t)words, 1);
    for (int b = 0; b < nBarriers; b++) {
      int idx[3] = {NCCL_LSA_BARRIER_MC_EPOCH(nBarriers, b),
                    NCCL_LSA_BARRIER_UC_EPOCH(nBarriers, b),
                    NCCL_LSA_BARRIER_MC_INBOX(nBarriers, b)};
      for (int k = 0; k < 3; k++)
        if (idx[k] >= 0 && idx[k] < words) seen[idx[k]]++;
        else CHECK(0, "word %d outside %d words", idx[k], words);
      for (int p = 0; p < nRanks; p++) {
        int w = NCCL_LSA_BARRIER_UC_INBOX(nBarriers, nRanks, b, p);
        if (w >= 0 && w < words) seen[w]++;
        else CHECK(0, "inbox word %d outside %d words", w, words);
      }
    }
    for (int w = 0; w < words; w++)
      CHECK(seen[w] == 1, "nBarriers %d nRanks %d: word %d named %d times", nBarriers, nRanks, w,
            seen[w]);
    free(seen);
    if (failures > 10) return;
  }
}

int main(void) {
  test_require_weft_lib();
  uint64_t seed = test_seed((uint64_t)time(NULL));
  printf("seed %llu\n", (unsigned long long)seed);
  rng = seed;
  versions_select_layouts();
  devcomms_select_layouts();
  reciprocal_divides_exactly();
  barrier_words_tile_the_buffer();
  if (failures) {
    fprintf(stderr, "%d failures (seed %llu)\n", failures, (unsigned long long)seed);
    return 1;
  }
  printf("layout selection, reciprocals and barrier words OK\n");
  return 0;
}
