/* devcomm_fill_layouts: core/api/api_devlayout.c, without a GPU. For each layout weft fills
 * (2.29.2, 2.29.7, 2.30, 2.32), on random values (printed seed; WEFT_TEST_SEED repeats one):
 * - the device communicator it writes, byte for byte, against an image built from NVIDIA's
 *   offsets written out below (from NVIDIA's headers, not from weft's structs): every named
 *   field in place, every other byte zero, nothing written past the layout's size;
 * - what ncclDevCommDestroy reads back (rank, nRanks, resource window);
 * - the requirements read from raw bytes at NVIDIA's offsets, with bytes past a 2.29 caller's
 *   struct poisoned (never read), and the 2.29 conversions NVIDIA's 2.30.7 library applies:
 *   GIN refused, 2.29.2's barrierCount taken as LSA barriers and railGinBarrierCount dropped. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_devlayout.h"
#include "testutil.h"
#include "devcomm_check.h"

static uint64_t rng;
static uint32_t next32(void) { return (uint32_t)(test_rand(&rng) >> 16); }
static uint64_t next64(void) { return ((uint64_t)next32() << 32) | next32(); }

/* NVIDIA's offsets of the fields the library writes (-1: the layout has none). */
typedef struct {
  ncclDevCommLayout_t layout;
  const char* name;
  uint32_t version;
  int size;
  int magic, ver, rank, nranks, nranks_rcp, lsa_rank, lsa_size, lsa_size_rcp, table, rwin;
  int flat, stride4g; /* in the device communicator (the inlined resource window's fields) */
  int lsa_bar, abort, hybrid_lsa_bar;
} nv_layout;

static const nv_layout layouts[] = {
    {NCCL_DEVCOMM_LAYOUT_V2_29_2, "2.29.2", 22902, 200, -1, -1, 0, 4, 8, 12, 16, 20, 24, 32,
     40 + 8, 40 + 24, 120, -1, -1},
    {NCCL_DEVCOMM_LAYOUT_V2_29_7, "2.29.7", 22907, 224, -1, -1, 0, 4, 8, 12, 16, 20, 24, 32,
     40 + 8, 40 + 24, 120, 216, -1},
    {NCCL_DEVCOMM_LAYOUT_V2_30, "2.30.7", 23007, 240, 0, 4, 8, 12, 16, 20, 24, 28, 32, 40,
     48 + 8, 48 + 24, 128, 208, 216},
    {NCCL_DEVCOMM_LAYOUT_V2_32, "2.32.6", 23206, 248, 0, 4, 8, 12, 16, 20, 24, 28, 32, 40,
     48 + 0, 48 + 8, 80, 168, 176},
};

static void put32(unsigned char* img, int off, uint32_t v) {
  if (off >= 0) memcpy(img + off, &v, 4);
}
static void put64(unsigned char* img, int off, uint64_t v) {
  if (off >= 0) memcpy(img + off, &v, 8);
}

