/* Helpers of the net suite (see net_suite.h): opening the plugin through the shim, timed calls,
 * bounded waits, checkable random data, memory, single-process connections. */
#include <dirent.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "net_suite.h"

net_ctx* nt_ctx;

double nt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char* nt_result_str(ncclResult_t r) {
  static __thread char buf[48];
  static const char* names[] = {"ncclSuccess",         "ncclUnhandledCudaError",
                                "ncclSystemError",     "ncclInternalError",
                                "ncclInvalidArgument", "ncclInvalidUsage",
                                "ncclRemoteError",     "ncclInProgress"};
  if ((unsigned)r < sizeof names / sizeof names[0]) {
    snprintf(buf, sizeof buf, "%s (%d)", names[r], (int)r);
  } else {
    snprintf(buf, sizeof buf, "unknown result %d", (int)r);
  }
  return buf;
}

static int log_calls;

void nt_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
               const char* fmt, ...) {
  __atomic_add_fetch(&log_calls, 1, __ATOMIC_RELAXED);
  if (fmt == NULL) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* Kept for the report of a failure: warnings and information, not traces. */
  if (level == NCCL_LOG_WARN || level == NCCL_LOG_INFO) {
    char kept[600];
    snprintf(kept, sizeof kept, "%s %s", level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
    conf_log_line(kept);
  }
  if (!conf_verbose) return;
  fprintf(stderr, "  [%s] plugin log level %d flags 0x%lx %s:%d %s\n", conf_current_test,
          (int)level, flags, file ? file : "?", line, msg);
}

ncclResult_t nt_profiler(void** eHandle, int type, void* pHandle, int64_t pluginId,
                         void* extData) {
  (void)type, (void)pHandle, (void)pluginId, (void)extData;
  if (eHandle) *eHandle = NULL;
  return ncclSuccess;
}

conf_result nt_init_table(nt_plugin* p, int v) {
  memset(p, 0, sizeof *p);
  char why[256];
  /* Stock NCCL's order: the symbol, init, then the table (init may fill it in). */
  if (net_shim_bind(nt_ctx->raw[v], v, &p->view, why, sizeof why) != ncclSuccess)
    return conf_fail("ncclNetPlugin_v%d rejected: %s", v, why);
  p->api = &p->view.api;
  p->max_requests = v == 6 ? NCCL_NET_MAX_REQUESTS_V6 : NCCL_NET_MAX_REQUESTS;
  /* NCCL keeps the config alive for the communicator's life. */
  static ncclNetCommConfig_v12_t config = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  uint64_t comm_id = ((uint64_t)getpid() << 32) ^ (uint64_t)(nt_now() * 1e9);
  ncclResult_t r;
  NT_CALL_SETUP_RES("init", p->api->init(&p->nctx, comm_id, &config, nt_logger, nt_profiler), r);
  if (r != ncclSuccess) {
    net_shim_release(&p->view);
    p->api = NULL;
    return conf_fail("init returned %s", nt_result_str(r));
  }
  if (net_shim_complete(&p->view, why, sizeof why) != ncclSuccess) {
    if (p->view.api.finalize) p->view.api.finalize(p->nctx);
    net_shim_release(&p->view);
    p->api = NULL;
    return conf_fail("ncclNetPlugin_v%d: %s after init", v, why);
  }
  return CONF_PASS;
}

conf_result nt_open(nt_plugin* p) {
  CONF_TRY(nt_init_table(p, nt_ctx->version));
  NT_CALL_SETUP("devices", p->api->devices(&p->ndev));
  if (p->ndev < 1)
    return conf_fail("devices reported %d after a successful init (must be >= 1)", p->ndev);
  NT_CALL_SETUP("getProperties", p->api->getProperties(p->dev, &p->props));
  p->log_calls = log_calls;
  return CONF_PASS;
}

conf_result nt_close(nt_plugin* p) {
  if (p->api == NULL) return CONF_PASS;
  NT_CALL_SETUP("finalize", p->api->finalize(p->nctx));
  net_shim_release(&p->view);
  p->api = NULL;
  return CONF_PASS;
}

void nt_backoff_wait(nt_backoff* b) {
  unsigned n = b->polls++;
  if (n < 200) {
    sched_yield();
  } else {
    struct timespec ts = {0, (n < 2000 ? 20 : 200) * 1000L};
    nanosleep(&ts, NULL);
  }
}

double nt_wait_bound(size_t bytes) {
  /* The base bound, plus time for the bytes at a pessimistic 20 MB/s (CI, sanitizers). */
  return nt_ctx->wait_s + (double)bytes / 20e6;
}

extern conf_result nt_pair_peer_check(void);

conf_result nt_wait(nt_plugin* p, void* req, int* sizes, size_t bytes, const char* what) {
  double deadline = nt_now() + nt_wait_bound(bytes);
  nt_backoff b = {0};
  int done = 0;
  /* NCCL hands test() a sizes array for sends and receives alike. */
  int dummy[NCCL_NET_MAX_REQUESTS];
  if (sizes == NULL) sizes = dummy;
  for (unsigned i = 0;; i++) {
    NT_CALL("test", p->api->test(req, &done, sizes));
    if (done) return CONF_PASS;
    if ((i & 63) == 63) {
      CONF_TRY(nt_pair_peer_check());
      if (nt_now() > deadline)
        return conf_fail("%s: request not complete after %.0f s of test() polls", what,
                         nt_wait_bound(bytes));
    }
    nt_backoff_wait(&b);
  }
}

conf_result nt_listen(nt_plugin* p, void* handle, void** lcomm) {
  unsigned char buf[NCCL_NET_HANDLE_MAXSIZE + 64];
  memset(buf, 0xA5, sizeof buf);
  *lcomm = NULL;
  NT_CALL("listen", p->api->listen(p->nctx, p->dev, buf, lcomm));
  if (*lcomm == NULL) return conf_fail("listen returned success with a NULL listen comm");
  for (size_t i = NCCL_NET_HANDLE_MAXSIZE; i < sizeof buf; i++)
    if (buf[i] != 0xA5)
      return conf_fail("listen wrote beyond the %d-byte handle (byte %zu changed)",
                       NCCL_NET_HANDLE_MAXSIZE, i);
  memcpy(handle, buf, NCCL_NET_HANDLE_MAXSIZE);
  return CONF_PASS;
}

conf_result nt_connect_local(nt_plugin* p, void** scomm, void** rcomm, void** lcomm) {
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  CONF_TRY(nt_listen(p, handle, lcomm));
  *scomm = *rcomm = NULL;
  ncclNetDeviceHandle_v12_t* sdev = NULL;
  ncclNetDeviceHandle_v12_t* rdev = NULL;
  double deadline = nt_now() + nt_ctx->wait_s;
  nt_backoff b = {0};
  while (*scomm == NULL || *rcomm == NULL) {
    if (*scomm == NULL) NT_CALL("connect", p->api->connect(p->nctx, p->dev, handle, scomm, &sdev));
    if (*rcomm == NULL) NT_CALL("accept", p->api->accept(*lcomm, rcomm, &rdev));
    if (nt_now() > deadline)
      return conf_fail("connect/accept not complete after %.0f s (connect %s, accept %s)",
                       nt_ctx->wait_s, *scomm ? "done" : "pending", *rcomm ? "done" : "pending");
    if (*scomm == NULL || *rcomm == NULL) nt_backoff_wait(&b);
  }
  return CONF_PASS;
}

/* splitmix64 of (seed, block): 8 bytes of the stream at block index. */
static inline uint64_t stream_word(uint64_t seed, uint64_t block) {
  uint64_t z = seed + (block + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void nt_fill(void* buf, size_t len, uint64_t seed) {
  unsigned char* p = buf;
  size_t blocks = len / 8;
  for (size_t i = 0; i < blocks; i++) {
    uint64_t w = stream_word(seed, i);
    memcpy(p + i * 8, &w, 8);
  }
  if (len % 8) {
    uint64_t w = stream_word(seed, blocks);
    memcpy(p + blocks * 8, &w, len % 8);
  }
}

conf_result nt_check(const void* buf, size_t len, uint64_t seed, const char* what) {
  const unsigned char* p = buf;
  size_t blocks = (len + 7) / 8;
  size_t first = (size_t)-1, bad = 0;
  for (size_t i = 0; i < blocks; i++) {
    uint64_t w = stream_word(seed, i);
    size_t n = len - i * 8 < 8 ? len - i * 8 : 8;
    if (memcmp(p + i * 8, &w, n) == 0) continue;
    const unsigned char* e = (const unsigned char*)&w;
    for (size_t k = 0; k < n; k++) {
      if (p[i * 8 + k] != e[k]) {
        if (first == (size_t)-1) first = i * 8 + k;
        bad++;
      }
    }
  }
  if (bad)
    return conf_fail("%s: %zu of %zu bytes differ from what was sent, first at offset %zu", what,
                     bad, len, first);
  return CONF_PASS;
}

conf_result nt_alloc(size_t len, void** out) {
  size_t n = len ? len : 1;
  void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return conf_skip("cannot allocate %zu bytes", len);
  *out = p;
  return CONF_PASS;
}

void nt_free(void* buf, size_t len) {
  if (buf) munmap(buf, len ? len : 1);
}

size_t nt_mem_available(void) {
  FILE* f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (size_t)kb * 1024;
}

conf_result nt_reg(nt_plugin* p, void* comm, void* buf, size_t len, void** mh) {
  *mh = NULL;
  NT_CALL_SETUP("regMr", p->api->regMr(comm, buf, len, NCCL_PTR_HOST, mh));
  return CONF_PASS;
}

conf_result nt_dereg(nt_plugin* p, void* comm, void* mh) {
  NT_CALL_SETUP("deregMr", p->api->deregMr(comm, mh));
  return CONF_PASS;
}

conf_result nt_isend(nt_plugin* p, void* scomm, void* buf, size_t len, int tag, void* mh,
                     void** req) {
  double deadline = nt_now() + nt_ctx->wait_s;
  nt_backoff b = {0};
  *req = NULL;
  for (unsigned i = 0;; i++) {
    NT_CALL("isend", p->api->isend(scomm, buf, len, tag, mh, NULL, req));
    if (*req) return CONF_PASS;
    if ((i & 63) == 63) {
      CONF_TRY(nt_pair_peer_check());
      if (nt_now() > deadline)
        return conf_fail("isend of %zu bytes kept returning a NULL request for %.0f s", len,
                         nt_ctx->wait_s);
    }
    nt_backoff_wait(&b);
  }
}

conf_result nt_irecv(nt_plugin* p, void* rcomm, void* buf, size_t len, int tag, void* mh,
                     void** req) {
  double deadline = nt_now() + nt_ctx->wait_s;
  nt_backoff b = {0};
  void* data[1] = {buf};
  size_t sizes[1] = {len};
  int tags[1] = {tag};
  void* mhs[1] = {mh};
  void* ph[1] = {NULL};
  for (unsigned i = 0;; i++) {
    *req = NULL;
    NT_CALL("irecv", p->api->irecv(rcomm, 1, data, sizes, tags, mhs, ph, req));
    if (*req) return CONF_PASS;
    if ((i & 63) == 63) {
      CONF_TRY(nt_pair_peer_check());
      if (nt_now() > deadline)
        return conf_fail("irecv of %zu bytes kept returning a NULL request for %.0f s", len,
                         nt_ctx->wait_s);
    }
    nt_backoff_wait(&b);
  }
}

conf_result nt_send_msg(nt_plugin* p, void* scomm, void* buf, size_t len, int tag, void* mh) {
  void* req;
  CONF_TRY(nt_isend(p, scomm, buf, len, tag, mh, &req));
  int size = -1;
  return nt_wait(p, req, &size, len, "isend");
}

conf_result nt_recv_msg(nt_plugin* p, void* rcomm, void* buf, size_t len, int tag, void* mh,
                        int* got) {
  void* req;
  CONF_TRY(nt_irecv(p, rcomm, buf, len, tag, mh, &req));
  int size = -1;
  CONF_TRY(nt_wait(p, req, &size, len, "irecv"));
  if (got) *got = size;
  return CONF_PASS;
}

int nt_count_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the directory stream's own fd */
}
