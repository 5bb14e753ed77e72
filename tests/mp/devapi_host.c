/* The device API's host functions on a host-mode communicator (CI has no GPU): what
 * ncclCommQueryProperties reports, as far as the caller's structure reaches; the refusals of
 * ncclDevCommCreate (bad magic, headers newer than weft knows, host mode) and
 * ncclDevCommDestroy; callers of 2.29 headers (their short properties, their requirements
 * recognised, their unversioned device communicator); the requirement functions against
 * NCCL's formulas on random arguments; the window pointer queries (own rank, peers outside
 * the LSA team, multicast off) and their bad arguments; NCCL_WIN_STRICT_ORDERING accepted by ncclCommWindowRegister. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "devcomm/devcomm_v2_30.h"
#include "testutil.h"

/* NVIDIA's layouts (nccl_device/core.h and the barrier handles), written out here so that the
 * test checks the library against them independently of weft's own definitions. */
struct ncclDevResourceRequirements {
  struct ncclDevResourceRequirements* next;
  size_t bufferSize, bufferAlign;
  uint32_t* outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  uint32_t* outGinSignalStart;
  uint32_t* outGinCounterStart;
};
struct ncclLsaBarrierHandle {
  uint32_t bufHandle;
  int nBarriers;
};
struct ncclGinBarrierHandle {
  uint32_t signal0;
  uint32_t unused;
};
/* The scratch handles: NVIDIA's layouts as abi/devcomm/ freezes them (with their static
 * asserts), completing nccl.h's opaque types as the library does. */
struct ncclLLA2AHandle {
  ncclLLA2AHandle_v2_30_t v;
};
struct ncclGinOutboxHandle {
  ncclGinOutboxHandle_v2_30_t v;
};
struct ncclGinInboxA2AHandle {
  ncclGinInboxA2AHandle_v2_30_t v;
};

static void check_props(ncclComm_t comm, int rank, int nranks) {
  ncclCommProperties_t p = NCCL_COMM_PROPERTIES_INITIALIZER;
  memset(&p.rank, 0x5a, sizeof p - offsetof(ncclCommProperties_t, rank));
  EXPECT_OK(ncclCommQueryProperties(comm, &p));
  EXPECT_EQ_INT(p.rank, rank);
  EXPECT_EQ_INT(p.nRanks, nranks);
  EXPECT_EQ_INT(p.cudaDev, -1); /* host mode: no device */
  EXPECT_EQ_INT(p.nvmlDev, -1);
  EXPECT_EQ_INT(p.deviceApiSupport, 0);
  EXPECT_EQ_INT(p.multimemSupport, 0);
  EXPECT_EQ_INT(p.ginType, NCCL_GIN_TYPE_NONE);
  EXPECT_EQ_INT(p.nLsaTeams, nranks); /* each rank is its own LSA team */
  EXPECT_EQ_INT(p.hostRmaSupport, 0);
  EXPECT_EQ_INT(p.railedGinType, NCCL_GIN_TYPE_NONE);

  /* Headers whose structure ends before nLsaTeams: nothing past their size is written. */
  ncclCommProperties_t q;
  memset(&q, 0x5a, sizeof q);
  q.size = offsetof(ncclCommProperties_t, nLsaTeams);
  q.magic = NCCL_API_MAGIC;
  q.version = NCCL_VERSION(2, 28, 3);
  EXPECT_OK(ncclCommQueryProperties(comm, &q));
  EXPECT_EQ_INT(q.rank, rank);
  EXPECT_EQ_INT(q.ginType, NCCL_GIN_TYPE_NONE);
  EXPECT_EQ_INT(q.nLsaTeams, 0x5a5a5a5a);
  EXPECT_EQ_INT(q.railedGinType, 0x5a5a5a5a);
}

/* Callers of NCCL 2.29 headers (NVIDIA's layouts, by offset): 2.29.2's properties end after a
 * one-byte ginType at 34 (40 bytes), 2.29.7's are 2.30's; 2.29.0, .1 and .4 are refused. Their
 * requirements are recognised (a short size is then ncclInvalidArgument, where an unknown
 * version is ncclInvalidUsage before any size check) and refused in host mode; their device
 * communicator has no magic and no version and starts with rank, nRanks (resourceWindow at 32):
 * Destroy accepts one of this communicator with no resources and refuses another's. */