static void writes_match_nvidia_offsets(void) {
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
    const nv_layout* L = &layouts[l];
    CHECK(ncclDevCommSizeOf(L->layout) == (size_t)L->size, "%s: size %zu, NVIDIA %d", L->name,
          ncclDevCommSizeOf(L->layout), L->size);
    for (int it = 0; it < 200; it++) {
      devlayout_fill f;
      memset(&f, 0, sizeof f);
      f.version = L->version;
      f.nranks = 1 + (int)(next32() % 4096);
      f.rank = (int)(next32() % (uint32_t)f.nranks);
      f.lsa_size = 1 + (int)(next32() % (uint32_t)f.nranks);
      f.lsa_rank = (int)(next32() % (uint32_t)f.lsa_size);
      f.window_table = (uintptr_t)next64();
      f.resource_window = it % 5 ? (uintptr_t)next64() : 0;
      f.flat = (uintptr_t)next64();
      f.stride4g = next32() % 64;
      f.lsa_handle = next32() % 1024;
      f.lsa_barriers = (int)(next32() % 128);
      f.hybrid_handle = next32() % 1024;
      f.abort_flag = (uintptr_t)next64();

      unsigned char want[512];
      _Alignas(8) unsigned char got[512];
      memset(want, 0, sizeof want);
      memset(want + L->size, 0xa5, sizeof want - (size_t)L->size);
      put32(want, L->magic, NCCL_API_MAGIC);
      put32(want, L->ver, L->version);
      put32(want, L->rank, (uint32_t)f.rank);
      put32(want, L->nranks, (uint32_t)f.nranks);
      put32(want, L->nranks_rcp, f.nranks == 1 ? 0 : (uint32_t)((1ull << 32) / (uint32_t)f.nranks));
      put32(want, L->lsa_rank, (uint32_t)f.lsa_rank);
      put32(want, L->lsa_size, (uint32_t)f.lsa_size);
      put32(want, L->lsa_size_rcp,
            f.lsa_size == 1 ? 0 : (uint32_t)((1ull << 32) / (uint32_t)f.lsa_size));
      put64(want, L->table, f.window_table);
      put64(want, L->rwin, f.resource_window);
      put64(want, L->flat, f.flat);
      put32(want, L->stride4g, f.stride4g);
      put32(want, L->lsa_bar, f.lsa_handle);
      put32(want, L->lsa_bar + 4, (uint32_t)f.lsa_barriers);
      put64(want, L->abort, f.abort_flag);
      put32(want, L->hybrid_lsa_bar, f.hybrid_handle);
      /* GIN (the proxy type; 2.30 only), every other iteration. NVIDIA 2.30.7's offsets:
       * railGinBarrier 136, ginConnectionCount 144, ginNetDeviceTypes 145, ginHandles 152,
       * ginSignalCount 184, ginCounterCount 188, ginSignalShadows 192, ginContextCount 200,
       * worldGinBarrier 232 (devcomm_layout_2.30.7 checks weft's struct against them). */
      if (it % 2 && L->layout == NCCL_DEVCOMM_LAYOUT_V2_30) {
        f.gin_handle = (uintptr_t)next64() | 1;
        f.gin_shadows = (uintptr_t)next64();
        f.gin_signals = (int)(next32() % 100000);
        f.gin_counters = (int)(next32() % 100000);
        f.gin_contexts = 1 + (int)(next32() % 8);
        f.world_gin_signal0 = next32();
        f.rail_gin_signal0 = next32();
        put32(want, 136, f.rail_gin_signal0);
        want[144] = 1;
        want[145] = 2; /* NCCL_NET_DEVICE_GIN_PROXY */
        put64(want, 152, f.gin_handle);
        put32(want, 184, (uint32_t)f.gin_signals);
        put32(want, 188, (uint32_t)f.gin_counters);
        put64(want, 192, f.gin_shadows);
        put32(want, 200, (uint32_t)f.gin_contexts);
        put32(want, 232, f.world_gin_signal0);
      }

      memset(got, 0xa5, sizeof got);
      memset(got, 0x3c, (size_t)L->size); /* stale bytes the write must clear */
      devlayout_write(L->layout, &f, got);
      for (int b = 0; b < (int)sizeof got; b++)
        if (got[b] != want[b]) {
          CHECK(0, "%s: byte %d is 0x%02x, want 0x%02x (%s)", L->name, b, got[b], want[b],
                b >= L->size ? "past the layout's end" : "see the offsets above");
          break;
        }

      int rank = -2, nranks = -2;
      uintptr_t rwin = 1;
      devlayout_read(L->layout, got, &rank, &nranks, &rwin);
      CHECK(rank == f.rank && nranks == f.nranks && rwin == f.resource_window,
            "%s: read back rank %d of %d, window 0x%llx", L->name, rank, nranks,
            (unsigned long long)rwin);
      /* What Destroy sees first: the 2.29 ones are read as 2.29 (by their rank). */
      ncclDevCommHead_t h;
      memcpy(&h, got, sizeof h);
      ncclDevCommLayout_t seen = ncclDevCommLayoutOfDevComm(&h);
      CHECK(ncclDevCommLayoutVersioned(L->layout) ? seen == L->layout
                                                  : seen == NCCL_DEVCOMM_LAYOUT_V2_29_2,
            "%s: a device communicator read back as layout %d", L->name, (int)seen);
      if (failures > 10) return;
    }
  }
}

