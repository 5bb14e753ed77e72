/* The net plugin loader (core/plugin/net_load.c) against the test plugins built from
 * testnet_plugin.c into NETLOAD_PLUGIN_DIR. Usage: netload_test <case>; each case is its own
 * ctest entry (one process each, since NCCL_NET_PLUGIN is read once per process). WARNs go to a
 * file so a case can count them. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/net.h"
#include "plugin/net_shim.h"
#include "testnet.h"
#include "testutil.h"
#include "util/log.h"

static char log_path[PATH_MAX];

static const char* plugin(const char* x) {
  static char buf[8][PATH_MAX];
  static int next;
  char* p = buf[next++ % 8];
  snprintf(p, PATH_MAX, "%s/libnccl-net-%s.so", NETLOAD_PLUGIN_DIR, x);
  return p;
}

/* The plugin's counters. The test's own dlopen keeps the library resident, so the counters
 * survive the loader's dlclose. */
static testnet_stats_t* stats(const char* x) {
  void* dl = dlopen(plugin(x), RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    fprintf(stderr, "cannot open %s: %s\n", plugin(x), dlerror());
    exit(1);
  }
  testnet_stats_t* s = dlsym(dl, "testnet_stats");
  EXPECT(s != NULL);
  return s;
}

static void set_plugins(const char* list) {
  EXPECT_OK(net_loader_reset());
  if (list)
    setenv("NCCL_NET_PLUGIN", list, 1);
  else
    unsetenv("NCCL_NET_PLUGIN");
}

static weft_net* open_ok(const char* name, uint64_t id, int tc) {
  weft_net* n = NULL;
  EXPECT_OK(net_open_for_comm(name, id, tc, &n));
  EXPECT(n != NULL && n->api != NULL);
  return n;
}

/* WARN lines in the log that contain every given substring (NULL-terminated list). */
static int count_warns(const char* a, const char* b) {
  FILE* f = fopen(log_path, "r");
  if (f == NULL) return 0;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, " NCCL WARN ") && (!a || strstr(line, a)) && (!b || strstr(line, b))) n++;
  fclose(f);
  return n;
}

static void expect_last_error(const char* a, const char* b) {
  char err[1024];
  weft_log_last_error(err, sizeof err);
  if ((a && !strstr(err, a)) || (b && !strstr(err, b))) {
    fprintf(stderr, "last WARN \"%s\" lacks \"%s\" / \"%s\"\n", err, a ? a : "", b ? b : "");
    exit(1);
  }
}

/* ---- cases ---- */

static int case_select_by_net_name(void) {
  char list[3 * PATH_MAX];
  snprintf(list, sizeof list, "%s,%s", plugin("eight"), plugin("eleven"));
  set_plugins(list);
  unsetenv("NCCL_NET");
  weft_net* n = open_ok(NULL, 1, -1); /* no NCCL_NET: the first one */
  EXPECT(strcmp(n->name, "Eight") == 0);
  EXPECT_EQ_INT(n->version, 8);
  EXPECT(strcmp(n->path, plugin("eight")) == 0);
  net_close_for_comm(n);

  setenv("NCCL_NET", "eLeVeN", 1);
  n = open_ok(NULL, 2, -1);
  EXPECT(strcmp(n->name, "Eleven") == 0);
  EXPECT_EQ_INT(n->version, 11);
  EXPECT_EQ_INT(n->ndev, 2);
  net_close_for_comm(n);

  n = open_ok("EIGHT", 3, -1); /* a comm's netName wins over NCCL_NET */
  EXPECT(strcmp(n->name, "Eight") == 0);
  net_close_for_comm(n);

  setenv("NCCL_NET", "NoSuchNet", 1);
  weft_net* none = NULL;
  EXPECT_RES(net_open_for_comm(NULL, 4, -1, &none), ncclInvalidUsage);
  EXPECT(none == NULL);
  expect_last_error("NoSuchNet", "available: Eight, Eleven");
  return 0;
}

