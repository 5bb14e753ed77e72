/* Fault injection into the libfabric net plugin through its function table (net_ofi_fi): each
 * case replaces one libfabric call with a wrapper that fails in a chosen way, drives a loopback
 * connection of the plugin's v11 table in one process, and checks that the failure surfaces
 * where NCCL would see it (init, connect, regMr, isend or test), with the right result code and
 * with libfabric's error text and the provider's name in the WARN. Each case runs in its own
 * forked process (the plugin's device list and settings are per process). Provider: whatever
 * WEFT_OFI_PROVIDER / WEFT_OFI_DOMAIN say (CI: tcp;ofi_rxm on lo). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net_ofi.h"
#include "testutil.h"

static const ncclNet_v11_t* net = &net_ofi_v11;

/* ---- the logger: WARN lines collected for the checks ---- */
static char warns[32768];
static size_t nwarn;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags, (void)file, (void)line;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (getenv("NETOFI_TEST_VERBOSE")) fprintf(stderr, "  [plugin %d] %s\n", (int)level, msg);
  if (level != NCCL_LOG_WARN) return;
  int k = snprintf(warns + nwarn, sizeof warns - nwarn, "%s\n", msg);
  if (k > 0 && (size_t)k < sizeof warns - nwarn) nwarn += (size_t)k;
}

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: expected %s\nplugin warnings:\n%s", __FILE__, __LINE__, \
              #cond, warns);                                                          \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

static int warned(const char* text) { return strstr(warns, text) != NULL; }

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void nap(void) {
  struct timespec ts = {0, 200000};
  nanosleep(&ts, NULL);
}

/* ---- a loopback connection ---- */
typedef struct {
  void *ctx, *l, *s, *r;
} pair;

static ncclResult_t pair_open(pair* p) {
  memset(p, 0, sizeof *p);
  ncclResult_t res = net->init(&p->ctx, 1, NULL, logger, NULL);
  if (res != ncclSuccess) return res;
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  if ((res = net->listen(p->ctx, 0, handle, &p->l)) != ncclSuccess) return res;
  double deadline = now_s() + 10;
  while (!p->s || !p->r) {
    if (!p->s && (res = net->connect(p->ctx, 0, handle, &p->s, NULL)) != ncclSuccess) return res;
    if (!p->r && (res = net->accept(p->l, &p->r, NULL)) != ncclSuccess) return res;
    if (now_s() > deadline) {
      fprintf(stderr, "connect/accept not done after 10 s\n");
      return ncclInternalError;
    }
    nap();
  }
  return ncclSuccess;
}

static void pair_close(pair* p) {
  if (p->s) net->closeSend(p->s);
  if (p->r) net->closeRecv(p->r);
  if (p->l) net->closeListen(p->l);
  if (p->ctx) net->finalize(p->ctx);
}

/* Test until done (returns ncclSuccess, *done 1), an error (returned), or the deadline (*done
 * stays 0). */
static ncclResult_t wait_req(void* req, double secs, int* done, int* size) {
  double deadline = now_s() + secs;
  *done = 0;
  while (now_s() < deadline) {
    ncclResult_t res = net->test(req, done, size);
    if (res != ncclSuccess || *done) return res;
    nap();
  }
  return ncclSuccess;
}

/* ---- fault wrappers ---- */
static int inject_err;  /* errno to inject on the next completion of inject_kind */
static int inject_kind; /* OFI_OP_* */
static struct fi_cq_err_entry held;
static int holding;

static ssize_t faulty_cq_read(struct fid_cq* cq, void* buf, size_t count) {
  (void)count;
  if (holding) return -FI_EAVAIL;
  ssize_t n = net_ofi_fi_default.cq_read(cq, buf, 1); /* one at a time: nothing gets lost */
  if (n == 1 && inject_err) {
    struct fi_cq_tagged_entry* e = buf;
    ofi_op* op = e->op_context;
    if (op && op->kind == inject_kind) {
      memset(&held, 0, sizeof held);
      held.op_context = e->op_context;
      held.flags = e->flags;
      held.err = inject_err;
      held.prov_errno = inject_err;
      holding = 1;
      inject_err = 0;
      return -FI_EAVAIL;
    }
  }
  return n;
}