/* A requirements struct of `size` bytes at NVIDIA's offsets; bytes past it poisoned. */
typedef struct {
  _Alignas(8) unsigned char b[192];
} raw_reqs;

static void reqs_init(raw_reqs* r, size_t size, uint32_t version) {
  memset(r->b, 0, size);
  memset(r->b + size, 0x7f, sizeof r->b - size);
  uint64_t sz = size;
  memcpy(r->b, &sz, 8);
  put32(r->b, 8, NCCL_API_MAGIC);
  put32(r->b, 12, version);
}

/* NVIDIA's requirement offsets (the same in every version that has the field). */
enum {
  R_LIST = 16, R_BARRIERS = 36, R_LSA_BARRIERS = 40, R_RAIL = 44, R_GIN_FORCE = 56,
  R_SIGNALS = 64, R_COUNTERS = 68, R_CONNECTION = 72, R_WORLD = 88
};

static ncclResult_t read_raw(ncclDevCommLayout_t layout, raw_reqs* r, devlayout_reqs* v) {
  return devlayout_reqs_read("devcomm_fill_layouts", 0, layout, r->b, v);
}

static void reqs_read_and_convert(void) {
  struct {
    ncclDevCommLayout_t layout;
    const char* name;
    uint32_t version;
    size_t size;
  } cases[] = {{NCCL_DEVCOMM_LAYOUT_V2_29_2, "2.29.2", 22902, 72},
               {NCCL_DEVCOMM_LAYOUT_V2_29_7, "2.29.7", 22907, 88},
               {NCCL_DEVCOMM_LAYOUT_V2_30, "2.30.7", 23007, 96}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (int it = 0; it < 100; it++) {
      raw_reqs r;
      devlayout_reqs v;
      int lsa = (int)(next32() % 64), bars = (int)(next32() % 64), rail = (int)(next32() % 8);
      reqs_init(&r, cases[c].size, cases[c].version);
      put32(r.b, R_LSA_BARRIERS, (uint32_t)lsa);
      put32(r.b, R_BARRIERS, (uint32_t)bars);
      put32(r.b, R_RAIL, (uint32_t)rail);
      ncclResult_t res = read_raw(cases[c].layout, &r, &v);
      CHECK(res == ncclSuccess, "%s: plain requirements refused (%d)", cases[c].name, (int)res);
      if (cases[c].layout == NCCL_DEVCOMM_LAYOUT_V2_29_2) {
        /* barrierCount meant LSA barriers; railGinBarrierCount is dropped. */
        CHECK(v.lsa_barriers == (bars > lsa ? bars : lsa) && v.barriers == 0 &&
                  v.rail_gin_barriers == 0,
              "2.29.2: lsa %d barriers %d rail %d read as lsa %d barriers %d rail %d", lsa, bars,
              rail, v.lsa_barriers, v.barriers, v.rail_gin_barriers);
      } else {
        CHECK(v.lsa_barriers == lsa && v.barriers == bars && v.rail_gin_barriers == rail,
              "%s: lsa %d barriers %d rail %d read as %d %d %d", cases[c].name, lsa, bars, rail,
              v.lsa_barriers, v.barriers, v.rail_gin_barriers);
      }
      /* Nothing past the caller's struct is read. */
      CHECK(v.gin_connection == 0 && v.world_gin_barriers == 0 && v.cft_caps == 0,
            "%s: read past the struct (connection %d, world %d)", cases[c].name,
            v.gin_connection, v.world_gin_barriers);
      if (failures > 10) return;
    }
  }

  /* GIN, as NVIDIA's 2.30.7 library answers 2.29 callers. */
  raw_reqs r;
  devlayout_reqs v;
  ncclDevResourceRequirements_v2_30_t res_gin = {0};
  res_gin.ginSignalCount = 1;
  /* 2.29.2: any GIN ask is refused. */
  int asks[] = {R_GIN_FORCE, R_SIGNALS, R_COUNTERS, R_LIST};
  for (size_t a = 0; a < sizeof asks / sizeof asks[0]; a++) {
    reqs_init(&r, 72, 22903);
    if (asks[a] == R_LIST) {
      uintptr_t p = (uintptr_t)&res_gin;
      memcpy(r.b + R_LIST, &p, sizeof p);
    } else if (asks[a] == R_GIN_FORCE) {
      r.b[R_GIN_FORCE] = 1;
    } else {
      put32(r.b, asks[a], 1 + next32() % 100);
    }
    CHECK(read_raw(NCCL_DEVCOMM_LAYOUT_V2_29_2, &r, &v) == ncclInvalidUsage,
          "2.29.2: GIN ask at offset %d not refused", asks[a]);
  }
  /* 2.29.7: GIN resources with GIN asked are refused; either alone is left to the checks of
   * every version (which refuse both on a communicator without GIN). */
  int resources[] = {R_SIGNALS, R_COUNTERS, R_BARRIERS, R_RAIL, R_LIST};
  for (size_t a = 0; a < sizeof resources / sizeof resources[0]; a++)
    for (int asked = 0; asked < 3; asked++) {
      reqs_init(&r, 88, 22905);
      if (resources[a] == R_LIST) {
        uintptr_t p = (uintptr_t)&res_gin;
        memcpy(r.b + R_LIST, &p, sizeof p);
      } else {
        put32(r.b, resources[a], 1 + next32() % 100);
      }
      if (asked == 1) r.b[R_GIN_FORCE] = 1;
      if (asked == 2) put32(r.b, R_CONNECTION, 1 + next32() % 2);
      ncclResult_t res = read_raw(NCCL_DEVCOMM_LAYOUT_V2_29_7, &r, &v);
      CHECK(res == (asked ? ncclInvalidUsage : ncclSuccess),
            "2.29.7: GIN resource at offset %d, asked %d: result %d", resources[a], asked,
            (int)res);
    }
  reqs_init(&r, 88, 22907);
  r.b[R_GIN_FORCE] = 1;
  CHECK(read_raw(NCCL_DEVCOMM_LAYOUT_V2_29_7, &r, &v) == ncclSuccess && v.gin_force,
        "2.29.7: ginForceEnable alone is read and left to the common checks");
  /* 2.30 reads what 2.29 callers lack. */
  reqs_init(&r, 96, 23000);
  put32(r.b, R_CONNECTION, 2);
  put32(r.b, R_WORLD, 5);
  CHECK(read_raw(NCCL_DEVCOMM_LAYOUT_V2_30, &r, &v) == ncclSuccess && v.gin_connection == 2 &&
            v.world_gin_barriers == 5,
        "2.30: ginConnectionType %d, worldGinBarrierCount %d", v.gin_connection,
        v.world_gin_barriers);
}

int main(void) {
  test_require_weft_lib();
  uint64_t seed = test_seed(0x6465766c61790001ull);
  printf("seed 0x%llx\n", (unsigned long long)seed);
  rng = seed;
  writes_match_nvidia_offsets();
  reqs_read_and_convert();
  if (failures) {
    fprintf(stderr, "%d failures (seed 0x%llx)\n", failures, (unsigned long long)seed);
    return 1;
  }
  printf("device communicators of 4 layouts and their requirements match NVIDIA's offsets\n");
  return 0;
}
