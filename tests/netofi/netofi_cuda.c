/* CUDA buffers through the libfabric plugin (FI_HMEM). dlopens libnccl-net-weft-ofi.so (argv[1]) and
 * drives its v11 table over a loopback connection in one process: device→device, host→device and
 * device→host messages of several sizes, buffers registered as NCCL_PTR_CUDA, each receive
 * flushed and checked byte for byte after copying back. CUDA through the driver API, dlopen'd.
 * Skips (77) without a CUDA device or when the provider offers no FI_HMEM (the plugin then does
 * not advertise NCCL_PTR_CUDA). Provider from WEFT_OFI_PROVIDER. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_net.h"

#define SKIP 77

typedef int (*cu_init_t)(unsigned);
typedef int (*cu_count_t)(int*);
typedef int (*cu_dev_get_t)(int*, int);
typedef int (*cu_ctx_retain_t)(void**, int);
typedef int (*cu_ctx_set_t)(void*);
typedef int (*cu_alloc_t)(unsigned long long*, size_t);
typedef int (*cu_free_t)(unsigned long long);
typedef int (*cu_htod_t)(unsigned long long, const void*, size_t);
typedef int (*cu_dtoh_t)(void*, unsigned long long, size_t);

static struct {
  cu_alloc_t alloc;
  cu_free_t free;
  cu_htod_t htod;
  cu_dtoh_t dtoh;
} cu;

static int cuda_setup(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  cu_init_t init = (cu_init_t)dlsym(h, "cuInit");
  cu_count_t count = (cu_count_t)dlsym(h, "cuDeviceGetCount");
  cu_dev_get_t get = (cu_dev_get_t)dlsym(h, "cuDeviceGet");
  cu_ctx_retain_t retain = (cu_ctx_retain_t)dlsym(h, "cuDevicePrimaryCtxRetain");
  cu_ctx_set_t set = (cu_ctx_set_t)dlsym(h, "cuCtxSetCurrent");
  cu.alloc = (cu_alloc_t)dlsym(h, "cuMemAlloc_v2");
  cu.free = (cu_free_t)dlsym(h, "cuMemFree_v2");
  cu.htod = (cu_htod_t)dlsym(h, "cuMemcpyHtoD_v2");
  cu.dtoh = (cu_dtoh_t)dlsym(h, "cuMemcpyDtoH_v2");
  int n = 0, dev = 0;
  void* ctx = NULL;
  if (!init || !count || !get || !retain || !set || !cu.alloc || !cu.free || !cu.htod || !cu.dtoh)
    return 0;
  if (init(0) || count(&n) || n < 1 || get(&dev, 0) || retain(&ctx, dev) || set(ctx)) return 0;
  return 1;
}

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level > NCCL_LOG_WARN && !getenv("NETOFI_TEST_VERBOSE")) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  [plugin] ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

#define CHECK(call)                                                                      \
  do {                                                                                   \
    ncclResult_t r_ = (call);                                                            \
    if (r_ != ncclSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, (int)r_);   \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const ncclNet_v11_t* net;

static void wait_req(void* req, int* size, const char* what) {
  double deadline = now() + 20;
  int done = 0;
  while (!done) {
    CHECK(net->test(req, &done, size));
    if (!done && now() > deadline) {
      fprintf(stderr, "%s not complete after 20 s\n", what);
      exit(1);
    }
  }
}

/* One message: src (device or host) → dst (device or host), checked. */
static void one(void* s, void* r, size_t len, int src_dev, int dst_dev, uint8_t seed) {
  uint8_t* host = malloc(len);
  uint8_t* back = malloc(len);
  unsigned long long sd = 0, rd = 0;
  void *sbuf, *rbuf, *smh, *rmh, *sreq, *rreq;
  for (size_t i = 0; i < len; i++) host[i] = (uint8_t)(seed + i * 131 + (i >> 9));
  if (src_dev) {
    if (cu.alloc(&sd, len) || cu.htod(sd, host, len)) exit(1);
    sbuf = (void*)(uintptr_t)sd;
  } else {
    sbuf = host;
  }
  memset(back, 0xEE, len);
  if (dst_dev) {
    if (cu.alloc(&rd, len) || cu.htod(rd, back, len)) exit(1);
    rbuf = (void*)(uintptr_t)rd;
  } else {
    rbuf = back;
  }
  CHECK(net->regMr(s, sbuf, len, src_dev ? NCCL_PTR_CUDA : NCCL_PTR_HOST, &smh));
  CHECK(net->regMr(r, rbuf, len, dst_dev ? NCCL_PTR_CUDA : NCCL_PTR_HOST, &rmh));
  size_t sizes[1] = {len};
  int tags[1] = {5};
  void* mhs[1] = {rmh};
  void* data[1] = {rbuf};
  do CHECK(net->irecv(r, 1, data, sizes, tags, mhs, NULL, &rreq)); while (!rreq);
  do CHECK(net->isend(s, sbuf, len, 5, smh, NULL, &sreq)); while (!sreq);
  int got = -1, sent = -1;
  wait_req(rreq, &got, "receive");
  wait_req(sreq, &sent, "send");
  if (got != (int)len) {
    fprintf(stderr, "%zu bytes sent, test reported %d\n", len, got);
    exit(1);
  }
  if (dst_dev) {
    int fsize[1] = {(int)len};
    void* freq = NULL;
    CHECK(net->iflush(r, 1, data, fsize, mhs, &freq));
    if (freq) wait_req(freq, NULL, "iflush");
    if (cu.dtoh(back, rd, len)) exit(1);
  }
  for (size_t i = 0; i < len; i++) {
    if (back[i] != (uint8_t)(seed + i * 131 + (i >> 9))) {
      fprintf(stderr, "%s→%s, %zu bytes: byte %zu is 0x%02x\n", src_dev ? "device" : "host",
              dst_dev ? "device" : "host", len, i, back[i]);
      exit(1);
    }
  }
  CHECK(net->deregMr(s, smh));
  CHECK(net->deregMr(r, rmh));
  if (sd) cu.free(sd);
  if (rd) cu.free(rd);
  free(host);
  free(back);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s libnccl-net-weft-ofi.so\n", argv[0]);
    return 1;
  }
  if (!cuda_setup()) {
    printf("SKIP: no CUDA device\n");
    return SKIP;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h || !(net = dlsym(h, "ncclNetPlugin_v11"))) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  void* ctx = NULL;
  CHECK(net->init(&ctx, 1, NULL, logger, NULL));
  ncclNetProperties_v11_t p;
  CHECK(net->getProperties(0, &p));
  if (!(p.ptrSupport & NCCL_PTR_CUDA)) {
    printf("SKIP: the plugin does not advertise NCCL_PTR_CUDA on %s (the provider offers no "
           "FI_HMEM, or registering CUDA memory failed: see the WARN above)\n", p.name);
    return SKIP;
  }
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *l = NULL, *s = NULL, *r = NULL;
  CHECK(net->listen(ctx, 0, handle, &l));
  double deadline = now() + 20;
  while (!s || !r) {
    if (!s) CHECK(net->connect(ctx, 0, handle, &s, NULL));
    if (!r) CHECK(net->accept(l, &r, NULL));
    if (now() > deadline) {
      fprintf(stderr, "connect/accept not done after 20 s\n");
      return 1;
    }
  }
  static const size_t lens[] = {1, 4096, 65537, (4u << 20) + 3};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    one(s, r, lens[k], 1, 1, (uint8_t)k);
    one(s, r, lens[k], 0, 1, (uint8_t)(k + 50));
    one(s, r, lens[k], 1, 0, (uint8_t)(k + 100));
  }
  CHECK(net->closeSend(s));
  CHECK(net->closeRecv(r));
  CHECK(net->closeListen(l));
  CHECK(net->finalize(ctx));
  printf("PASS: CUDA buffers over %s (device, host to device, device to host; 4 sizes)\n",
         p.name);
  return 0;
}
