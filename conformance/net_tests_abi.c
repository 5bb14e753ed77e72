/* Net tests, first group: loading, exported symbols and tables per version, init, devices and
 * properties, bad device indexes. */
#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net_suite.h"
#include "net_tests.h"

static conf_result t_loads(void* arg) {
  (void)arg;
  conf_stage_set("dlopen (constructors)");
  void* dl = dlopen(nt_ctx->path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return conf_fail("dlopen(RTLD_NOW|RTLD_LOCAL) failed: %s", dlerror());
  return CONF_PASS;
}

static conf_result t_exports(void* arg) {
  (void)arg;
  if (nt_ctx->exported == 0) {
    if (nt_ctx->other_symbols[0])
      return conf_fail("no ncclNetPlugin_v6..v12 symbol; exports only %s (not a version weft or "
                       "NCCL 2.30 loads)",
                       nt_ctx->other_symbols);
    return conf_fail("no ncclNetPlugin_v6..v12 symbol is exported");
  }
  if (nt_ctx->requested_version && !(nt_ctx->exported & (1u << nt_ctx->requested_version)))
    return conf_fail("--abi v%d was asked for but ncclNetPlugin_v%d is not exported",
                     nt_ctx->requested_version, nt_ctx->requested_version);
  return CONF_PASS;
}

/* The table as stock NCCL reads it: after init (a plugin may export only name and init and fill
 * in the rest there, as nccl-rdma-sharp-plugins does). */
static conf_result table_complete(int v) {
  if (!(nt_ctx->exported & (1u << v)))
    return conf_skip("the plugin does not export ncclNetPlugin_v%d", v);
  nt_plugin p;
  conf_result r = nt_init_table(&p, v);
  if (r != CONF_PASS) {
    const char* why = conf_reason();
    /* init itself failing is net_init_with_logger_succeeds' verdict; the table was not reached. */
    if (strstr(why, "init returned") == why || strstr(why, "init took") == why) {
      char copy[1024];
      snprintf(copy, sizeof copy, "%s", why);
      conf_clear_reason();
      return conf_inconclusive("ncclNetPlugin_v%d: %s, so the table (read after init) could not "
                               "be checked", v, copy);
    }
    return r;
  }
  CONF_TRY(nt_close(&p));
  const char* name = *(const char* const*)nt_ctx->raw[v];
  if (name == NULL) return conf_fail("ncclNetPlugin_v%d: name is NULL after init", v);
  size_t len = strnlen(name, 65);
  if (len == 0) return conf_fail("ncclNetPlugin_v%d: name is empty", v);
  if (len > 64) return conf_fail("ncclNetPlugin_v%d: name longer than 64 characters", v);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!isgraph(c))
      return conf_fail("ncclNetPlugin_v%d: name \"%s\" has a space or control character at %zu "
                       "(NCCL_NET must be able to name it)",
                       v, name, i);
  }
  return CONF_PASS;
}

static conf_result t_table_v6(void* a) { (void)a; return table_complete(6); }
static conf_result t_table_v7(void* a) { (void)a; return table_complete(7); }
static conf_result t_table_v8(void* a) { (void)a; return table_complete(8); }
static conf_result t_table_v9(void* a) { (void)a; return table_complete(9); }
static conf_result t_table_v10(void* a) { (void)a; return table_complete(10); }
static conf_result t_table_v11(void* a) { (void)a; return table_complete(11); }
static conf_result t_table_v12(void* a) { (void)a; return table_complete(12); }

static conf_result t_init(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_init_table(&p, nt_ctx->version));
  int ndev = -1;
  NT_CALL_SETUP("devices", p.api->devices(&ndev));
  conf_note("%d device(s) after init", ndev);
  return nt_close(&p);
}

static conf_result t_devices(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  int again = -1;
  NT_CALL_SETUP("devices", p.api->devices(&again));
  if (again != p.ndev)
    return conf_fail("devices reported %d, then %d on a second call", p.ndev, again);
  return nt_close(&p);
}