static int case_select_by_path_and_short_name(void) {
  unsetenv("NCCL_NET");
  set_plugins("eleven"); /* bare name: libnccl-net-eleven.so on LD_LIBRARY_PATH */
  weft_net* n = open_ok(NULL, 1, -1);
  EXPECT(strcmp(n->name, "Eleven") == 0);
  EXPECT(strstr(n->path, "/libnccl-net-eleven.so") != NULL);
  net_close_for_comm(n);

  set_plugins("libnccl-net-eight.so"); /* a soname, opened as given */
  n = open_ok(NULL, 2, -1);
  EXPECT(strcmp(n->name, "Eight") == 0);
  net_close_for_comm(n);

  set_plugins(plugin("ten")); /* a full path */
  n = open_ok(NULL, 3, -1);
  EXPECT(strcmp(n->name, "Ten") == 0);
  EXPECT_EQ_INT(n->version, 10);
  net_close_for_comm(n);

  set_plugins("nosuchplugin, eleven"); /* a list; the missing one is skipped with one WARN */
  n = open_ok(NULL, 4, -1);
  EXPECT(strcmp(n->name, "Eleven") == 0);
  net_close_for_comm(n);
  n = open_ok(NULL, 5, -1);
  net_close_for_comm(n);
  EXPECT_EQ_INT(count_warns("nosuchplugin", "libnccl-net-nosuchplugin.so"), 1);
  return 0;
}

static int case_none_uses_builtin_socket(void) {
  unsetenv("NCCL_NET");
  set_plugins("none");
  if (net_builtin() == NULL) {
    weft_net* n = NULL;
    EXPECT_RES(net_open_for_comm(NULL, 1, -1, &n), ncclInvalidUsage);
    printf("skip: no built-in net registered (plugins/net-socket/builtin_register.c)\n");
    return TEST_SKIP_RC;
  }
  weft_net* n = open_ok(NULL, 1, -1);
  EXPECT(strcasecmp(n->name, "Socket") == 0);
  EXPECT(strcmp(n->path, "built-in") == 0);
  EXPECT_EQ_INT(n->version, 11);
  net_close_for_comm(n);

  /* Its one-sided calls, registered beside it: the GIN proxy's backend of last resort
   * (core/gin/gin_comm.c). A usable table: init, a device, host memory only (staged GIN). */
  const ncclRma_v15_t* rma = net_builtin_rma();
  EXPECT(rma != NULL && strcmp(rma->name, "weft-socket") == 0);
  void* rctx = NULL;
  int ndev = 0;
  EXPECT_OK(rma->init(&rctx, 7, NULL));
  EXPECT_OK(rma->devices(&ndev));
  EXPECT(ndev > 0);
  ncclNetProperties_v12_t props;
  memset(&props, 0, sizeof props);
  EXPECT_OK(rma->getProperties(0, &props));
  EXPECT(props.ptrSupport & NCCL_PTR_HOST);
  EXPECT(!(props.ptrSupport & NCCL_PTR_CUDA));
  EXPECT_OK(rma->finalize(rctx));

  /* NCCL_NET=socket passes over a loadable external plugin. */
  set_plugins(plugin("eight"));
  setenv("NCCL_NET", "socket", 1);
  n = open_ok(NULL, 2, -1);
  EXPECT(strcasecmp(n->name, "Socket") == 0);
  net_close_for_comm(n);
  return 0;
}

static int case_default_library_absent_is_silent(void) {
  unsetenv("NCCL_NET");
  set_plugins(NULL); /* unset: libnccl-net.so, which does not exist here */
  weft_net* n = NULL;
  ncclResult_t res = net_open_for_comm(NULL, 1, -1, &n);
  EXPECT_EQ_INT(count_warns("libnccl-net.so", NULL), 0);
  if (net_builtin() == NULL) {
    EXPECT_EQ_INT(res, ncclInvalidUsage);
    printf("skip: no built-in socket net; checked only that the absent default is silent\n");
    return TEST_SKIP_RC;
  }
  EXPECT_EQ_INT(res, ncclSuccess);
  net_close_for_comm(n);
  return 0;
}

