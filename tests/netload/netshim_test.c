/* The net shim on its own (core/plugin/net_shim*.c), with plugin tables defined in this file:
 * mandatory entries, stubs for optional ones, the one-struct-per-old-version slot, init-once
 * counting. Usage: netshim_test <case>. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "plugin/net_shim.h"
#include "testutil.h"

static int raw_inits;

/* ---- a v8 table ---- */
static ncclResult_t f8_init(ncclDebugLogger_t l) { (void)l; raw_inits++; return ncclSuccess; }
static ncclResult_t f_devices(int* n) { *n = 1; return ncclSuccess; }
static ncclResult_t f8_props(int d, ncclNetProperties_v8_t* p) {
  memset(p, 0, sizeof *p);
  p->port = d;
  return ncclSuccess;
}
static ncclResult_t f8_listen(int d, void* h, void** l) { (void)d, (void)h, (void)l; return ncclSuccess; }
static ncclResult_t f8_connect(int d, void* h, void** s, ncclNetDeviceHandle_v8_t** dc) {
  (void)d, (void)h, (void)s, (void)dc;
  return ncclSuccess;
}
static ncclResult_t f8_accept(void* l, void** r, ncclNetDeviceHandle_v8_t** dc) {
  (void)l, (void)r, (void)dc;
  return ncclSuccess;
}
static ncclResult_t f8_regMr(void* c, void* d, size_t s, int t, void** m) {
  (void)c, (void)d, (void)s, (void)t, (void)m;
  return ncclSuccess;
}
static ncclResult_t f_deregMr(void* c, void* m) { (void)c, (void)m; return ncclSuccess; }
static ncclResult_t f8_isend(void* s, void* d, int n, int t, void* m, void** r) {
  (void)s, (void)d, (void)n, (void)t, (void)m, (void)r;
  return ncclSuccess;
}
static ncclResult_t f8_irecv(void* rc, int n, void** d, int* s, int* t, void** m, void** r) {
  (void)rc, (void)n, (void)d, (void)s, (void)t, (void)m, (void)r;
  return ncclSuccess;
}
static ncclResult_t f_iflush(void* rc, int n, void** d, int* s, void** m, void** r) {
  (void)rc, (void)n, (void)d, (void)s, (void)m, (void)r;
  return ncclSuccess;
}
static ncclResult_t f_test(void* r, int* done, int* s) { (void)r, (void)s; *done = 1; return ncclSuccess; }
static ncclResult_t f_close(void* c) { (void)c; return ncclSuccess; }

static const ncclNet_v8_t good_v8 = {
    .name = "Fake8", .init = f8_init, .devices = f_devices, .getProperties = f8_props,
    .listen = f8_listen, .connect = f8_connect, .accept = f8_accept, .regMr = f8_regMr,
    .deregMr = f_deregMr, .isend = f8_isend, .irecv = f8_irecv, .iflush = f_iflush,
    .test = f_test, .closeSend = f_close, .closeRecv = f_close, .closeListen = f_close,
};
static const ncclNet_v8_t other_v8 = {
    .name = "Other8", .init = f8_init, .devices = f_devices, .getProperties = f8_props,
    .listen = f8_listen, .connect = f8_connect, .accept = f8_accept, .regMr = f8_regMr,
    .deregMr = f_deregMr, .isend = f8_isend, .irecv = f8_irecv, .iflush = f_iflush,
    .test = f_test, .closeSend = f_close, .closeRecv = f_close, .closeListen = f_close,
};

/* ---- a v11 table (optional entries NULL) ---- */
static ncclResult_t f11_init(void** ctx, uint64_t id, ncclNetCommConfig_v11_t* c,
                             ncclDebugLogger_t l, ncclProfilerCallback_t p) {
  (void)id, (void)c, (void)l, (void)p;
  raw_inits++;
  *ctx = &raw_inits;
  return ncclSuccess;
}
static ncclResult_t f11_props(int d, ncclNetProperties_v11_t* p) {
  memset(p, 0, sizeof *p);
  p->port = d;
  return ncclSuccess;
}
static ncclResult_t f11_listen(void* x, int d, void* h, void** l) { (void)x, (void)d, (void)h, (void)l; return ncclSuccess; }
static ncclResult_t f11_connect(void* x, int d, void* h, void** s, ncclNetDeviceHandle_v11_t** dc) {
  (void)x, (void)d, (void)h, (void)s, (void)dc;
  return ncclSuccess;
}
static ncclResult_t f11_isend(void* s, void* d, size_t n, int t, void* m, void* p, void** r) {
  (void)s, (void)d, (void)n, (void)t, (void)m, (void)p, (void)r;
  return ncclSuccess;
}
static ncclResult_t f11_irecv(void* rc, int n, void** d, size_t* s, int* t, void** m, void** p,
                              void** r) {
  (void)rc, (void)n, (void)d, (void)s, (void)t, (void)m, (void)p, (void)r;
  return ncclSuccess;
}
static ncclResult_t f11_finalize(void* ctx) { (void)ctx; return ncclSuccess; }
static ncclResult_t f11_props_plus(int d, ncclNetProperties_v11_t* p) {
  memset(p, 0, sizeof *p);
  p->port = 100 + d;
  return ncclSuccess;
}
static int vdevice_calls;
static ncclResult_t f11_make_vdevice(int* d, ncclNetVDeviceProps_v11_t* props) {
  vdevice_calls++;
  *d = props->ndevs;
  return ncclSuccess;
}