static conf_result check_props(const nt_plugin* p, int dev, const ncclNetProperties_v12_t* q) {
  int v = nt_ctx->version;
  if (q->name == NULL || q->name[0] == '\0') return conf_fail("dev %d: name is NULL or empty", dev);
  /* A device named after a network interface that is a PCI function (it has
   * /sys/class/net/<name>/device) must say where it sits, as NCCL's own socket net does: with
   * NULL, NCCL places it far from every GPU. */
  char link[300];
  snprintf(link, sizeof link, "/sys/class/net/%s/device", q->name);
  if (q->pciPath == NULL && strchr(q->name, '/') == NULL && access(link, F_OK) == 0)
    return conf_fail("dev %d: pciPath is NULL, but %s is a PCI network interface (%s exists): "
                     "report realpath(\"%s\")",
                     dev, q->name, link, link);
  if (q->pciPath) {
    if (q->pciPath[0] != '/')
      return conf_fail("dev %d: pciPath \"%s\" is not an absolute path (NULL for a virtual NIC)",
                       dev, q->pciPath);
    if (access(q->pciPath, F_OK) != 0)
      return conf_fail("dev %d: pciPath \"%s\" does not exist (NULL for a virtual NIC)", dev,
                       q->pciPath);
  }
  if (!(q->ptrSupport & NCCL_PTR_HOST))
    return conf_fail("dev %d: ptrSupport 0x%x lacks NCCL_PTR_HOST", dev, q->ptrSupport);
  if (q->ptrSupport & ~(NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF))
    return conf_fail("dev %d: ptrSupport 0x%x has unknown bits", dev, q->ptrSupport);
  if (q->speed <= 0) return conf_fail("dev %d: speed %d Mb/s is not > 0", dev, q->speed);
  if (!isfinite(q->latency) || q->latency < 0)
    return conf_fail("dev %d: latency %g us is not a finite value >= 0", dev, q->latency);
  if (q->maxComms < 1) return conf_fail("dev %d: maxComms %d is not >= 1", dev, q->maxComms);
  if (q->maxRecvs < 1 || q->maxRecvs > 8)
    return conf_fail("dev %d: maxRecvs %d is not within 1..8", dev, q->maxRecvs);
  if (v >= 7) {
    if (q->netDeviceType != NCCL_NET_DEVICE_HOST && q->netDeviceType != NCCL_NET_DEVICE_UNPACK)
      return conf_fail("dev %d: netDeviceType %d is neither HOST (0) nor UNPACK (1)", dev,
                       (int)q->netDeviceType);
    if (q->netDeviceType == NCCL_NET_DEVICE_UNPACK &&
        q->netDeviceVersion != NCCL_NET_DEVICE_UNPACK_VERSION)
      return conf_fail("dev %d: UNPACK device with netDeviceVersion 0x%x (must be 0x%x)", dev,
                       q->netDeviceVersion, NCCL_NET_DEVICE_UNPACK_VERSION);
  }
  if (v >= 8 && q->regIsGlobal != 0 && q->regIsGlobal != 1)
    return conf_fail("dev %d: regIsGlobal %d is not 0 or 1", dev, q->regIsGlobal);
  if (v >= 9) {
    if (q->forceFlush != 0 && q->forceFlush != 1)
      return conf_fail("dev %d: forceFlush %d is not 0 or 1", dev, q->forceFlush);
    if (q->maxP2pBytes == 0 || q->maxP2pBytes > (size_t)NCCL_MAX_NET_SIZE_BYTES)
      return conf_fail("dev %d: maxP2pBytes %zu is not within 1..%zu", dev, q->maxP2pBytes,
                       (size_t)NCCL_MAX_NET_SIZE_BYTES);
    if (q->maxCollBytes == 0 || q->maxCollBytes > (size_t)NCCL_MAX_NET_SIZE_BYTES)
      return conf_fail("dev %d: maxCollBytes %zu is not within 1..%zu", dev, q->maxCollBytes,
                       (size_t)NCCL_MAX_NET_SIZE_BYTES);
    int max_devs = v >= 12 ? NCCL_NET_MAX_DEVS_PER_NIC_V12 : NCCL_NET_MAX_DEVS_PER_NIC_V11;
    if (q->vProps.ndevs < 1 || q->vProps.ndevs > max_devs)
      return conf_fail("dev %d: vProps.ndevs %d is not within 1..%d", dev, q->vProps.ndevs,
                       max_devs);
    for (int i = 0; i < q->vProps.ndevs; i++)
      if (q->vProps.devs[i] < 0 || q->vProps.devs[i] >= p->ndev)
        return conf_fail("dev %d: vProps.devs[%d] = %d is not a device index (0..%d)", dev, i,
                         q->vProps.devs[i], p->ndev - 1);
  }
  if (v >= 11 && q->maxMultiRequestSize < 1)
    return conf_fail("dev %d: maxMultiRequestSize %d is not >= 1", dev, q->maxMultiRequestSize);
  /* v12: a rail or plane id is NCCL_NET_ID_UNDEF or an index (>= 0); older versions get
   * NCCL_NET_ID_UNDEF from the shim. */
  if (q->railId < NCCL_NET_ID_UNDEF)
    return conf_fail("dev %d: railId %d is neither NCCL_NET_ID_UNDEF (-1) nor >= 0", dev,
                     q->railId);
  if (q->planeId < NCCL_NET_ID_UNDEF)
    return conf_fail("dev %d: planeId %d is neither NCCL_NET_ID_UNDEF (-1) nor >= 0", dev,
                     q->planeId);
  if (v < 12 && (q->railId != NCCL_NET_ID_UNDEF || q->planeId != NCCL_NET_ID_UNDEF))
    return conf_fail("dev %d: a v%d table reported railId %d, planeId %d (only v12 has them)",
                     dev, v, q->railId, q->planeId);
  return CONF_PASS;
}