static ssize_t faulty_cq_readerr(struct fid_cq* cq, struct fi_cq_err_entry* e, uint64_t flags) {
  if (holding) {
    *e = held;
    holding = 0;
    return 1;
  }
  return net_ofi_fi_default.cq_readerr(cq, e, flags);
}

static int is_probe(uint64_t tag) {
  return (tag >> 62) == OFI_KIND_CTRL && (uint32_t)tag == OFI_CTRL_PROBE;
}

static ssize_t tsend_data_fails(struct fid_ep* ep, const void* buf, size_t len, void* desc,
                                fi_addr_t dest, uint64_t tag, void* ctx) {
  if ((tag >> 62) == OFI_KIND_DATA) return -FI_EIO;
  return net_ofi_fi_default.tsend(ep, buf, len, desc, dest, tag, ctx);
}

static ssize_t tsend_probe_refused(struct fid_ep* ep, const void* buf, size_t len, void* desc,
                                   fi_addr_t dest, uint64_t tag, void* ctx) {
  if (is_probe(tag)) return -FI_EAGAIN;
  return net_ofi_fi_default.tsend(ep, buf, len, desc, dest, tag, ctx);
}

static int getinfo_nodata(uint32_t version, const char* node, const char* service,
                          uint64_t flags, const struct fi_info* hints, struct fi_info** info) {
  (void)version, (void)node, (void)service, (void)flags, (void)hints, (void)info;
  return -FI_ENODATA;
}

static int av_insert_fails(struct fid_av* av, const void* addr, size_t count, fi_addr_t* fi_addr,
                           uint64_t flags, void* context) {
  (void)av, (void)addr, (void)count, (void)fi_addr, (void)flags, (void)context;
  return -FI_EINVAL;
}

static int mr_big_fails(struct fid_domain* domain, const struct fi_mr_attr* attr, uint64_t flags,
                        struct fid_mr** mr) {
  if (attr->iov_count == 1 && attr->mr_iov[0].iov_len >= (1 << 16)) return -FI_ENOMEM;
  return net_ofi_fi_default.mr_regattr(domain, attr, flags, mr);
}

/* ---- one message, with buffers registered ---- */
enum { LEN = 100000 };
static char sbuf[LEN], rbuf[LEN];

typedef struct {
  void *smh, *rmh, *sreq, *rreq;
} xfer;

static ncclResult_t post_pair(pair* p, xfer* x) {
  memset(x, 0, sizeof *x);
  ncclResult_t res;
  if ((res = net->regMr(p->s, sbuf, LEN, NCCL_PTR_HOST, &x->smh)) != ncclSuccess) return res;
  if ((res = net->regMr(p->r, rbuf, LEN, NCCL_PTR_HOST, &x->rmh)) != ncclSuccess) return res;
  void* data[1] = {rbuf};
  size_t sizes[1] = {LEN};
  int tags[1] = {3};
  void* mhs[1] = {x->rmh};
  if ((res = net->irecv(p->r, 1, data, sizes, tags, mhs, NULL, &x->rreq)) != ncclSuccess)
    return res;
  return net->isend(p->s, sbuf, LEN, 3, x->smh, NULL, &x->sreq);
}

/* ---- the cases ---- */

static int case_receive_error(void) {
  ncclResult_t res;
  pair p;
  net_ofi_fi.cq_read = faulty_cq_read;
  net_ofi_fi.cq_readerr = faulty_cq_readerr;
  CHECK(pair_open(&p) == ncclSuccess);
  inject_kind = OFI_OP_RECV;
  inject_err = FI_EIO;
  xfer x;
  CHECK(post_pair(&p, &x) == ncclSuccess);
  CHECK(x.rreq != NULL && x.sreq != NULL);
  int done, size;
  res = wait_req(x.rreq, 10, &done, &size);
  CHECK(res == ncclSystemError);
  CHECK(warned("Input/output error"));
  CHECK(warned(net_ofi_provider()));
  /* The comm is failed: new receives say so, and teardown still works. */
  void* data[1] = {rbuf};
  size_t sizes[1] = {LEN};
  int tags[1] = {3};
  void* mhs[1] = {x.rmh};
  void* again = NULL;
  CHECK(net->irecv(p.r, 1, data, sizes, tags, mhs, NULL, &again) == ncclSystemError);
  wait_req(x.sreq, 5, &done, &size);
  CHECK(net->deregMr(p.s, x.smh) == ncclSuccess);
  CHECK(net->deregMr(p.r, x.rmh) == ncclSuccess);
  pair_close(&p);
  return 0;
}

