/* The GIN/RMA group harness (kind_suite.h). Ranks 1..n-1 are forked from the test process (rank
 * 0), die with it (PR_SET_PDEATHSIG) and live in its process group, which the runner kills after
 * the test. Each reports its verdict and reason on a shared page; a rank that dies is a FAIL
 * naming its signal and its last plugin call. Out-of-band traffic goes through rank 0 over
 * socketpairs (MSG_NOSIGNAL: a dead rank never raises SIGPIPE). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kind_suite.h"
#include "net_suite.h"
#include "plugin/net_shim.h"
#include "stage.h"

kind_ctx* kc;

typedef struct {
  int result[KG_MAX_RANKS];
  int reported[KG_MAX_RANKS];
  int order[KG_MAX_RANKS]; /* when its verdict came, among the ranks that did not pass */
  int next_order;
  char reason[KG_MAX_RANKS][512];
} kg_shared;

#define OOB_TIMEOUT_MS 20000

static kg_shared* shared; /* this test's page (inherited by the ranks) */

const char* kind_result_name(ncclResult_t r) {
  static const char* names[] = {"ncclSuccess",        "ncclUnhandledCudaError",
                                "ncclSystemError",    "ncclInternalError",
                                "ncclInvalidArgument", "ncclInvalidUsage",
                                "ncclRemoteError",    "ncclInProgress"};
  if (r >= 0 && (size_t)r < sizeof names / sizeof names[0]) return names[r];
  return r == ncclTimeout ? "ncclTimeout" : "an unknown result";
}

#define KG_CALL(r_, call, expr)                                                               \
  do {                                                                                        \
    conf_stage_set(call);                                                                     \
    ncclResult_t res_ = (expr);                                                               \
    if (res_ != ncclSuccess)                                                                  \
      return conf_fail("rank %d: %s returned %s", (r_)->rank, call, kind_result_name(res_)); \
  } while (0)

void kg_leave(kg_rank* r) {
  shared->result[r->rank] = CONF_PASS;
  __atomic_store_n(&shared->reported[r->rank], 1, __ATOMIC_RELEASE);
  _exit(0);
}