static conf_result t_props(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  for (int d = 0; d < p.ndev; d++) {
    ncclNetProperties_v12_t q;
    memset(&q, 0, sizeof q);
    NT_CALL_SETUP("getProperties", p.api->getProperties(d, &q));
    CONF_TRY(check_props(&p, d, &q));
    conf_note("dev %d: %s speed %d Mb/s ptr 0x%x maxComms %d maxRecvs %d guid 0x%llx rail %d "
              "plane %d", d, q.name, q.speed, q.ptrSupport, q.maxComms, q.maxRecvs,
              (unsigned long long)q.guid, q.railId, q.planeId);
  }
  return nt_close(&p);
}

static conf_result t_props_stable(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  for (int d = 0; d < p.ndev; d++) {
    ncclNetProperties_v12_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0x5A, sizeof b);
    NT_CALL_SETUP("getProperties", p.api->getProperties(d, &a));
    NT_CALL_SETUP("getProperties", p.api->getProperties(d, &b));
    const char* diff = NULL;
    if ((a.name == NULL) != (b.name == NULL) || (a.name && strcmp(a.name, b.name) != 0))
      diff = "name";
    else if (a.guid != b.guid) diff = "guid";
    else if (a.ptrSupport != b.ptrSupport) diff = "ptrSupport";
    else if (a.speed != b.speed) diff = "speed";
    else if (a.port != b.port) diff = "port";
    else if (a.maxComms != b.maxComms) diff = "maxComms";
    else if (a.maxRecvs != b.maxRecvs) diff = "maxRecvs";
    else if (a.maxP2pBytes != b.maxP2pBytes) diff = "maxP2pBytes";
    else if (a.railId != b.railId) diff = "railId";
    else if (a.planeId != b.planeId) diff = "planeId";
    if (diff) return conf_fail("dev %d: %s differs between two getProperties calls", d, diff);
  }
  return nt_close(&p);
}