static int case_send_reset_is_remote(void) {
  pair p;
  net_ofi_fi.cq_read = faulty_cq_read;
  net_ofi_fi.cq_readerr = faulty_cq_readerr;
  CHECK(pair_open(&p) == ncclSuccess);
  inject_kind = OFI_OP_SEND;
  inject_err = FI_ECONNRESET;
  xfer x;
  CHECK(post_pair(&p, &x) == ncclSuccess);
  int done, size;
  /* Drive the receive too: the send completes only once the data moved. */
  double deadline = now_s() + 10;
  ncclResult_t sres = ncclSuccess;
  int sdone = 0, rdone = 0;
  while (now_s() < deadline && sres == ncclSuccess && !sdone) {
    sres = net->test(x.sreq, &sdone, &size);
    if (!rdone) net->test(x.rreq, &rdone, &size);
    nap();
  }
  CHECK(sres == ncclRemoteError);
  CHECK(warned("Connection reset"));
  (void)done;
  net->deregMr(p.s, x.smh);
  net->deregMr(p.r, x.rmh);
  pair_close(&p);
  return 0;
}

static int case_tsend_error(void) {
  pair p;
  CHECK(pair_open(&p) == ncclSuccess);
  net_ofi_fi.tsend = tsend_data_fails;
  xfer x;
  ncclResult_t res = post_pair(&p, &x);
  if (res == ncclSuccess) {
    int done, size;
    res = wait_req(x.sreq, 5, &done, &size);
  }
  CHECK(res == ncclSystemError);
  CHECK(warned("fi_tsend"));
  CHECK(warned("Input/output error"));
  net_ofi_fi.tsend = net_ofi_fi_default.tsend;
  pair_close(&p);
  return 0;
}

static int case_getinfo_error(void) {
  net_ofi_fi.getinfo = getinfo_nodata;
  void* ctx = NULL;
  CHECK(net->init(&ctx, 1, NULL, logger, NULL) == ncclSystemError);
  CHECK(ctx == NULL);
  CHECK(warned("No data available"));
  /* Once libfabric answers again, a later init works. */
  net_ofi_fi.getinfo = net_ofi_fi_default.getinfo;
  CHECK(net->init(&ctx, 1, NULL, logger, NULL) == ncclSuccess);
  CHECK(net->finalize(ctx) == ncclSuccess);
  return 0;
}

static int case_av_insert_error(void) {
  void* ctx = NULL;
  CHECK(net->init(&ctx, 1, NULL, logger, NULL) == ncclSuccess);
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *l = NULL, *s = NULL;
  CHECK(net->listen(ctx, 0, handle, &l) == ncclSuccess);
  net_ofi_fi.av_insert = av_insert_fails;
  CHECK(net->connect(ctx, 0, handle, &s, NULL) == ncclSystemError);
  CHECK(s == NULL);
  CHECK(warned("fi_av_insert"));
  net_ofi_fi.av_insert = net_ofi_fi_default.av_insert;
  CHECK(net->closeListen(l) == ncclSuccess);
  CHECK(net->finalize(ctx) == ncclSuccess);
  return 0;
}