static int case_old_abi_init_once_v11_per_comm(void) {
  char list[4 * PATH_MAX];
  snprintf(list, sizeof list, "%s,%s,%s", plugin("eight"), plugin("eleven"), plugin("ten"));
  set_plugins(list);
  testnet_stats_t* s8 = stats("eight");
  testnet_stats_t* s10 = stats("ten");
  testnet_stats_t* s11 = stats("eleven");

  /* v8: one plugin init however many communicators. */
  setenv("NCCL_NET", "eight", 1);
  weft_net* a = open_ok(NULL, 1, -1);
  weft_net* b = open_ok(NULL, 2, -1);
  weft_net* c = open_ok(NULL, 3, -1);
  EXPECT_EQ_INT(s8->init_calls, 1);
  EXPECT(a->ctx != b->ctx && b->ctx != c->ctx);
  EXPECT(s8->logger_given);
  /* While Eight serves communicators the other externals are not used. */
  weft_net* other = NULL;
  EXPECT_RES(net_open_for_comm("Eleven", 4, -1, &other), ncclInvalidUsage);
  expect_last_error(plugin("eleven"), " (unused while Eight is in use)");
  net_close_for_comm(a);
  net_close_for_comm(b);
  weft_net* d = open_ok(NULL, 5, -1);
  EXPECT_EQ_INT(s8->init_calls, 1);
  net_close_for_comm(c);
  net_close_for_comm(d);
  /* The last communicator closed the library; the next one loads and initialises it again. */
  weft_net* e = open_ok(NULL, 6, -1);
  EXPECT_EQ_INT(s8->init_calls, 2);
  net_close_for_comm(e);

  /* v11: init and finalize per communicator, with the comm id and traffic class. */
  setenv("NCCL_NET", "eleven", 1);
  weft_net* x = open_ok(NULL, 11, -1);
  weft_net* y = open_ok(NULL, 12, 3);
  weft_net* z = open_ok(NULL, 13, -1);
  EXPECT_EQ_INT(s11->init_calls, 3);
  EXPECT_EQ_INT(s11->last_comm_id, 13);
  EXPECT(s11->profiler_given && s11->logger_given);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *send = NULL, *listen = NULL;
  ncclNetDeviceHandle_v11_t* dev = NULL;
  EXPECT_OK(y->api->listen(y->ctx, 0, handle, &listen));
  EXPECT_OK(y->api->connect(y->ctx, 0, handle, &send, &dev));
  EXPECT_EQ_INT(s11->last_traffic_class, 3);
  EXPECT_OK(y->api->closeSend(send));
  EXPECT_OK(y->api->closeListen(listen));
  net_close_for_comm(x);
  net_retain(y); /* a child communicator sharing y */
  net_close_for_comm(y);
  EXPECT_EQ_INT(s11->finalize_calls, 1);
  net_close_for_comm(y);
  net_close_for_comm(z);
  EXPECT_EQ_INT(s11->finalize_calls, 3);

  /* v10: init once (with the profiler callback); connect gets each comm's own config. */
  setenv("NCCL_NET", "TEN", 1);
  weft_net* p = open_ok(NULL, 21, 5);
  weft_net* q = open_ok(NULL, 22, 7);
  EXPECT_EQ_INT(s10->init_calls, 1);
  EXPECT(s10->profiler_given);
  EXPECT_OK(p->api->connect(p->ctx, 0, handle, &send, &dev));
  EXPECT_EQ_INT(s10->last_traffic_class, 5);
  EXPECT_OK(q->api->connect(q->ctx, 0, handle, &send, &dev));
  EXPECT_EQ_INT(s10->last_traffic_class, 7);
  net_close_for_comm(p);
  net_close_for_comm(q);
  return 0;
}