static conf_result t_bad_dev(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  ncclNetProperties_v12_t q;
  ncclResult_t r;
  int bad[2] = {p.ndev, -1};
  for (int i = 0; i < 2; i++) {
    NT_CALL_SETUP_RES("getProperties", p.api->getProperties(bad[i], &q), r);
    if (r == ncclSuccess)
      return conf_fail("getProperties(%d) with %d device(s) returned ncclSuccess", bad[i], p.ndev);
  }
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lcomm = NULL;
  NT_CALL_RES("listen", p.api->listen(p.nctx, p.ndev, handle, &lcomm), r);
  if (r == ncclSuccess) {
    if (lcomm) p.api->closeListen(lcomm);
    return conf_fail("listen on device %d with %d device(s) returned ncclSuccess", p.ndev, p.ndev);
  }
  return nt_close(&p);
}

static conf_result t_init_twice(void* arg) {
  (void)arg;
  nt_plugin a, b;
  CONF_TRY(nt_open(&a));
  CONF_TRY(nt_open(&b));
  void *s, *r, *l;
  CONF_TRY(nt_connect_local(&a, &s, &r, &l));
  NT_CALL_SETUP("closeSend", a.api->closeSend(s));
  NT_CALL_SETUP("closeRecv", a.api->closeRecv(r));
  NT_CALL_SETUP("closeListen", a.api->closeListen(l));
  CONF_TRY(nt_close(&a));
  /* The second communicator's context keeps working after the first one's finalize. */
  CONF_TRY(nt_connect_local(&b, &s, &r, &l));
  void *sbuf, *rbuf;
  CONF_TRY(nt_alloc(4096, &sbuf));
  CONF_TRY(nt_alloc(4096, &rbuf));
  nt_fill(sbuf, 4096, 77);
  void *smh, *rmh;
  CONF_TRY(nt_reg(&b, s, sbuf, 4096, &smh));
  CONF_TRY(nt_reg(&b, r, rbuf, 4096, &rmh));
  void *sreq, *rreq;
  int got[1] = {-1};
  CONF_TRY(nt_irecv(&b, r, rbuf, 4096, 1, rmh, &rreq));
  CONF_TRY(nt_isend(&b, s, sbuf, 4096, 1, smh, &sreq));
  CONF_TRY(nt_wait(&b, sreq, NULL, 4096, "isend"));
  CONF_TRY(nt_wait(&b, rreq, got, 4096, "irecv"));
  if (got[0] != 4096) return conf_fail("test reported %d bytes received, 4096 sent", got[0]);
  CONF_TRY(nt_check(rbuf, 4096, 77, "message on the second context"));
  CONF_TRY(nt_dereg(&b, s, smh));
  CONF_TRY(nt_dereg(&b, r, rmh));
  NT_CALL_SETUP("closeSend", b.api->closeSend(s));
  NT_CALL_SETUP("closeRecv", b.api->closeRecv(r));
  NT_CALL_SETUP("closeListen", b.api->closeListen(l));
  return nt_close(&b);
}

/* A plugin exporting v12 and v11 describes the same devices through both: every field v11 has
 * is equal (v12's table is usually the v11 one with two more fields), checked on raw tables,
 * and v12's own rail/plane ids are sane. */