static int case_regmr_error(void) {
  setenv("WEFT_OFI_MR_STRICT", "1", 1);
  pair p;
  CHECK(pair_open(&p) == ncclSuccess);
  net_ofi_fi.mr_regattr = mr_big_fails;
  void* mh = NULL;
  CHECK(net->regMr(p.s, sbuf, LEN, NCCL_PTR_HOST, &mh) == ncclSystemError);
  CHECK(warned("fi_mr_regattr"));
  CHECK(warned("Cannot allocate memory"));
  net_ofi_fi.mr_regattr = net_ofi_fi_default.mr_regattr;
  CHECK(net->regMr(p.s, sbuf, LEN, NCCL_PTR_HOST, &mh) == ncclSuccess);
  CHECK(net->deregMr(p.s, mh) == ncclSuccess);
  pair_close(&p);
  return 0;
}

static int case_probe_refused(void) {
  setenv("WEFT_OFI_PROBE_MS", "50", 1);
  setenv("WEFT_OFI_PEER_TIMEOUT_MS", "300", 1);
  setenv("WEFT_OFI_PEER_PID_CHECK", "0", 1);
  pair p;
  CHECK(pair_open(&p) == ncclSuccess);
  net_ofi_fi.tsend = tsend_probe_refused;
  void* rmh = NULL;
  CHECK(net->regMr(p.r, rbuf, LEN, NCCL_PTR_HOST, &rmh) == ncclSuccess);
  void* data[1] = {rbuf};
  size_t sizes[1] = {LEN};
  int tags[1] = {9};
  void* mhs[1] = {rmh};
  void* req = NULL;
  CHECK(net->irecv(p.r, 1, data, sizes, tags, mhs, NULL, &req) == ncclSuccess);
  /* Nobody sends: the receiver probes, the provider keeps refusing, the peer is declared gone. */
  int done, size;
  double t0 = now_s();
  CHECK(wait_req(req, 10, &done, &size) == ncclRemoteError);
  CHECK(now_s() - t0 < 5);
  CHECK(warned("refused a liveness probe"));
  net_ofi_fi.tsend = net_ofi_fi_default.tsend;
  CHECK(net->deregMr(p.r, rmh) == ncclSuccess);
  pair_close(&p);
  return 0;
}

static int case_probe_ok_when_alive(void) {
  /* A live peer that is merely slow: probes go out and complete, nothing fails. */
  setenv("WEFT_OFI_PROBE_MS", "50", 1);
  setenv("WEFT_OFI_PEER_TIMEOUT_MS", "300", 1);
  pair p;
  CHECK(pair_open(&p) == ncclSuccess);
  void *smh = NULL, *rmh = NULL;
  CHECK(net->regMr(p.r, rbuf, LEN, NCCL_PTR_HOST, &rmh) == ncclSuccess);
  CHECK(net->regMr(p.s, sbuf, LEN, NCCL_PTR_HOST, &smh) == ncclSuccess);
  void* data[1] = {rbuf};
  size_t sizes[1] = {LEN};
  int tags[1] = {9};
  void* mhs[1] = {rmh};
  void *rreq = NULL, *sreq = NULL;
  CHECK(net->irecv(p.r, 1, data, sizes, tags, mhs, NULL, &rreq) == ncclSuccess);
  int done = 0, size = -1;
  CHECK(wait_req(rreq, 1.0, &done, &size) == ncclSuccess); /* ~20 probe intervals */
  CHECK(!done);
  CHECK(net->isend(p.s, sbuf, 1234, 9, smh, NULL, &sreq) == ncclSuccess);
  CHECK(wait_req(rreq, 10, &done, &size) == ncclSuccess);
  CHECK(done && size == 1234);
  CHECK(wait_req(sreq, 10, &done, &size) == ncclSuccess && done);
  CHECK(nwarn == 0);
  net->deregMr(p.s, smh);
  net->deregMr(p.r, rmh);
  pair_close(&p);
  return 0;
}