static int case_old_properties_get_defaults(void) {
  char list[3 * PATH_MAX];
  snprintf(list, sizeof list, "%s,%s,%s", plugin("eight"), plugin("ten"), plugin("eleven"));
  set_plugins(list);
  setenv("NCCL_NET", "eight", 1);
  weft_net* n = open_ok(NULL, 1, -1);
  ncclNetProperties_v12_t p;
  memset(&p, 0x5a, sizeof p);
  EXPECT_OK(n->api->getProperties(1, &p));
  EXPECT(strcmp(p.name, "testnet0") == 0);
  EXPECT(p.pciPath == NULL);
  EXPECT_EQ_INT(p.guid, 0x1235);
  EXPECT_EQ_INT(p.ptrSupport, NCCL_PTR_HOST);
  EXPECT_EQ_INT(p.regIsGlobal, 1); /* v8 has it */
  EXPECT_EQ_INT(p.forceFlush, 0);  /* v8 lacks it: default */
  EXPECT_EQ_INT(p.speed, TESTNET_DUMMY_SIZE);
  EXPECT_EQ_INT(p.port, 1);
  EXPECT(p.latency == 1.5f);
  EXPECT_EQ_INT(p.maxComms, 65536);
  EXPECT_EQ_INT(p.maxRecvs, 4);
  EXPECT_EQ_INT(p.netDeviceType, NCCL_NET_DEVICE_HOST);
  EXPECT_EQ_INT(p.vProps.ndevs, 1);
  EXPECT_EQ_INT(p.vProps.devs[0], 1);
  EXPECT_EQ_INT(p.maxP2pBytes, 1L << 30);
  EXPECT_EQ_INT(p.maxCollBytes, 512L << 20);
  EXPECT_EQ_INT(p.maxMultiRequestSize, 1);
  EXPECT_EQ_INT(p.railId, NCCL_NET_ID_UNDEF);
  EXPECT_EQ_INT(p.planeId, NCCL_NET_ID_UNDEF);
  int vdev = -1;
  ncclNetVDeviceProps_v12_t vp = {2, {0, 1}};
  EXPECT_RES(n->api->makeVDevice(&vdev, &vp), ncclInvalidUsage); /* stub */
  net_close_for_comm(n);

  setenv("NCCL_NET", "ten", 1); /* v10: the limits are its own, maxMultiRequestSize is 1 */
  n = open_ok(NULL, 2, -1);
  EXPECT_OK(n->api->getProperties(0, &p));
  EXPECT_EQ_INT(p.forceFlush, 1);
  EXPECT_EQ_INT(p.maxP2pBytes, 4L << 30);
  EXPECT_EQ_INT(p.maxMultiRequestSize, 1);
  net_close_for_comm(n);

  setenv("NCCL_NET", "eleven", 1);
  n = open_ok(NULL, 3, -1);
  EXPECT_OK(n->api->getProperties(0, &p));
  EXPECT_EQ_INT(p.maxMultiRequestSize, 4);
  net_close_for_comm(n);
  return 0;
}