static const ncclNet_v11_t good_v11 = {
    .name = "Fake11", .init = f11_init, .devices = f_devices, .getProperties = f11_props,
    .listen = f11_listen, .connect = f11_connect, .accept = f8_accept, .regMr = f8_regMr,
    .deregMr = f_deregMr, .isend = f11_isend, .irecv = f11_irecv, .iflush = f_iflush,
    .test = f_test, .closeSend = f_close, .closeRecv = f_close, .closeListen = f_close,
    .finalize = f11_finalize,
};

/* ---- a v12 table: v11's calls with v12 property types ---- */
static ncclResult_t f12_init(void** ctx, uint64_t id, ncclNetCommConfig_v12_t* c,
                             ncclDebugLogger_t l, ncclProfilerCallback_t p) {
  (void)id, (void)c, (void)l, (void)p;
  raw_inits++;
  *ctx = &raw_inits;
  return ncclSuccess;
}
static ncclResult_t f12_props(int d, ncclNetProperties_v12_t* p) {
  memset(p, 0, sizeof *p);
  p->port = d;
  p->railId = (int16_t)(d + 3);
  p->planeId = 1;
  return ncclSuccess;
}
static const ncclNet_v12_t good_v12 = {
    .name = "Fake12", .init = f12_init, .devices = f_devices, .getProperties = f12_props,
    .listen = f11_listen, .connect = f11_connect, .accept = f8_accept, .regMr = f8_regMr,
    .deregMr = f_deregMr, .isend = f11_isend, .irecv = f11_irecv, .iflush = f_iflush,
    .test = f_test, .closeSend = f_close, .closeRecv = f_close, .closeListen = f_close,
    .finalize = f11_finalize,
};

/* Member offsets by name; every member is pointer-sized. */
typedef struct {
  const char* name;
  size_t off8, off11;
} member_t;
#define M(x) {#x, offsetof(ncclNet_v8_t, x), offsetof(ncclNet_v11_t, x)}
static const member_t mandatory[] = {
    M(name),    M(init),    M(devices),  M(getProperties), M(listen), M(connect),
    M(accept),  M(regMr),   M(deregMr),  M(isend),         M(irecv),  M(iflush),
    M(test),    M(closeSend), M(closeRecv), M(closeListen),
};
#undef M

static void set_null(void* table, size_t off) {
  void* null = NULL;
  memcpy((char*)table + off, &null, sizeof null);
}

static int case_mandatory_null(void) {
  char why[128];
  weft_net_view v;
  for (size_t i = 0; i < sizeof mandatory / sizeof mandatory[0]; i++) {
    char want[64];
    snprintf(want, sizeof want, "%s is NULL", mandatory[i].name);
    ncclNet_v8_t t8 = good_v8;
    set_null(&t8, mandatory[i].off8);
    EXPECT_EQ_INT(net_shim_adapt(&t8, 8, &v, why, sizeof why), ncclInvalidUsage);
    if (strcmp(why, want) != 0) {
      fprintf(stderr, "v8 without %s: reason \"%s\", expected \"%s\"\n", mandatory[i].name, why,
              want);
      return 1;
    }
    ncclNet_v11_t t11 = good_v11;
    set_null(&t11, mandatory[i].off11);
    EXPECT_EQ_INT(net_shim_adapt(&t11, 11, &v, why, sizeof why), ncclInvalidUsage);
    EXPECT(strcmp(why, want) == 0);
  }
  ncclNet_v11_t t11 = good_v11;
  t11.finalize = NULL;
  EXPECT_EQ_INT(net_shim_adapt(&t11, 11, &v, why, sizeof why), ncclInvalidUsage);
  EXPECT(strcmp(why, "finalize is NULL") == 0);
  return 0;
}