static int case_truncation(void) {
  /* A send larger than its receive: the receive fails (ncclInternalError, "message truncated"),
   * nothing is written past it, and the connection goes on working. */
  pair p;
  CHECK(pair_open(&p) == ncclSuccess);
  void *smh = NULL, *rmh = NULL;
  CHECK(net->regMr(p.s, sbuf, LEN, NCCL_PTR_HOST, &smh) == ncclSuccess);
  CHECK(net->regMr(p.r, rbuf, LEN, NCCL_PTR_HOST, &rmh) == ncclSuccess);
  memset(rbuf, 0xEE, LEN);
  for (int i = 0; i < LEN; i++) sbuf[i] = (char)(i * 7);
  void* data[1] = {rbuf};
  size_t sizes[1] = {1000};
  int tags[1] = {4};
  void* mhs[1] = {rmh};
  void *rreq = NULL, *sreq = NULL;
  CHECK(net->irecv(p.r, 1, data, sizes, tags, mhs, NULL, &rreq) == ncclSuccess && rreq);
  CHECK(net->isend(p.s, sbuf, 50000, 4, smh, NULL, &sreq) == ncclSuccess && sreq);
  int done = 0, size = -1;
  CHECK(wait_req(rreq, 10, &done, &size) == ncclInternalError);
  CHECK(warned("message truncated"));
  for (int i = 1000; i < 50000; i++) CHECK(rbuf[i] == (char)0xEE);
  ncclResult_t sres = wait_req(sreq, 10, &done, &size);
  CHECK(sres != ncclSuccess || done); /* the send ends one way or the other */
  /* The next message of the connection arrives intact. */
  sizes[0] = 3000;
  CHECK(net->irecv(p.r, 1, data, sizes, tags, mhs, NULL, &rreq) == ncclSuccess && rreq);
  CHECK(net->isend(p.s, sbuf, 3000, 4, smh, NULL, &sreq) == ncclSuccess && sreq);
  CHECK(wait_req(rreq, 10, &done, &size) == ncclSuccess && done && size == 3000);
  CHECK(memcmp(rbuf, sbuf, 3000) == 0);
  CHECK(wait_req(sreq, 10, &done, &size) == ncclSuccess && done);
  net->deregMr(p.s, smh);
  net->deregMr(p.r, rmh);
  pair_close(&p);
  return 0;
}

typedef struct {
  const char* name;
  int (*fn)(void);
} fault_case;

static const fault_case cases[] = {
    {"completion_error_on_receive_fails_test_with_system_error", case_receive_error},
    {"connection_reset_on_send_fails_test_with_remote_error", case_send_reset_is_remote},
    {"tsend_error_fails_the_send", case_tsend_error},
    {"getinfo_error_fails_init_then_init_recovers", case_getinfo_error},
    {"av_insert_error_fails_connect", case_av_insert_error},
    {"registration_error_fails_regmr_under_strict_mr_mode", case_regmr_error},
    {"probe_refused_for_peer_timeout_fails_test_with_remote_error", case_probe_refused},
    {"probes_to_a_live_idle_peer_fail_nothing", case_probe_ok_when_alive},
    {"send_larger_than_receive_fails_the_receive_only", case_truncation},
};

static int run_case(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)rank, (void)nranks, (void)id;
  const fault_case* c = arg;
  return c->fn();
}

/* Whether the provider the environment names can be opened here (in a child, so this process
 * keeps no plugin state): 0 yes, 77 no (the case list is skipped), 1 broken. */
static int provider_usable(void) {
  pid_t pid = fork();
  if (pid == 0) {
    void* ctx = NULL;
    if (net->init(&ctx, 1, NULL, logger, NULL) == ncclSuccess) _exit(0);
    fprintf(stderr, "%s", warns);
    _exit(warned("no libfabric provider") || warned("no usable domain") ? TEST_SKIP_RC : 1);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 1;
  return WEXITSTATUS(status);
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : NULL;
  int usable = provider_usable();
  if (usable != 0) {
    if (usable == TEST_SKIP_RC) printf("SKIP: the libfabric provider is not usable here\n");
    return usable;
  }
  int failed = 0, ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (only && strcmp(only, cases[i].name) != 0) continue;
    ran++;
    int rc = test_fork_plain(1, run_case, (void*)&cases[i], 60);
    printf("%s %s\n", rc == 0 ? "PASS" : "FAIL", cases[i].name);
    fflush(stdout);
    failed |= rc != 0;
  }
  if (ran == 0) {
    fprintf(stderr, "no case named %s\n", only);
    return 1;
  }
  return failed;
}