static int send_full(int fd, const void* buf, size_t len) {
  const char* p = buf;
  while (len) {
    ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

static int recv_full(int fd, void* buf, size_t len) {
  char* p = buf;
  while (len) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int k = poll(&pf, 1, OOB_TIMEOUT_MS);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    ssize_t got = recv(fd, p, len, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    p += got;
    len -= (size_t)got;
  }
  return 0;
}

conf_result kg_allgather(kg_rank* r, const void* mine, void* all, size_t len) {
  char* out = all;
  memcpy(out + (size_t)r->rank * len, mine, len);
  if (r->rank == 0) {
    for (int p = 1; p < r->nranks; p++)
      if (recv_full(r->oob[p], out + (size_t)p * len, len) != 0)
        return conf_fail("rank %d never reached the exchange (it failed or left)", p);
    for (int p = 1; p < r->nranks; p++)
      if (send_full(r->oob[p], out, len * (size_t)r->nranks) != 0)
        return conf_fail("rank %d left during the exchange", p);
    return CONF_PASS;
  }
  if (send_full(r->oob[0], mine, len) != 0 ||
      recv_full(r->oob[0], out, len * (size_t)r->nranks) != 0)
    return conf_fail("rank %d: rank 0 left during the exchange", r->rank);
  return CONF_PASS;
}

conf_result kg_barrier(kg_rank* r) {
  char one = 1, all[KG_MAX_RANKS];
  return kg_allgather(r, &one, all, 1);
}

static const char* kind_label(void) {
  return kc->suite == KIND_SUITE_GIN ? "GIN" : kc->suite == KIND_SUITE_RMA ? "RMA" : "CollNet";
}

conf_result kind_co_net_init(void) {
  static int done;
  static weft_net_view view;
  static void* net_ctx;
  static ncclNetCommConfig_v12_t config = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  if (kc->net_raw == NULL || done) return CONF_PASS;
  char why[256];
  if (net_shim_bind(kc->net_raw, kc->net_version, &view, why, sizeof why) != ncclSuccess)
    return conf_inconclusive("the library's ncclNetPlugin_v%d, which NCCL loads before its "
                             "%s table, is rejected: %s", kc->net_version, kind_label(), why);
  conf_stage_set("net init");
  ncclResult_t r = view.api.init(&net_ctx, 0x5eedull, &config, nt_logger, NULL);
  if (r != ncclSuccess)
    return conf_inconclusive("the library's ncclNetPlugin_v%d init, which NCCL calls before "
                             "the %s table's, returned %s", kc->net_version, kind_label(),
                             kind_result_name(r));
  done = 1;
  return CONF_PASS;
}

conf_result kg_init(kg_rank* r) {
  CONF_TRY(kind_co_net_init());
  if (kc->is_gin) KG_CALL(r, "init", kc->gin.gin.init(&r->ictx, 0x5eedull, nt_logger));
  else KG_CALL(r, "init", kc->rma.init(&r->ictx, 0x5eedull, nt_logger));
  int ndev = 0;
  KG_CALL(r, "devices", kc->is_gin ? kc->gin.gin.devices(&ndev) : kc->rma.devices(&ndev));
  if (ndev <= 0) return conf_skip("the plugin reports %d devices on this host", ndev);
  return CONF_PASS;
}

conf_result kg_connect(kg_rank* r) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  char all[KG_MAX_RANKS][NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  memset(handle, 0, sizeof handle);
  KG_CALL(r, "listen", kc->is_gin ? kc->gin.gin.listen(r->ictx, 0, handle, &lc)
                                  : kc->rma.listen(r->ictx, 0, handle, &lc));
  CONF_TRY(kg_allgather(r, handle, all, sizeof handle));
  void* handles[KG_MAX_RANKS];
  for (int p = 0; p < r->nranks; p++) handles[p] = all[p];
  volatile uint32_t abort_flag = 0;
  KG_CALL(r, "connect",
          kc->is_gin ? kc->gin.gin.connect(r->ictx, handles, r->nranks, r->rank, lc, &r->coll,
                                           &abort_flag)
                     : kc->rma.connect(r->ictx, handles, r->nranks, r->rank, lc, &r->coll));
  KG_CALL(r, "closeListen", kc->is_gin ? kc->gin.gin.closeListen(lc) : kc->rma.closeListen(lc));
  return CONF_PASS;
}

conf_result kg_context(kg_rank* r, int ncontexts) {
  r->ncontexts = ncontexts;
  if (kc->is_gin) {
    ncclGinConfig_v15_t c = {.nSignals = 64, .nCounters = 64, .nContexts = ncontexts,
                             .queueDepth = 0, .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
    KG_CALL(r, "createContext", kc->gin.gin.createContext(r->coll, &c, &r->ctx, &r->dev_handle));
  } else {
    ncclRmaConfig_v15_t c = {.nContexts = ncontexts, .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF,
                             .rankStride = 1};
    KG_CALL(r, "createContext", kc->rma.createContext(r->coll, &c, &r->ctx));
  }
  return CONF_PASS;
}

conf_result kg_close(kg_rank* r) {
  if (r->ctx) {
    void* x = r->ctx;
    r->ctx = NULL;
    KG_CALL(r, "destroyContext", kc->is_gin ? kc->gin.gin.destroyContext(x) : kc->rma.destroyContext(x));
  }
  if (r->coll) {
    void* x = r->coll;
    r->coll = NULL;
    KG_CALL(r, "closeColl", kc->is_gin ? kc->gin.gin.closeColl(x) : kc->rma.closeColl(x));
  }
  if (r->ictx) {
    void* x = r->ictx;
    r->ictx = NULL;
    KG_CALL(r, "finalize", kc->is_gin ? kc->gin.gin.finalize(x) : kc->rma.finalize(x));
  }
  return CONF_PASS;
}

conf_result kg_reg(kg_rank* r, void* buf, size_t len, uint64_t flags, void** mh) {
  void* gh = NULL;
  KG_CALL(r, "regMrSym", kc->is_gin ? kc->gin.gin.regMrSym(r->coll, buf, len, NCCL_PTR_HOST,
                                                           flags, mh, &gh)
                                    : kc->rma.regMrSym(r->coll, buf, len, NCCL_PTR_HOST, flags, mh));
  return CONF_PASS;
}

conf_result kg_buffer(kg_rank* r, size_t len, uint64_t flags, void** buf, void** mh) {
  CONF_TRY(nt_alloc(len, buf));
  return kg_reg(r, *buf, len, flags, mh);
}

conf_result kg_dereg(kg_rank* r, void* mh) {
  KG_CALL(r, "deregMrSym", kc->is_gin ? kc->gin.gin.deregMrSym(r->coll, mh)
                                      : kc->rma.deregMrSym(r->coll, mh));
  return CONF_PASS;
}

conf_result kg_wait(kg_rank* r, void* req, const char* what) {
  double t0 = nt_now();
  for (;;) {
    int done = 0;
    conf_stage_set("test");
    ncclResult_t res = kc->data->test(r->coll, req, &done);
    if (res != ncclSuccess)
      return conf_fail("rank %d: test of the request %s posted returned %s", r->rank, what,
                       kind_result_name(res));
    if (done) return CONF_PASS;
    if (kc->data->rmaProgress) (void)kc->data->rmaProgress(r->ctx);
    if (nt_now() - t0 > kc->wait_s)
      return conf_fail("rank %d: the request %s posted did not complete in %.0f s", r->rank, what,
                       kc->wait_s);
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

/* One rank's whole life in a group. */
static conf_result rank_main(kg_rank* r, int ncontexts, kg_body body, void* arg) {
  if (ncontexts > 0) {
    CONF_TRY(kg_init(r));
    CONF_TRY(kg_connect(r));
    CONF_TRY(kg_context(r, ncontexts));
  }
  CONF_TRY(body(r, arg));
  return kg_close(r);
}

conf_result kg_run(int nranks, int ncontexts, kg_body body, void* arg) {
  kg_shared* sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return conf_inconclusive("cannot map a shared page");
  shared = sh;
  uint64_t seed = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
  pid_t pids[KG_MAX_RANKS] = {0};
  int socks[KG_MAX_RANKS][2];
  for (int p = 1; p < nranks; p++)
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, socks[p]) != 0)
      return conf_inconclusive("socketpair failed: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  for (int p = 1; p < nranks; p++) {
    pid_t pid = fork();
    if (pid < 0) return conf_inconclusive("fork failed: %s", strerror(errno));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (conf_result_fd >= 0) close(conf_result_fd);
      conf_stage_become_peer();
      kg_rank r = {.rank = p, .nranks = nranks, .seed = seed};
      for (int q = 1; q < nranks; q++) {
        close(socks[q][0]);
        if (q != p) close(socks[q][1]);
      }
      r.oob[0] = socks[p][1];
      conf_clear_reason();
      conf_result res = rank_main(&r, ncontexts, body, arg);
      if (res != CONF_PASS) sh->order[p] = __atomic_add_fetch(&sh->next_order, 1, __ATOMIC_ACQ_REL);
      sh->result[p] = res;
      snprintf(sh->reason[p], sizeof sh->reason[p], "%s", conf_reason());
      __atomic_store_n(&sh->reported[p], 1, __ATOMIC_RELEASE);
      close(r.oob[0]);
      _exit(0);
    }
    pids[p] = pid;
    close(socks[p][1]);
  }
  kg_rank r0 = {.rank = 0, .nranks = nranks, .seed = seed};
  for (int p = 1; p < nranks; p++) r0.oob[p] = socks[p][0];
  conf_result res = rank_main(&r0, ncontexts, body, arg);
  if (res != CONF_PASS) sh->order[0] = __atomic_add_fetch(&sh->next_order, 1, __ATOMIC_ACQ_REL);
  char mine[1024];
  snprintf(mine, sizeof mine, "%s", conf_reason());
  for (int p = 1; p < nranks; p++) close(r0.oob[p]);
  /* The others' verdicts: each rank gets the test's time to finish. */
  conf_result merged = res;
  int first = res != CONF_PASS ? sh->order[0] : 0;
  char why[1536] = "";
  if (res != CONF_PASS) snprintf(why, sizeof why, "%s", mine);
  for (int p = 1; p < nranks; p++) {
    int status = 0;
    pid_t w;
    while ((w = waitpid(pids[p], &status, 0)) < 0 && errno == EINTR) {
    }
    conf_result pr;
    char pwhy[700];
    if (w == pids[p] && WIFSIGNALED(status)) {
      char sig[96], stage[160];
      conf_stage_describe_peer(stage, sizeof stage);
      pr = CONF_FAIL;
      snprintf(pwhy, sizeof pwhy, "rank %d killed by %s%s", p,
               conf_signal_name(WTERMSIG(status), sig, sizeof sig), stage);
    } else if (!__atomic_load_n(&sh->reported[p], __ATOMIC_ACQUIRE)) {
      pr = CONF_FAIL;
      snprintf(pwhy, sizeof pwhy, "rank %d exited without a verdict", p);
    } else {
      pr = (conf_result)sh->result[p];
      snprintf(pwhy, sizeof pwhy, "%s", sh->reason[p]);
    }
    /* FAIL beats INCONCLUSIVE beats SKIP beats PASS; among equals, the rank whose verdict
     * came first (a peer's failure often makes the others fail after it). */
    int rank_of[] = {[CONF_PASS] = 0, [CONF_SKIP] = 1, [CONF_INCONCLUSIVE] = 2, [CONF_FAIL] = 3};
    int when = sh->order[p] ? sh->order[p] : 1 << 30; /* killed: no order, after the others */
    if (rank_of[pr] > rank_of[merged] ||
        (pr != CONF_PASS && rank_of[pr] == rank_of[merged] && when < first)) {
      merged = pr;
      first = when;
      snprintf(why, sizeof why, "%s", pwhy);
    }
  }
  munmap(sh, sizeof *sh);
  if (merged == CONF_PASS) return CONF_PASS;
  char text[1700];
  snprintf(text, sizeof text, "%s (seed 0x%llx)", why, (unsigned long long)seed);
  conf_set_reason(text);
  return merged;
}