static int case_optional_stubs(void) {
  char why[128];
  weft_net_view v;
  EXPECT_OK(net_shim_adapt(&good_v11, 11, &v, why, sizeof why));
  /* No NULL anywhere in the view. */
  const char* bytes = (const char*)&v.api;
  for (size_t off = 0; off < sizeof v.api; off += sizeof(void*)) {
    void* p;
    memcpy(&p, bytes + off, sizeof p);
    if (p == NULL) {
      fprintf(stderr, "view entry at offset %zu is NULL\n", off);
      return 1;
    }
  }
  void* out = NULL;
  int d = -1;
  ncclNetVDeviceProps_v12_t vp = {1, {0}};
  ncclNetAttr_v12_t attr = NCCL_NET_ATTR_INIT;
  EXPECT_EQ_INT(v.api.getDeviceMr(NULL, NULL, &out), ncclInvalidUsage);
  EXPECT_EQ_INT(v.api.irecvConsumed(NULL, 1, NULL), ncclInvalidUsage);
  EXPECT_EQ_INT(v.api.makeVDevice(&d, &vp), ncclInvalidUsage);
  EXPECT_EQ_INT(v.api.setNetAttr(NULL, &attr), ncclInvalidUsage);
  EXPECT_EQ_INT(v.api.regMrDmaBuf(NULL, NULL, 1, NCCL_PTR_HOST, 0, -1, &out), ncclInvalidUsage);
  EXPECT(v.api.isend == good_v11.isend); /* v11's calls pass through */
  EXPECT_EQ_INT(v.version, 11);
  /* Its properties in v12's shape: every v11 field, and no rail or plane. */
  ncclNetProperties_v12_t p12;
  memset(&p12, 0x5a, sizeof p12);
  EXPECT_OK(v.api.getProperties(1, &p12));
  EXPECT_EQ_INT(p12.port, 1);
  EXPECT_EQ_INT(p12.railId, NCCL_NET_ID_UNDEF);
  EXPECT_EQ_INT(p12.planeId, NCCL_NET_ID_UNDEF);
  net_shim_release(&v);

  /* v12 passes through whole. */
  EXPECT_OK(net_shim_adapt(&good_v12, 12, &v, why, sizeof why));
  EXPECT(v.api.getProperties == good_v12.getProperties && v.api.init == good_v12.init);
  EXPECT_OK(v.api.getProperties(2, &p12));
  EXPECT_EQ_INT(p12.railId, 5);
  EXPECT_EQ_INT(p12.planeId, 1);
  EXPECT_EQ_INT(v.version, 12);
  EXPECT_EQ_INT(v.api.makeVDevice(&d, &vp), ncclInvalidUsage);
  net_shim_release(&v);

  /* The same for an old version, whose table has no such entries at all. */
  EXPECT_OK(net_shim_adapt(&good_v8, 8, &v, why, sizeof why));
  EXPECT_EQ_INT(v.api.makeVDevice(&d, &vp), ncclInvalidUsage);
  EXPECT_EQ_INT(v.api.setNetAttr(NULL, &attr), ncclInvalidUsage);
  EXPECT_EQ_INT(v.api.getDeviceMr(NULL, NULL, &out), ncclInvalidUsage);
  EXPECT_EQ_INT(v.api.regMrDmaBuf(NULL, NULL, 1, NCCL_PTR_HOST, 0, -1, &out), ncclInvalidUsage);
  net_shim_release(&v);
  return 0;
}