static conf_result t_v12_agrees_with_v11(void* arg) {
  (void)arg;
  if (!(nt_ctx->exported & (1u << 12)))
    return conf_skip("the plugin does not export ncclNetPlugin_v12");
  if (!(nt_ctx->exported & (1u << 11)))
    return conf_skip("the plugin exports ncclNetPlugin_v12 but not _v11: nothing to compare");
  const ncclNet_v12_t* t12 = nt_ctx->raw[12];
  const ncclNet_v11_t* t11 = nt_ctx->raw[11];
  nt_plugin p;
  CONF_TRY(nt_open(&p)); /* inits the version under test, so devices() answers */
  int n12 = -1, n11 = -1;
  NT_CALL_SETUP("v12 devices", t12->devices(&n12));
  NT_CALL_SETUP("v11 devices", t11->devices(&n11));
  if (n12 != n11) return conf_fail("v12 devices() reports %d, v11 %d", n12, n11);
  for (int d = 0; d < n12; d++) {
    ncclNetProperties_v12_t a;
    ncclNetProperties_v11_t b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    NT_CALL_SETUP("v12 getProperties", t12->getProperties(d, &a));
    NT_CALL_SETUP("v11 getProperties", t11->getProperties(d, &b));
    const char* diff = NULL;
    if ((a.name == NULL) != (b.name == NULL) || (a.name && strcmp(a.name, b.name) != 0))
      diff = "name";
    else if ((a.pciPath == NULL) != (b.pciPath == NULL) ||
             (a.pciPath && strcmp(a.pciPath, b.pciPath) != 0))
      diff = "pciPath";
    else if (a.guid != b.guid) diff = "guid";
    else if (a.ptrSupport != b.ptrSupport) diff = "ptrSupport";
    else if (a.regIsGlobal != b.regIsGlobal) diff = "regIsGlobal";
    else if (a.forceFlush != b.forceFlush) diff = "forceFlush";
    else if (a.speed != b.speed) diff = "speed";
    else if (a.port != b.port) diff = "port";
    else if (a.maxComms != b.maxComms) diff = "maxComms";
    else if (a.maxRecvs != b.maxRecvs) diff = "maxRecvs";
    else if (a.netDeviceType != b.netDeviceType) diff = "netDeviceType";
    else if (a.vProps.ndevs != b.vProps.ndevs) diff = "vProps.ndevs";
    else if (a.maxP2pBytes != b.maxP2pBytes) diff = "maxP2pBytes";
    else if (a.maxCollBytes != b.maxCollBytes) diff = "maxCollBytes";
    else if (a.maxMultiRequestSize != b.maxMultiRequestSize) diff = "maxMultiRequestSize";
    if (diff) return conf_fail("dev %d: %s differs between the v12 and v11 tables", d, diff);
    if (a.railId < NCCL_NET_ID_UNDEF || a.planeId < NCCL_NET_ID_UNDEF)
      return conf_fail("dev %d: v12 railId %d / planeId %d (NCCL_NET_ID_UNDEF or >= 0)", d,
                       a.railId, a.planeId);
  }
  return nt_close(&p);
}

const conf_test net_tests_abi[] = {
    {"net_plugin_loads_with_rtld_now_local", t_loads, 0},
    {"net_plugin_exports_a_supported_version", t_exports, 0},
    {"net_v6_table_has_name_and_mandatory_entries", t_table_v6, 0},
    {"net_v7_table_has_name_and_mandatory_entries", t_table_v7, 0},
    {"net_v8_table_has_name_and_mandatory_entries", t_table_v8, 0},
    {"net_v9_table_has_name_and_mandatory_entries", t_table_v9, 0},
    {"net_v10_table_has_name_and_mandatory_entries", t_table_v10, 0},
    {"net_v11_table_has_name_and_mandatory_entries", t_table_v11, 0},
    {"net_v12_table_has_name_and_mandatory_entries", t_table_v12, 0},
    {"net_init_with_logger_succeeds", t_init, 0},
    {"net_devices_reports_at_least_one", t_devices, 0},
    {"net_properties_are_sane_for_the_version", t_props, 0},
    {"net_properties_are_stable_across_calls", t_props_stable, 0},
    {"net_v12_properties_agree_with_v11", t_v12_agrees_with_v11, 0},
    {"net_bad_device_index_returns_error", t_bad_dev, 0},
    {"net_init_twice_gives_independent_contexts", t_init_twice, 0},
    {"net_init_again_after_finalize_and_reload_works", net_t_reload, 0},
};
const int net_tests_abi_count = sizeof net_tests_abi / sizeof net_tests_abi[0];
