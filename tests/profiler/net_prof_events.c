/* A weft net plugin's NetPlugin events, driven through its exported table in one process with
 * a counting profFn in the core's place (a token per side as phandle): every event started is
 * stopped exactly once — after a normal transfer, when comms close with requests in flight, and
 * (socket, ib) when the peer goes away mid-transfer — the lengths of a side's events add up to
 * the bytes it moved, and a NULL phandle or a NULL profFn costs no call.
 *   net_prof_events PLUGIN.so sock|ib|ofi [v10]
 * v10: init, listen and connect through ncclNetPlugin_v10 (its init's profFn must reach the
 * comms too). */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "nccl_net.h"
#include "nccl_profiler.h"
#include "prof_net_check.h"
#include "testutil.h"

#define MIB (1024u * 1024u)
#define BIG (64u * MIB) /* more than loopback socket buffers hold: stays in flight */
#define MAX_RECS 8192

/* ---- the counting profFn ---- */
typedef struct {
  void* phandle;
  int64_t id;
  int stopped, updates;
  unsigned char descr[64];
  char provider[32];
} rec;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static rec recs[MAX_RECS];
static int nrecs, calls, bad;
static int token_send, token_recv; /* the phandles: which side an event belongs to */

static void keep_descr(rec* r, const void* data) {
  int64_t type = r->id & (int64_t)NCCL_PROFILER_NET_TYPE_MASK;
  size_t n = type == NCCL_PROFILER_NET_TYPE_SOCK  ? sizeof(ncclProfilerNetSockDescr_v1_t)
             : type == NCCL_PROFILER_NET_TYPE_IB  ? sizeof(ncclProfilerNetIbDescr_v1_t)
             : type == WEFT_PROFILER_NET_TYPE_OFI ? sizeof(weftProfilerNetOfiDescr_v1_t)
                                                  : 0;
  if (data == NULL || n == 0) return;
  memcpy(r->descr, data, n);
  if (type == WEFT_PROFILER_NET_TYPE_OFI) {
    const char* p = ((const weftProfilerNetOfiDescr_v1_t*)data)->op.provider;
    snprintf(r->provider, sizeof r->provider, "%s", p ? p : "");
  }
}

static ncclResult_t count_fn(void** eh, int type, void* ph, int64_t id, void* data) {
  pthread_mutex_lock(&mu);
  calls++;
  if (type == ncclProfilerNetEventStart) {
    if (ph == NULL || nrecs == MAX_RECS) {
      bad++;
      *eh = NULL;
    } else {
      rec* r = &recs[nrecs++];
      memset(r, 0, sizeof *r);
      r->phandle = ph;
      r->id = id;
      keep_descr(r, data);
      *eh = r;
    }
  } else {
    rec* r = eh ? *eh : NULL;
    if (r == NULL || r < recs || r >= recs + nrecs) {
      bad++; /* a stop or update of no event */
    } else {
      if (type == ncclProfilerNetEventUpdate || type == ncclProfilerNetEventUpdateAndStop) {
        r->updates++;
        keep_descr(r, data);
      }
      if (type == ncclProfilerNetEventStop || type == ncclProfilerNetEventUpdateAndStop)
        if (++r->stopped > 1) bad++;
    }
  }
  pthread_mutex_unlock(&mu);
  return ncclSuccess;
}

typedef struct {
  int started, open, calls;
  uint64_t bytes[2]; /* [is_send]: final lengths of stopped events */
} tally;

static tally count(int64_t want_id) {
  tally t = {0};
  pthread_mutex_lock(&mu);
  EXPECT_EQ_INT(bad, 0);
  t.calls = calls;
  for (int i = 0; i < nrecs; i++) {
    const rec* r = &recs[i];
    EXPECT_EQ_INT(r->id, want_id);
    int is_send = -1;
    size_t len = prof_net_descr(r->id, r->descr, r->provider, &is_send);
    EXPECT_EQ_INT(is_send, r->phandle == &token_send); /* the side the phandle named */
    t.started++;
    if (r->stopped)
      t.bytes[is_send] += len;
    else
      t.open++;
  }
  pthread_mutex_unlock(&mu);
  return t;
}

static void reset(void) {
  pthread_mutex_lock(&mu);
  nrecs = calls = 0;
  pthread_mutex_unlock(&mu);
}

/* ---- the plugin ---- */
static const ncclNet_v11_t* net;
static const ncclNet_v10_t* net10; /* v10 mode */
static void* ctx;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags;
  if (level > NCCL_LOG_WARN) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "WARN %s:%d %s\n", file, line, msg);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
  void *lc, *sc, *rc;
  void *smh, *rmh;
} pair;