static int case_one_struct_per_old_version(void) {
  char why[160];
  weft_net_view a, a2, b;
  EXPECT_OK(net_shim_adapt(&good_v8, 8, &a, why, sizeof why));
  EXPECT_EQ_INT(net_shim_adapt(&other_v8, 8, &b, why, sizeof why), ncclInvalidUsage);
  EXPECT(strstr(why, "another v8 plugin (Fake8)") != NULL);
  EXPECT_OK(net_shim_adapt(&good_v8, 8, &a2, why, sizeof why)); /* same struct: shared */
  net_shim_release(&a);
  EXPECT_EQ_INT(net_shim_adapt(&other_v8, 8, &b, why, sizeof why), ncclInvalidUsage);
  net_shim_release(&a2);
  EXPECT_OK(net_shim_adapt(&other_v8, 8, &b, why, sizeof why));
  EXPECT(strcmp(b.api.name, "Other8") == 0);
  ncclNetProperties_v12_t p;
  EXPECT_OK(b.api.getProperties(0, &p)); /* forwards to the new struct */
  net_shim_release(&b);

  /* v11 has a few slots, one per struct: two at once each reach their own table (their
   * getProperties carries no context). */
  ncclNet_v11_t second = good_v11;
  second.name = "Second11";
  second.getProperties = f11_props_plus;
  weft_net_view x, y;
  EXPECT_OK(net_shim_adapt(&good_v11, 11, &x, why, sizeof why));
  EXPECT_OK(net_shim_adapt(&second, 11, &y, why, sizeof why));
  EXPECT(x.api.getProperties != y.api.getProperties);
  EXPECT_OK(x.api.getProperties(4, &p));
  EXPECT_EQ_INT(p.port, 4);
  EXPECT_OK(y.api.getProperties(4, &p));
  EXPECT_EQ_INT(p.port, 104);
  net_shim_release(&x);
  net_shim_release(&y);
  /* More distinct v11 structs than slots: refused with the reason, until one is released. */
  ncclNet_v11_t many[8];
  weft_net_view mv[8];
  int got = 0;
  for (int i = 0; i < 8; i++) {
    many[i] = good_v11;
    if (net_shim_adapt(&many[i], 11, &mv[i], why, sizeof why) != ncclSuccess) break;
    got++;
  }
  EXPECT(got >= 4 && got < 8);
  EXPECT(strstr(why, "v11 plugins are in use already") != NULL);
  net_shim_release(&mv[0]);
  EXPECT_OK(net_shim_adapt(&many[got], 11, &mv[got], why, sizeof why));
  for (int i = 1; i <= got; i++) net_shim_release(&mv[i]);
  /* A v12 virtual device of 5 devices through a v11 plugin: refused before the plugin. */
  ncclNet_v11_t fuses = good_v11;
  fuses.makeVDevice = f11_make_vdevice;
  EXPECT_OK(net_shim_adapt(&fuses, 11, &x, why, sizeof why));
  ncclNetVDeviceProps_v12_t five = {5, {0, 1, 2, 3, 4}};
  ncclNetVDeviceProps_v12_t two = {2, {0, 1}};
  int d = -1;
  vdevice_calls = 0;
  EXPECT_EQ_INT(x.api.makeVDevice(&d, &five), ncclInvalidArgument);
  EXPECT_EQ_INT(vdevice_calls, 0);
  EXPECT_OK(x.api.makeVDevice(&d, &two));
  EXPECT_EQ_INT(vdevice_calls, 1);
  EXPECT_EQ_INT(d, 2);
  net_shim_release(&x);
  return 0;
}

static int case_versions(void) {
  char why[128];
  weft_net_view v;
  EXPECT(net_shim_symbol(5) == NULL);
  EXPECT(net_shim_symbol(13) == NULL);
  EXPECT(strcmp(net_shim_symbol(12), "ncclNetPlugin_v12") == 0);
  EXPECT(strcmp(net_shim_symbol(6), "ncclNetPlugin_v6") == 0);
  EXPECT(strcmp(net_shim_symbol(11), "ncclNetPlugin_v11") == 0);
  EXPECT_EQ_INT(net_shim_adapt(&good_v8, 5, &v, why, sizeof why), ncclInvalidUsage);
  EXPECT(strstr(why, "version 5") != NULL);
  EXPECT_EQ_INT(net_shim_adapt(NULL, 8, &v, why, sizeof why), ncclInvalidUsage);
  return 0;
}

static int case_init_once(void) {
  char why[128];
  weft_net_view v;
  raw_inits = 0;
  EXPECT_OK(net_shim_adapt(&good_v8, 8, &v, why, sizeof why));
  ncclNetCommConfig_v12_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
  void* ctx[3];
  for (int i = 0; i < 3; i++) EXPECT_OK(v.api.init(&ctx[i], (uint64_t)i, &cfg, NULL, NULL));
  EXPECT_EQ_INT(raw_inits, 1);
  EXPECT(ctx[0] != ctx[1] && ctx[1] != ctx[2]);
  for (int i = 0; i < 3; i++) EXPECT_OK(v.api.finalize(ctx[i]));
  /* Every communicator gone: the next one initialises the plugin again (as NCCL does). */
  EXPECT_OK(v.api.init(&ctx[0], 9, &cfg, NULL, NULL));
  EXPECT_EQ_INT(raw_inits, 2);
  EXPECT_OK(v.api.finalize(ctx[0]));
  net_shim_release(&v);

  raw_inits = 0;
  EXPECT_OK(net_shim_adapt(&good_v11, 11, &v, why, sizeof why));
  for (int i = 0; i < 3; i++) EXPECT_OK(v.api.init(&ctx[i], (uint64_t)i, &cfg, NULL, NULL));
  EXPECT_EQ_INT(raw_inits, 3);
  net_shim_release(&v);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  const char* c = argv[1];
  if (!strcmp(c, "mandatory_null")) return case_mandatory_null();
  if (!strcmp(c, "optional_stubs")) return case_optional_stubs();
  if (!strcmp(c, "one_struct_per_old_version")) return case_one_struct_per_old_version();
  if (!strcmp(c, "versions")) return case_versions();
  if (!strcmp(c, "init_once")) return case_init_once();
  fprintf(stderr, "unknown case %s\n", c);
  return 2;
}