static void check_2_29(ncclComm_t comm, int rank, int nranks) {
  _Alignas(8) unsigned char p[128];
  memset(p, 0x5a, sizeof p);
  uint64_t size = 40;
  uint32_t magic = NCCL_API_MAGIC, version = NCCL_VERSION(2, 29, 2);
  memcpy(p, &size, 8);
  memcpy(p + 8, &magic, 4);
  memcpy(p + 12, &version, 4);
  EXPECT_OK(ncclCommQueryProperties(comm, (ncclCommProperties_t*)(void*)p));
  int32_t v[4];
  memcpy(v, p + 16, sizeof v);
  EXPECT(v[0] == rank && v[1] == nranks && v[2] == -1 && v[3] == -1);
  EXPECT(p[32] == 0 && p[33] == 0 && p[34] == 0); /* no device API, no multimem, no GIN */
  for (int b = 35; b < (int)sizeof p; b++)
    if (p[b] != 0x5a) {
      EXPECT(!"2.29.2 properties: a byte past ginType was written");
      break;
    }

  ncclCommProperties_t q;
  memset(&q, 0x5a, sizeof q);
  q.size = 56;
  q.magic = NCCL_API_MAGIC;
  q.version = NCCL_VERSION(2, 29, 7);
  EXPECT_OK(ncclCommQueryProperties(comm, &q));
  EXPECT(q.rank == rank && q.nRanks == nranks && q.deviceApiSupport == 0);
  EXPECT_EQ_INT(q.ginType, NCCL_GIN_TYPE_NONE);
  EXPECT_EQ_INT(q.nLsaTeams, nranks);
  EXPECT_EQ_INT(q.railedGinType, NCCL_GIN_TYPE_NONE);
  for (int minor = 0; minor <= 8; minor++) {
    q = (ncclCommProperties_t)NCCL_COMM_PROPERTIES_INITIALIZER;
    q.version = NCCL_VERSION(2, 29, minor);
    int known = minor == 2 || minor == 3 || (minor >= 5 && minor <= 7);
    EXPECT_RES(ncclCommQueryProperties(comm, &q), known ? ncclSuccess : ncclInvalidUsage);
  }

  struct {
    size_t size;
    unsigned magic, version;
    char rest[256];
  } reqs;
  char dc[1024];
  const ncclDevCommRequirements_t* r = (const ncclDevCommRequirements_t*)(void*)&reqs;
  ncclDevComm_t* out = (ncclDevComm_t*)(void*)dc;
  static const struct {
    unsigned version;
    size_t size; /* NVIDIA's sizeof(ncclDevCommRequirements); 0: refused at any size */
  } rq[] = {{22902, 72}, {22903, 72}, {22905, 88}, {22907, 88}, {22901, 0}, {22904, 0},
            {22908, 0}};
  for (size_t i = 0; i < sizeof rq / sizeof rq[0]; i++) {
    memset(&reqs, 0, sizeof reqs);
    reqs.magic = NCCL_API_MAGIC;
    reqs.version = rq[i].version;
    reqs.size = 16;
    EXPECT_RES(ncclDevCommCreate(comm, r, out),
               rq[i].size ? ncclInvalidArgument : ncclInvalidUsage);
    if (!rq[i].size) continue;
    reqs.size = rq[i].size - 1;
    EXPECT_RES(ncclDevCommCreate(comm, r, out), ncclInvalidArgument);
    reqs.size = rq[i].size;
    EXPECT_RES(ncclDevCommCreate(comm, r, out), ncclInvalidUsage); /* host mode */
  }

  int32_t head[2] = {rank, nranks};
  memset(dc, 0, sizeof dc);
  memcpy(dc, head, sizeof head);
  EXPECT_OK(ncclDevCommDestroy(comm, out)); /* no resource window: nothing to free */
  head[0] = (rank + 1) % nranks;
  memcpy(dc, head, sizeof head);
  EXPECT_RES(ncclDevCommDestroy(comm, out), ncclInvalidArgument); /* another rank's */
  head[0] = rank;
  head[1] = nranks + 1;
  memcpy(dc, head, sizeof head);
  EXPECT_RES(ncclDevCommDestroy(comm, out), ncclInvalidArgument);
  uint32_t versioned[2] = {NCCL_API_MAGIC, NCCL_VERSION(2, 29, 7)}; /* 2.29's carry none */
  memcpy(dc, versioned, sizeof versioned);
  EXPECT_RES(ncclDevCommDestroy(comm, out), ncclInvalidArgument);
}