static void connect_pair(pair* p, char* sbuf, char* rbuf, size_t len) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
  memset(p, 0, sizeof *p);
  if (net10)
    EXPECT_OK(net10->listen(0, handle, &p->lc));
  else
    EXPECT_OK(net->listen(ctx, 0, handle, &p->lc));
  double end = now_s() + 20;
  while (p->sc == NULL || p->rc == NULL) {
    EXPECT(now_s() < end);
    if (p->sc == NULL) {
      if (net10)
        EXPECT_OK(net10->connect(0, NULL, handle, &p->sc, NULL));
      else
        EXPECT_OK(net->connect(ctx, 0, handle, &p->sc, NULL));
    }
    if (p->rc == NULL) EXPECT_OK(net->accept(p->lc, &p->rc, NULL));
    sched_yield();
  }
  EXPECT_OK(net->regMr(p->sc, sbuf, len, NCCL_PTR_HOST, &p->smh));
  EXPECT_OK(net->regMr(p->rc, rbuf, len, NCCL_PTR_HOST, &p->rmh));
}

static void close_pair(pair* p) {
  if (p->sc) {
    EXPECT_OK(net->deregMr(p->sc, p->smh));
    EXPECT_OK(net->closeSend(p->sc));
  }
  if (p->rc) {
    EXPECT_OK(net->deregMr(p->rc, p->rmh));
    EXPECT_OK(net->closeRecv(p->rc));
  }
  EXPECT_OK(net->closeListen(p->lc));
}

/* Post until the plugin takes it (it may say "full" with a NULL request). */
static void* post_send(pair* p, void* buf, size_t n, void* ph) {
  void* req = NULL;
  double end = now_s() + 20;
  while (req == NULL) {
    EXPECT(now_s() < end);
    EXPECT_OK(net->isend(p->sc, buf, n, 7, p->smh, ph, &req));
  }
  return req;
}

static void* post_recv(pair* p, void* buf, size_t n, void* ph) {
  void* req = NULL;
  int tag = 7;
  double end = now_s() + 20;
  while (req == NULL) {
    EXPECT(now_s() < end);
    EXPECT_OK(net->irecv(p->rc, 1, &buf, &n, &tag, &p->rmh, &ph, &req));
  }
  return req;
}

/* Test both until done, with their sizes. */
static void wait_both(void* sreq, void* rreq, int* ssize, int* rsize) {
  int sdone = 0, rdone = 0;
  double end = now_s() + 30;
  while (!sdone || !rdone) {
    EXPECT(now_s() < end);
    if (!sdone) EXPECT_OK(net->test(sreq, &sdone, ssize));
    if (!rdone) EXPECT_OK(net->test(rreq, &rdone, rsize));
    if (!sdone || !rdone) sched_yield();
  }
}

/* Wait until some event of side token (NULL: either) has started (socket tasks start in their
 * helper threads). */
static int wait_started(void* token, double seconds) {
  double end = now_s() + seconds;
  for (;;) {
    pthread_mutex_lock(&mu);
    int n = 0;
    for (int i = 0; i < nrecs; i++) n += token == NULL || recs[i].phandle == token;
    pthread_mutex_unlock(&mu);
    if (n > 0) return n;
    if (now_s() > end) return 0;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

static void fill(char* b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) b[i] = (char)(seed + i * 131u);
}

/* 1 MiB + 1 and 0 bytes: every event stopped once, each side's lengths are the bytes moved. */
static void case_transfers(int64_t id, char* sbuf, char* rbuf) {
  pair p;
  connect_pair(&p, sbuf, rbuf, BIG);
  const size_t sizes[] = {MIB + 1, 0, 3000};
  uint64_t moved = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    fill(sbuf, sizes[k], (unsigned)k);
    void* rr = post_recv(&p, rbuf, MIB * 2, &token_recv);
    void* sr = post_send(&p, sbuf, sizes[k], &token_send);
    int ss = -1, rs = -1;
    wait_both(sr, rr, &ss, &rs);
    EXPECT_EQ_INT(ss, sizes[k]);
    EXPECT_EQ_INT(rs, sizes[k]);
    EXPECT(memcmp(sbuf, rbuf, sizes[k]) == 0);
    moved += sizes[k];
  }
  tally t = count(id);
  EXPECT(t.started >= 6); /* at least one per side and message */
  EXPECT_EQ_INT(t.open, 0);
  EXPECT_EQ_INT(t.bytes[1], moved);
  EXPECT_EQ_INT(t.bytes[0], moved);
  close_pair(&p);
  printf("transfers: %d events, %llu bytes each way: OK\n", t.started, (unsigned long long)moved);
}

/* A NULL phandle: no call. */
static void case_null_phandle(char* sbuf, char* rbuf) {
  pair p;
  connect_pair(&p, sbuf, rbuf, BIG);
  void* rr = post_recv(&p, rbuf, MIB, NULL);
  void* sr = post_send(&p, sbuf, MIB, NULL);
  int ss, rs;
  wait_both(sr, rr, &ss, &rs);
  close_pair(&p);
  pthread_mutex_lock(&mu);
  EXPECT_EQ_INT(calls, 0);
  pthread_mutex_unlock(&mu);
  printf("NULL phandle: no call: OK\n");
}

