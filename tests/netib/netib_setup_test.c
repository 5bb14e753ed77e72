/* net-ib device discovery and settings, one case per process (argv[1]): loading without a
 * usable verbs library (0 devices and an INFO line saying why, never a failure), NCCL_IB_DISABLE,
 * hosts without RDMA devices or active ports, the NCCL_IB_HCA grammar, RoCE GID selection and
 * the properties of a port. Runs over fakeverbs (WEFT_IB_VERBS_LIB from the test environment). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netib_harness.h"
#include "testutil.h"

static int ndevs_with(const char* hca) {
  if (hca)
    setenv("NCCL_IB_HCA", hca, 1);
  else
    unsetenv("NCCL_IB_HCA");
  nb_plugin p;
  nb_log_clear();
  nb_open(&p);
  int n = -1;
  NB_CHECK(p.net->devices(&n) == ncclSuccess);
  nb_close(&p); /* the last context: devices are looked for again at the next init */
  return n;
}

static void expect_zero_devices(const char* why) {
  nb_plugin p;
  nb_open(&p);
  int n = -1;
  NB_CHECK(p.net->devices(&n) == ncclSuccess && n == 0);
  NB_CHECK(nb_log_has("INFO NET/IB: 0 devices: "));
  if (!nb_log_has(why)) {
    fprintf(stderr, "the INFO line does not say \"%s\"\n", why);
    nb_dump_log();
    exit(1);
  }
  NB_CHECK(!nb_log_has("WARN"));
  ncclNetProperties_v11_t props;
  NB_CHECK(p.net->getProperties(0, &props) != ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* l = NULL;
  NB_CHECK(p.net->listen(p.ctx, 0, handle, &l) != ncclSuccess);
  nb_close(&p);
}

static int no_verbs_library_reports_zero_devices(void) {
  setenv("WEFT_IB_VERBS_LIB", "/nonexistent/libibverbs.so.1", 1);
  expect_zero_devices("cannot load /nonexistent/libibverbs.so.1");
  return 0;
}

static int non_verbs_library_reports_zero_devices(void) {
  setenv("WEFT_IB_VERBS_LIB", "libm.so.6", 1);
  expect_zero_devices("has no ibv_get_device_list");
  return 0;
}

static int ib_disable_reports_zero_devices(void) {
  setenv("NCCL_IB_DISABLE", "1", 1);
  expect_zero_devices("disabled by NCCL_IB_DISABLE=1");
  return 0;
}

static int host_without_rdma_devices_reports_zero_devices(void) {
  setenv("FAKEVERBS_DEVICES", "", 1);
  expect_zero_devices("no RDMA device on this host");
  return 0;
}

static int inactive_ports_are_skipped(void) {
  setenv("FAKEVERBS_DEVICES", "mlx5_0:ib:2,mlx5_1:eth", 1);
  setenv("FAKEVERBS_DOWN_PORTS", "mlx5_0:1,mlx5_1:1", 1);
  NB_CHECK(ndevs_with(NULL) == 1);
  NB_CHECK(nb_log_has("mlx5_0:1: port is DOWN, skipped"));
  NB_CHECK(nb_log_has("[0]mlx5_0:2/IB"));
  NB_CHECK(ndevs_with("mlx5_1") == 0);
  NB_CHECK(nb_log_has("0 devices: no active port selected by NCCL_IB_HCA=mlx5_1"));
  return 0;
}

static int hca_grammar_selects_devices_and_ports(void) {
  setenv("FAKEVERBS_DEVICES", "mlx5_0:ib,mlx5_1:ib:2,mlx5_10:eth", 1);
  NB_CHECK(ndevs_with(NULL) == 4);
  NB_CHECK(nb_log_has("[0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_1:2/IB [3]mlx5_10:1/RoCE"));
  NB_CHECK(ndevs_with("mlx5_1") == 3);            /* prefix: mlx5_1 and mlx5_10 */
  NB_CHECK(ndevs_with("=mlx5_1") == 2);           /* exact: both ports of mlx5_1 */
  NB_CHECK(ndevs_with("=mlx5_1:2") == 1);
  NB_CHECK(nb_log_has("[0]mlx5_1:2/IB"));
  NB_CHECK(ndevs_with("mlx5_0:1,mlx5_10:1") == 2);
  NB_CHECK(ndevs_with("^mlx5_1") == 1);           /* excludes mlx5_1 and mlx5_10 */
  NB_CHECK(nb_log_has("[0]mlx5_0:1/IB"));
  NB_CHECK(ndevs_with("^=mlx5_1") == 2);          /* excludes only mlx5_1 */
  NB_CHECK(ndevs_with("^=mlx5_1:1") == 3);        /* excludes one port */
  NB_CHECK(ndevs_with("mlx5_0:2") == 0);          /* no such port */
  NB_CHECK(ndevs_with("=mlx5") == 0);
  NB_CHECK(ndevs_with(" mlx5_0 , =x") == 1);      /* spaces trimmed; '=' only leads the list */
  return 0;
}

static int gid_index_with(const char* version, const char* family, const char* index) {
  if (version) setenv("NCCL_IB_ROCE_VERSION_NUM", version, 1); else unsetenv("NCCL_IB_ROCE_VERSION_NUM");
  if (family) setenv("NCCL_IB_ADDR_FAMILY", family, 1); else unsetenv("NCCL_IB_ADDR_FAMILY");
  if (index) setenv("NCCL_IB_GID_INDEX", index, 1); else unsetenv("NCCL_IB_GID_INDEX");
  return ndevs_with(NULL);
}

static int roce_gid_follows_version_and_family(void) {
  /* fakeverbs' RoCE port: 0/1 fe80:: v1/v2, 2/3 ::ffff:10.0.1.1 v1/v2, 4/5 fd00::1 v1/v2 */
  setenv("FAKEVERBS_DEVICES", "roce0:eth", 1);
  NB_CHECK(gid_index_with(NULL, NULL, NULL) == 1);
  NB_CHECK(nb_log_has("roce0:1: RoCE v2 GID index 3 (::ffff:10.0.1.1)"));
  NB_CHECK(gid_index_with("1", NULL, NULL) == 1);
  NB_CHECK(nb_log_has("roce0:1: RoCE v1 GID index 2 (::ffff:10.0.1.1)"));
  NB_CHECK(gid_index_with(NULL, "AF_INET6", NULL) == 1);
  NB_CHECK(nb_log_has("roce0:1: RoCE v2 GID index 5 (fd00::1)"));
  NB_CHECK(gid_index_with(NULL, NULL, "1") == 1);
  NB_CHECK(nb_log_has("roce0:1: RoCE v2 GID index 1 (fe80::"));
  NB_CHECK(gid_index_with(NULL, NULL, "9") == 0); /* an empty entry: the port is skipped */
  NB_CHECK(nb_log_has("WARN NET/IB: roce0:1: GID index 9 (NCCL_IB_GID_INDEX) is not a valid entry"));
  return 0;
}

static int properties_describe_the_port(void) {
  setenv("FAKEVERBS_DEVICES", "mlx5_0:ib", 1);
  setenv("WEFT_IB_QPS_PER_CONN", "4", 1);
  nb_plugin p;
  nb_open(&p);
  ncclNetProperties_v11_t pr;
  NB_CHECK(p.net->getProperties(0, &pr) == ncclSuccess);
  NB_CHECK(strcmp(pr.name, "mlx5_0") == 0 && pr.port == 1);
  NB_CHECK(pr.speed == 100000); /* 4x EDR */
  NB_CHECK(pr.ptrSupport == NCCL_PTR_HOST); /* no GPU here */
  NB_CHECK(pr.maxRecvs == 8 && pr.maxComms > 0 && pr.regIsGlobal == 0);
  NB_CHECK(pr.maxP2pBytes == (size_t)MAX_NET_SIZE);
  NB_CHECK(pr.pciPath == NULL); /* no sysfs device behind the fake */
  NB_CHECK(nb_log_has("4 QPs per connection"));
  nb_close(&p);
  /* WEFT_IB_GDR=1 claims GPU memory support even without a GPU (tests of the flush path). */
  setenv("WEFT_IB_GDR", "1", 1);
  nb_open(&p);
  NB_CHECK(p.net->getProperties(0, &pr) == ncclSuccess);
  NB_CHECK(pr.ptrSupport == (NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF));
  nb_close(&p);
  return 0;
}

/* init, a connection to itself, one message each way of the window, close, finalize. */
static void one_cycle(void) {
  nb_plugin p;
  nb_open(&p);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *l = NULL, *s = NULL, *r = NULL;
  ncclNetDeviceHandle_v11_t* dh = NULL;
  NB_CHECK(p.net->listen(p.ctx, 0, handle, &l) == ncclSuccess);
  double end = nb_now() + 10;
  while ((!s || !r) && nb_now() < end) {
    if (!s) NB_CHECK(p.net->connect(p.ctx, 0, handle, &s, &dh) == ncclSuccess);
    if (!r) NB_CHECK(p.net->accept(l, &r, &dh) == ncclSuccess);
  }
  NB_CHECK(s && r);
  NB_CHECK(p.net->closeListen(l) == ncclSuccess);
  enum { LEN = 200000 };
  char* a = malloc(LEN);
  char* b = calloc(1, LEN);
  for (int i = 0; i < LEN; i++) a[i] = (char)i;
  void *ma, *mb, *rs, *rr;
  NB_CHECK(p.net->regMr(s, a, LEN, NCCL_PTR_HOST, &ma) == ncclSuccess);
  NB_CHECK(p.net->regMr(r, b, LEN, NCCL_PTR_HOST, &mb) == ncclSuccess);
  void* d[1] = {b};
  size_t sz[1] = {LEN};
  int tag[1] = {1};
  void* mh[1] = {mb};
  NB_CHECK(p.net->irecv(r, 1, d, sz, tag, mh, NULL, &rr) == ncclSuccess && rr);
  NB_CHECK(p.net->isend(s, a, LEN, 1, ma, NULL, &rs) == ncclSuccess && rs);
  int got[1];
  NB_CHECK(nb_wait(&p, rs, NULL, 10) == ncclSuccess);
  NB_CHECK(nb_wait(&p, rr, got, 10) == ncclSuccess && got[0] == LEN);
  NB_CHECK(memcmp(a, b, LEN) == 0);
  NB_CHECK(p.net->deregMr(s, ma) == ncclSuccess && p.net->deregMr(r, mb) == ncclSuccess);
  NB_CHECK(p.net->closeSend(s) == ncclSuccess && p.net->closeRecv(r) == ncclSuccess);
  nb_close(&p);
  free(a);
  free(b);
}

static int init_finalize_cycles_leak_nothing(void) {
  setenv("WEFT_IB_QPS_PER_CONN", "2", 1);
  setenv("WEFT_IB_GDR", "1", 1); /* with the flush QP */
  one_cycle();                   /* loads the plugin and the verbs library once */
  int fds = test_count_fds(), threads = test_count_threads();
  for (int i = 0; i < 10; i++) one_cycle();
  int threads1 = test_settle_threads(threads);
  if (test_count_fds() != fds || threads1 != threads) {
    fprintf(stderr, "after 10 cycles: %d fds (was %d), %d threads (was %d)\n", test_count_fds(),
            fds, threads1, threads);
    return 1;
  }
  return 0;
}

static const struct {
  const char* name;
  int (*fn)(void);
} cases[] = {
    {"init_finalize_cycles_leak_nothing", init_finalize_cycles_leak_nothing},
    {"no_verbs_library_reports_zero_devices", no_verbs_library_reports_zero_devices},
    {"non_verbs_library_reports_zero_devices", non_verbs_library_reports_zero_devices},
    {"ib_disable_reports_zero_devices", ib_disable_reports_zero_devices},
    {"host_without_rdma_devices_reports_zero_devices", host_without_rdma_devices_reports_zero_devices},
    {"inactive_ports_are_skipped", inactive_ports_are_skipped},
    {"hca_grammar_selects_devices_and_ports", hca_grammar_selects_devices_and_ports},
    {"roce_gid_follows_version_and_family", roce_gid_follows_version_and_family},
    {"properties_describe_the_port", properties_describe_the_port},
};

int main(int argc, char** argv) {
  int n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; argc == 2 && i < n; i++)
    if (strcmp(argv[1], cases[i].name) == 0) return cases[i].fn();
  fprintf(stderr, "usage: %s CASE\n", argv[0]);
  return 2;
}