static void check_refusals(ncclComm_t comm) {
  ncclCommProperties_t p = NCCL_COMM_PROPERTIES_INITIALIZER;
  EXPECT_RES(ncclCommQueryProperties(comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommQueryProperties(NULL, &p), ncclInvalidArgument);
  p.magic = 0x12345678;
  EXPECT_RES(ncclCommQueryProperties(comm, &p), ncclInvalidUsage);
  p = (ncclCommProperties_t)NCCL_COMM_PROPERTIES_INITIALIZER;
  p.version = NCCL_VERSION(2, 40, 0); /* newer headers than weft knows */
  EXPECT_RES(ncclCommQueryProperties(comm, &p), ncclInvalidUsage);
  p = (ncclCommProperties_t)NCCL_COMM_PROPERTIES_INITIALIZER;
  p.size = 4;
  EXPECT_RES(ncclCommQueryProperties(comm, &p), ncclInvalidArgument);

  /* ncclDevCommRequirements_t opens with size, magic, version in every version. */
  struct {
    size_t size;
    unsigned magic, version;
    char rest[256];
  } reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.size = sizeof reqs;
  reqs.magic = NCCL_API_MAGIC;
  reqs.version = NCCL_VERSION(2, 30, 7);
  char dc[1024];
  const ncclDevCommRequirements_t* r = (const ncclDevCommRequirements_t*)(void*)&reqs;
  ncclDevComm_t* out = (ncclDevComm_t*)(void*)dc;
  EXPECT_RES(ncclDevCommCreate(comm, r, out), ncclInvalidUsage); /* host mode */
  EXPECT_RES(ncclDevCommCreate(comm, NULL, out), ncclInvalidArgument);
  EXPECT_RES(ncclDevCommCreate(comm, r, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclDevCommCreate(NULL, r, out), ncclInvalidArgument);
  reqs.magic = 0;
  EXPECT_RES(ncclDevCommCreate(comm, r, out), ncclInvalidUsage);
  reqs.magic = NCCL_API_MAGIC;
  reqs.version = NCCL_VERSION(2, 40, 1); /* newer than any layout weft knows */
  EXPECT_RES(ncclDevCommCreate(comm, r, out), ncclInvalidUsage);
  reqs.version = NCCL_VERSION(2, 28, 9); /* a layout weft does not know */
  EXPECT_RES(ncclDevCommCreate(comm, r, out), ncclInvalidUsage);
  EXPECT_RES(ncclDevCommDestroy(comm, NULL), ncclInvalidArgument);
  memset(dc, 0, sizeof dc);
  EXPECT_RES(ncclDevCommDestroy(comm, out), ncclInvalidArgument);
}

static uint32_t rcp32_ref(uint32_t x) {
  uint64_t q = 0xffffffffull / x;
  return (uint32_t)(q + ((x & (x - 1)) == 0 ? 1 : 0));
}

static void check_requirements(ncclComm_t comm, uint64_t* rng) {
  for (int it = 0; it < 200; it++) {
    int n = 1 + (int)(test_rand(rng) % 64), nb = (int)(test_rand(rng) % 40);
    int slots = (int)(test_rand(rng) % 1000), lg = (int)(test_rand(rng) % 20);
    ncclTeam_t team = {n, (int)(test_rand(rng) % (unsigned)n), 1};
    struct ncclDevResourceRequirements req;
    memset(&req, 0xee, sizeof req);

    struct ncclLsaBarrierHandle lb;
    EXPECT_OK(ncclLsaBarrierCreateRequirement(team, nb, &lb, &req));
    EXPECT_EQ_INT(lb.nBarriers, nb);
    EXPECT_EQ_INT(req.bufferSize, (size_t)(3 * nb + nb * n) * 4);
    EXPECT_EQ_INT(req.bufferAlign, 4);
    EXPECT(req.outBufferHandle == &lb.bufHandle && req.next == NULL);
    EXPECT(req.ginSignalCount == 0 && req.outGinSignalStart == NULL);

    struct ncclGinBarrierHandle gb;
    memset(&req, 0xee, sizeof req);
    EXPECT_OK(ncclGinBarrierCreateRequirement(comm, team, nb, &gb, &req));
    EXPECT_EQ_INT(req.bufferSize, 0);
    EXPECT_EQ_INT(req.ginSignalCount, nb * n);
    EXPECT(req.outGinSignalStart == &gb.signal0 && req.outBufferHandle == NULL);

    int maxElts = (int)(test_rand(rng) % 5000), eltSize = 1 + (int)(test_rand(rng) % 100);
    EXPECT_EQ_INT(ncclLLA2ACalcSlots(maxElts, eltSize), maxElts * ((eltSize + 7) / 8));
    struct ncclLLA2AHandle ll;
    EXPECT_OK(ncclLLA2ACreateRequirement(nb, slots, &ll, &req));
    EXPECT_EQ_INT(ll.v.nSlots, slots);
    EXPECT_EQ_INT(req.bufferSize, (size_t)nb * (1 + 2 * (size_t)slots) * 16);
    EXPECT_EQ_INT(req.bufferAlign, 16);
    EXPECT(req.outBufferHandle == &ll.v.bufHandle);

    struct ncclGinOutboxHandle ob;
    EXPECT_OK(ncclGinOutboxCreateRequirement(nb, lg, &ob, &req));
    int l = lg < 7 ? 7 : lg;
    size_t buf = ((size_t)1 << l) < 128 ? 128 : ((((size_t)1 << l) + 127) & ~(size_t)127);
    EXPECT_EQ_INT(ob.v.size_log2, l);
    EXPECT_EQ_INT(req.bufferSize, (size_t)nb * (128 + 16 * 512 + buf));
    EXPECT_EQ_INT(req.bufferAlign, 128);
    EXPECT(req.outBufferHandle == &ob.v.bufHandle);

    if (n >= 2) {
      struct ncclGinInboxA2AHandle ib;
      EXPECT_OK(ncclGinInboxA2ACreateRequirement(team, nb, lg, &ib, &req));
      size_t b = (((size_t)1 << lg) + 127) & ~(size_t)127;
      EXPECT_EQ_INT(ib.v.size_log2, lg);
      EXPECT_EQ_INT(ib.v.nPeers_rcp32, rcp32_ref((uint32_t)(n - 1)));
      EXPECT_EQ_INT(req.bufferSize, (size_t)nb * (128 + b));
      EXPECT_EQ_INT(req.ginSignalCount, nb * 4 * (n - 1 + 512));
      EXPECT(req.outGinSignalStart == &ib.v.signals && req.outBufferHandle == &ib.v.bufHandle);
    }
  }
  ncclTeam_t one = {1, 0, 1};
  struct ncclDevResourceRequirements req;
  struct ncclLsaBarrierHandle lb;
  struct ncclGinInboxA2AHandle ib;
  EXPECT_RES(ncclLsaBarrierCreateRequirement(one, -1, &lb, &req), ncclInvalidArgument);
  EXPECT_RES(ncclLsaBarrierCreateRequirement(one, 1, NULL, &req), ncclInvalidArgument);
  EXPECT_RES(ncclLsaBarrierCreateRequirement(one, 1, &lb, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclGinInboxA2ACreateRequirement(one, 1, 10, &ib, &req), ncclInvalidArgument);
  EXPECT_RES(ncclGinOutboxCreateRequirement(1, 40, (struct ncclGinOutboxHandle*)(void*)&lb,
                                            &req), ncclInvalidArgument);
}

static void check_windows(ncclComm_t* comms, int nranks) {
  static char buf[2][4096];
  ncclWindow_t win[2];
  EXPECT_RES(ncclCommWindowRegister(comms[0], buf[0], 64, &win[0], 4), ncclInvalidArgument);
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < nranks; r++)
    EXPECT_OK(ncclCommWindowRegister(comms[r], buf[r], sizeof buf[r], &win[r],
                                     NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING));
  EXPECT_OK(ncclGroupEnd());
  for (int r = 0; r < nranks; r++) {
    void* p = (void*)1;
    EXPECT_OK(ncclGetLsaDevicePointer(win[r], 100, 0, &p));
    EXPECT(p == buf[r] + 100);
    EXPECT_RES(ncclGetLsaDevicePointer(win[r], 100, 1, &p), ncclInvalidArgument);
    EXPECT_RES(ncclGetLsaDevicePointer(win[r], 4096, 0, &p), ncclInvalidArgument);
    EXPECT_RES(ncclGetLsaDevicePointer(win[r], 0, 0, NULL), ncclInvalidArgument);
    EXPECT_RES(ncclGetLsaDevicePointer(NULL, 0, 0, &p), ncclInvalidArgument);
    for (int q = 0; q < nranks; q++) {
      p = (void*)1;
      EXPECT_OK(ncclGetPeerDevicePointer(win[r], 7, q, &p));
      EXPECT(p == (q == r ? (void*)(buf[r] + 7) : NULL));
    }
    EXPECT_RES(ncclGetPeerDevicePointer(win[r], 7, nranks, &p), ncclInvalidArgument);
    EXPECT_RES(ncclGetPeerDevicePointer(win[r], 7, -1, &p), ncclInvalidArgument);
    p = (void*)1;
    EXPECT_OK(ncclGetLsaMultimemDevicePointer(win[r], 0, &p));
    EXPECT(p == NULL);
    ncclMultimemHandle_t mm = {NULL};
    EXPECT_RES(ncclGetMultimemDevicePointer(win[r], 0, mm, &p), ncclInvalidArgument);
    mm.mcBasePtr = buf[r];
    p = (void*)1;
    EXPECT_OK(ncclGetMultimemDevicePointer(win[r], 0, mm, &p));
    EXPECT(p == NULL);
  }
  /* Something that is not a window, and a window once released. */
  void* p;
  EXPECT_RES(ncclGetLsaDevicePointer((ncclWindow_t)(void*)buf[0], 0, 0, &p), ncclInvalidArgument);
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < nranks; r++) EXPECT_OK(ncclCommWindowDeregister(comms[r], win[r]));
  EXPECT_OK(ncclGroupEnd());
  EXPECT_RES(ncclGetPeerDevicePointer(win[0], 0, 0, &p), ncclInvalidArgument);
  EXPECT_RES(ncclGetLsaMultimemDevicePointer(win[0], 0, &p), ncclInvalidArgument);
}

int main(void) {
  test_require_weft_lib();
  uint64_t seed = test_seed(0x6465766170690001ull), rng = seed;
  printf("seed 0x%llx\n", (unsigned long long)seed);
  ncclComm_t comms[2];
  EXPECT_OK(ncclCommInitAll(comms, 2, NULL));
  for (int r = 0; r < 2; r++) {
    check_props(comms[r], r, 2);
    check_2_29(comms[r], r, 2);
    ncclTeam_t lsa = ncclTeamLsa(comms[r]);
    EXPECT(lsa.nRanks == 1 && lsa.rank == 0);
    EXPECT_EQ_INT(ncclTeamRankToLsa(comms[r], ncclTeamWorld(comms[r]), r), 0);
    EXPECT_EQ_INT(ncclTeamRankToLsa(comms[r], ncclTeamWorld(comms[r]), 1 - r), -1);
  }
  check_refusals(comms[0]);
  check_requirements(comms[0], &rng);
  check_windows(comms, 2);
  for (int r = 0; r < 2; r++) EXPECT_OK(ncclCommDestroy(comms[r]));
  printf("ok\n");
  return 0;
}