/* Requests in flight when the comms close: a send the peer never receives (it stays in flight:
 * the receiver reads nothing), a receive nobody sends to. */
static void case_close_in_flight(int64_t id, char* sbuf, char* rbuf) {
  pair a, b;
  connect_pair(&a, sbuf, rbuf, BIG);
  connect_pair(&b, sbuf, rbuf, BIG);
  (void)post_send(&a, sbuf, BIG, &token_send);
  (void)post_recv(&b, rbuf, MIB, &token_recv);
  EXPECT(wait_started(NULL, 5) >= 1);
  tally before = count(id);
  close_pair(&a);
  close_pair(&b);
  tally t = count(id);
  EXPECT_EQ_INT(t.open, 0);
  printf("close in flight: %d events, %d open before the closes: OK\n", t.started, before.open);
}

/* The peer goes away mid-transfer: the failing side's test reports the error with none of its
 * events left open (socket: the receiver closes under a send; ib: the sender closes under a
 * receive). */
static void case_peer_gone(const char* kind, int64_t id, char* sbuf, char* rbuf) {
  pair p;
  connect_pair(&p, sbuf, rbuf, BIG);
  int sock = strcmp(kind, "sock") == 0;
  void* req = sock ? post_send(&p, sbuf, BIG, &token_send) : post_recv(&p, rbuf, MIB, &token_recv);
  EXPECT(wait_started(sock ? (void*)&token_send : (void*)&token_recv, 5) >= 1);
  if (sock) {
    EXPECT_OK(net->deregMr(p.rc, p.rmh));
    EXPECT_OK(net->closeRecv(p.rc));
    p.rc = NULL;
  } else {
    EXPECT_OK(net->deregMr(p.sc, p.smh));
    EXPECT_OK(net->closeSend(p.sc));
    p.sc = NULL;
  }
  ncclResult_t res = ncclSuccess;
  int done = 0;
  double end = now_s() + 20;
  while (res == ncclSuccess && !done) {
    EXPECT(now_s() < end);
    res = net->test(req, &done, NULL);
    sched_yield();
  }
  EXPECT(res != ncclSuccess);
  tally t = count(id);
  EXPECT_EQ_INT(t.open, 0);
  close_pair(&p);
  EXPECT_EQ_INT(count(id).open, 0);
  printf("peer gone: %s, %d events, none open after the failing test: OK\n",
         ncclGetErrorString(res), t.started);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PLUGIN.so sock|ib|ofi [v10]\n", argv[0]);
    return 2;
  }
  test_require_weft_lib();
  const char* kind = argv[2];
  int v10 = argc > 3 && strcmp(argv[3], "v10") == 0;
  int64_t id = prof_net_want_id(kind);
  void* dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  net = dlsym(dl, "ncclNetPlugin_v11");
  EXPECT(net != NULL);
  if (v10) {
    net10 = dlsym(dl, "ncclNetPlugin_v10");
    EXPECT(net10 != NULL);
    EXPECT_OK(net10->init(logger, count_fn));
  } else {
    ncclNetCommConfig_v11_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    EXPECT_OK(net->init(&ctx, 1, &cfg, logger, count_fn));
  }
  int ndev = 0;
  EXPECT_OK(net->devices(&ndev));
  if (ndev < 1) {
    printf("no device: skipped\n");
    return TEST_SKIP_RC;
  }
  char* sbuf = malloc(BIG);
  char* rbuf = malloc(BIG);
  EXPECT(sbuf && rbuf);
  memset(sbuf, 1, BIG);
  case_transfers(id, sbuf, rbuf);
  reset();
  case_null_phandle(sbuf, rbuf);
  reset();
  case_close_in_flight(id, sbuf, rbuf);
  reset();
  if (strcmp(kind, "ofi") != 0 && !v10) /* libfabric learns of a same-host peer's close late */
    case_peer_gone(kind, id, sbuf, rbuf);
  if (!v10) {
    /* A context without profFn (what v6..v9 inits make): a phandle alone calls nothing. */
    EXPECT_OK(net->finalize(ctx));
    ncclNetCommConfig_v11_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    EXPECT_OK(net->init(&ctx, 2, &cfg, logger, NULL));
    reset();
    pair p;
    connect_pair(&p, sbuf, rbuf, BIG);
    void* rr = post_recv(&p, rbuf, MIB, &token_recv);
    void* sr = post_send(&p, sbuf, MIB, &token_send);
    int ss, rs;
    wait_both(sr, rr, &ss, &rs);
    close_pair(&p);
    EXPECT_OK(net->finalize(ctx));
    EXPECT_EQ_INT(count(id).calls, 0);
    printf("no profFn: no call: OK\n");
  }
  free(sbuf);
  free(rbuf);
  printf("NET-PROF-EVENTS-OK %s%s\n", kind, v10 ? " v10" : "");
  return 0;
}