static int case_shims_convert_sizes(void) {
  char list[3 * PATH_MAX];
  snprintf(list, sizeof list, "%s,%s,%s", plugin("eight"), plugin("ten"), plugin("eleven"));
  set_plugins(list);
  const size_t big = (size_t)3 << 30; /* above INT_MAX */
  char buf[64];
  void *mh = NULL, *req = NULL;

  setenv("NCCL_NET", "eight", 1);
  testnet_stats_t* s8 = stats("eight");
  weft_net* n = open_ok(NULL, 1, -1);
  EXPECT_OK(n->api->regMr(NULL, buf, big, NCCL_PTR_HOST, &mh)); /* size_t since v8 */
  EXPECT_EQ_INT(s8->last_regmr_size, (long long)big);
  int sends = s8->isend_calls;
  EXPECT_RES(n->api->isend(NULL, buf, big, 0, mh, NULL, &req), ncclInvalidArgument);
  EXPECT_EQ_INT(s8->isend_calls, sends); /* the plugin never saw it */
  EXPECT_OK(n->api->isend(NULL, buf, (size_t)INT_MAX, 0, mh, NULL, &req));
  EXPECT_EQ_INT(s8->last_isend_size, INT_MAX);
  int done = 0, got = 0;
  EXPECT_OK(n->api->test(req, &done, &got));
  EXPECT(done);
  void* datas[2] = {buf, buf};
  size_t sizes[2] = {100, big};
  int tags[2] = {0, 0};
  void* mhs[2] = {mh, mh};
  int recvs = s8->irecv_calls;
  EXPECT_RES(n->api->irecv(NULL, 2, datas, sizes, tags, mhs, NULL, &req), ncclInvalidArgument);
  EXPECT_EQ_INT(s8->irecv_calls, recvs);
  sizes[1] = 200;
  req = (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION; /* the hint v8 must not see */
  EXPECT_OK(n->api->irecv(NULL, 2, datas, sizes, tags, mhs, NULL, &req));
  EXPECT(s8->last_irecv_request_in == NULL);
  EXPECT_EQ_INT(s8->last_irecv_n, 2);
  EXPECT_EQ_INT(s8->last_irecv_sizes[0], 100);
  EXPECT_EQ_INT(s8->last_irecv_sizes[1], 200);
  expect_last_error("irecv 1 of 3221225472 bytes", "v8");
  net_close_for_comm(n);

  /* v10 and v11 take size_t and the hint as they are. */
  const char* newer[2] = {"ten", "eleven"};
  for (int i = 0; i < 2; i++) {
    setenv("NCCL_NET", newer[i], 1);
    testnet_stats_t* s = stats(newer[i]);
    n = open_ok(NULL, 2, -1);
    EXPECT_OK(n->api->isend(NULL, buf, big, 0, mh, NULL, &req));
    EXPECT_EQ_INT(s->last_isend_size, (long long)big);
    sizes[1] = big;
    req = (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION;
    EXPECT_OK(n->api->irecv(NULL, 2, datas, sizes, tags, mhs, NULL, &req));
    EXPECT(s->last_irecv_request_in == (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION);
    EXPECT_EQ_INT(s->last_irecv_sizes[1], (long long)big);
    net_close_for_comm(n);
  }
  return 0;
}

/* The v6 table of libnccl-net-both.so, through the shim directly (the loader prefers its v11). */
static int case_v6_shim(void) {
  void* dl = dlopen(plugin("both"), RTLD_NOW | RTLD_LOCAL);
  EXPECT(dl != NULL);
  testnet_stats_t* s = dlsym(dl, "testnet_stats");
  const void* raw = dlsym(dl, net_shim_symbol(6));
  EXPECT(s && raw);
  weft_net_view v;
  char why[128];
  EXPECT_OK(net_shim_adapt(raw, 6, &v, why, sizeof why));
  EXPECT(strcmp(v.api.name, "BothOld") == 0);
  ncclNetCommConfig_v12_t cfg = {.trafficClass = -1};
  void* ctx = NULL;
  EXPECT_OK(v.api.init(&ctx, 1, &cfg, weft_log, NULL));
  EXPECT_EQ_INT(s->init_calls, 1);
  ncclNetProperties_v12_t p;
  EXPECT_OK(v.api.getProperties(0, &p));
  EXPECT_EQ_INT(p.regIsGlobal, 0);
  EXPECT_EQ_INT(p.netDeviceType, NCCL_NET_DEVICE_HOST);
  EXPECT_EQ_INT(p.maxP2pBytes, 1L << 30);
  EXPECT_EQ_INT(p.maxCollBytes, 512L << 20);
  char buf[8];
  void* mh = NULL;
  EXPECT_RES(v.api.regMr(NULL, buf, (size_t)3 << 30, NCCL_PTR_HOST, &mh), ncclInvalidArgument);
  EXPECT_EQ_INT(s->regmr_calls, 0);
  EXPECT_OK(v.api.regMr(NULL, buf, 100, NCCL_PTR_HOST, &mh));
  EXPECT_EQ_INT(s->last_regmr_size, 100);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* send = NULL;
  ncclNetDeviceHandle_v11_t marker, *dev = &marker;
  EXPECT_OK(v.api.connect(ctx, 0, handle, &send, &dev));
  EXPECT(send != NULL && dev == NULL); /* v6 has no device handles */
  EXPECT_OK(v.api.finalize(ctx));
  net_shim_release(&v);
  dlclose(dl);
  return 0;
}

static int case_v11_wins_over_v6(void) {
  unsetenv("NCCL_NET");
  set_plugins(plugin("both"));
  weft_net* n = open_ok(NULL, 1, -1);
  EXPECT_EQ_INT(n->version, 11);
  EXPECT(strcmp(n->name, "Both") == 0);
  net_close_for_comm(n);
  return 0;
}

static int case_skips_broken_with_one_warn(void) {
  unsetenv("NCCL_NET");
  static const struct {
    const char* lib;
    const char* reason;
  } broken[] = {
      {"nosym", "exports no ncclNetPlugin_v12..v6 symbol"},
      {"nullisend", "ncclNetPlugin_v8: isend is NULL"},
      {"initfail", "init failed (ncclSystemError)"},
      {"zerodev", "no devices (devices() reported 0)"},
  };
  const int nb = (int)(sizeof broken / sizeof broken[0]);
  /* Each alone in front of a good one: the last WARN is the skip, naming file and reason. */
  for (int i = 0; i < nb; i++) {
    char list[2 * PATH_MAX + 2];
    snprintf(list, sizeof list, "%s,%s", plugin(broken[i].lib), plugin("eight"));
    set_plugins(list);
    weft_net* n = open_ok(NULL, 1, -1);
    EXPECT(strcmp(n->name, "Eight") == 0);
    expect_last_error(plugin(broken[i].lib), broken[i].reason);
    net_close_for_comm(n);
    n = open_ok(NULL, 2, -1); /* not tried again */
    net_close_for_comm(n);
    EXPECT_EQ_INT(count_warns(plugin(broken[i].lib), NULL), 1);
  }
  /* All together: one WARN more for each, and the good one still wins. */
  char list[6 * PATH_MAX];
  size_t o = 0;
  for (int i = 0; i < nb; i++) o += (size_t)snprintf(list + o, sizeof list - o, "%s,", plugin(broken[i].lib));
  snprintf(list + o, sizeof list - o, "%s", plugin("eight"));
  set_plugins(list);
  for (int k = 0; k < 3; k++) {
    weft_net* n = open_ok(NULL, 10 + (uint64_t)k, -1);
    EXPECT(strcmp(n->name, "Eight") == 0);
    net_close_for_comm(n);
  }
  for (int i = 0; i < nb; i++) {
    if (count_warns(plugin(broken[i].lib), broken[i].reason) != 2) {
      fprintf(stderr, "%s: expected one WARN with \"%s\" per registry\n", broken[i].lib,
              broken[i].reason);
      return 1;
    }
  }
  return 0;
}

static int case_list_longer_than_14_is_cut(void) {
  unsetenv("NCCL_NET");
  char list[4096];
  size_t o = 0;
  for (int i = 0; i < NET_MAX_EXTERNAL_PLUGINS; i++)
    o += (size_t)snprintf(list + o, sizeof list - o, "nosuch%d,", i);
  snprintf(list + o, sizeof list - o, "%s", plugin("eleven")); /* the 15th: ignored */
  set_plugins(list);
  weft_net* n = NULL;
  ncclResult_t res = net_open_for_comm("Eleven", 1, -1, &n);
  EXPECT_EQ_INT(res, ncclInvalidUsage);
  EXPECT_EQ_INT(count_warns("more than 14 libraries", plugin("eleven")), 1);
  EXPECT_EQ_INT(count_warns("nosuch13", NULL), 1);
  return 0;
}

/* A library whose table answers to "Socket", like the built-in net: one WARN naming both, once
 * per process; the library (listed first) is the one NCCL_NET=Socket gets. */
static int case_two_candidates_with_one_name(void) {
  unsetenv("NCCL_NET");
  set_plugins(plugin("clash"));
  weft_net* n = open_ok("socket", 1, -1);
  EXPECT(strcmp(n->name, "Socket") == 0 && strcmp(n->path, "built-in") != 0);
  EXPECT(strstr(n->path, "libnccl-net-clash.so") != NULL);
  net_close_for_comm(n);
  EXPECT_EQ_INT(count_warns("both answer to the name \"Socket\"", "libnccl-net-clash.so"), 1);
  EXPECT_EQ_INT(count_warns("built-in", "picks"), 1);
  n = open_ok("socket", 2, -1); /* loaded again: no second WARN */
  net_close_for_comm(n);
  EXPECT_EQ_INT(count_warns("both answer to the name", NULL), 1);
  return 0;
}

/* weft's own socket plugin library, loaded as an external plugin, and each older table it
 * exports through the shim. */
static int case_weft_socket_library_all_versions(void) {
#ifndef NETLOAD_SOCKET_LIB
  printf("skip: libnccl-net-weft-socket.so is not built\n");
  return TEST_SKIP_RC;
#else
  unsetenv("NCCL_NET");
  set_plugins(NETLOAD_SOCKET_LIB);
  weft_net* n = open_ok(NULL, 1, -1);
  EXPECT(strcmp(n->name, "weft-socket") == 0);
  EXPECT(strcmp(n->path, "built-in") != 0); /* the library, not the built-in */
  EXPECT_EQ_INT(n->version, 12);
  EXPECT(n->ndev > 0);
  net_close_for_comm(n);

  void* dl = dlopen(NETLOAD_SOCKET_LIB, RTLD_NOW | RTLD_LOCAL);
  EXPECT(dl != NULL);
  int seen = 0;
  for (int v = WEFT_NET_MIN_VERSION; v < WEFT_NET_MAX_VERSION; v++) {
    const void* raw = dlsym(dl, net_shim_symbol(v));
    if (raw == NULL) continue;
    seen++;
    weft_net_view view;
    char why[160];
    if (net_shim_adapt(raw, v, &view, why, sizeof why) != ncclSuccess) {
      fprintf(stderr, "%s: %s\n", net_shim_symbol(v), why);
      return 1;
    }
    ncclNetCommConfig_v12_t cfg = {.trafficClass = -1};
    void* ctx = NULL;
    int ndev = 0;
    ncclNetProperties_v12_t p;
    EXPECT_OK(view.api.init(&ctx, 7, &cfg, weft_log, NULL));
    EXPECT_OK(view.api.devices(&ndev));
    EXPECT(ndev > 0);
    EXPECT_OK(view.api.getProperties(0, &p));
    EXPECT(p.name != NULL);
    if (v < 11) EXPECT_EQ_INT(p.maxMultiRequestSize, 1);
    EXPECT_EQ_INT(p.railId, NCCL_NET_ID_UNDEF);
    EXPECT_EQ_INT(p.netDeviceType, NCCL_NET_DEVICE_HOST);
    EXPECT_OK(view.api.finalize(ctx));
    net_shim_release(&view);
  }
  printf("adapted %d older tables of %s\n", seen, NETLOAD_SOCKET_LIB);
  /* dl stays open: v6..v10 have no finalize, so what their init allocated lives as long as
   * the library does. */
  return 0;
#endif
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  snprintf(log_path, sizeof log_path, "/tmp/weft-netload-%d.log", (int)getpid());
  setenv("NCCL_DEBUG", "WARN", 0); /* at least WARN; NCCL_DEBUG=INFO by hand shows more */
  setenv("NCCL_DEBUG_FILE", log_path, 1);
  weft_log_reset();
  int fds = test_count_fds();

  const char* c = argv[1];
  int rc;
  if (!strcmp(c, "select_by_net_name")) rc = case_select_by_net_name();
  else if (!strcmp(c, "select_by_path_and_short_name")) rc = case_select_by_path_and_short_name();
  else if (!strcmp(c, "none_uses_builtin_socket")) rc = case_none_uses_builtin_socket();
  else if (!strcmp(c, "default_library_absent_is_silent")) rc = case_default_library_absent_is_silent();
  else if (!strcmp(c, "old_abi_init_once_v11_per_comm")) rc = case_old_abi_init_once_v11_per_comm();
  else if (!strcmp(c, "old_properties_get_defaults")) rc = case_old_properties_get_defaults();
  else if (!strcmp(c, "shims_convert_sizes")) rc = case_shims_convert_sizes();
  else if (!strcmp(c, "v6_shim")) rc = case_v6_shim();
  else if (!strcmp(c, "v11_wins_over_v6")) rc = case_v11_wins_over_v6();
  else if (!strcmp(c, "skips_broken_with_one_warn")) rc = case_skips_broken_with_one_warn();
  else if (!strcmp(c, "list_longer_than_14_is_cut")) rc = case_list_longer_than_14_is_cut();
  else if (!strcmp(c, "two_candidates_with_one_name_warn")) rc = case_two_candidates_with_one_name();
  else if (!strcmp(c, "weft_socket_library_all_versions"))
    rc = case_weft_socket_library_all_versions();
  else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  if (rc == 0) {
    EXPECT_OK(net_loader_reset());
    EXPECT_EQ_INT(test_count_fds(), fds);
  }
  if ((rc == 0 || rc == TEST_SKIP_RC) && getenv("WEFT_TEST_KEEP_LOG") == NULL) unlink(log_path);
  return rc;
}
