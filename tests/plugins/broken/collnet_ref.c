/* A CollNet plugin for testing weft-conformance collnet (ncclCollNetPlugin_v12, host memory,
 * loopback TCP): the group is a star around rank 0, which reduces. Claims sum, prod, max and
 * min on the 8 integer and float types it can reduce on the CPU (int8..uint64, float32,
 * float64); not half, bfloat16, fp8 or avg. iallreduce, iallgather and ireducescatter (of a
 * window of the ranks' concatenated blocks, through scatter-gather lists) complete before they
 * return. Built correct (libnccl-net-collnet-ref.so)
 * and, with BROKEN_MAX, with max computed as min for float32 (libnccl-net-broken-collnetmax.so),
 * with BROKEN_GATHER, an allgather into several parts whose last byte is wrong
 * (libnccl-net-collnet-broken-collnetgather.so). Linked with refnet (a net table beside it, as
 * NCCL looks CollNet up only in a net plugin's library) it is the CollNet weft's data path
 * uses in tests (libnccl-net-collnet-refnet.so; with REF_NODEV, devices() reports 0:
 * libnccl-net-collnet-nodev.so; with BROKEN_IALLREDUCE, every iallreduce fails:
 * libnccl-net-collnet-failing.so). collnet_ref_iallreduce_calls counts iallreduce calls, so a test
 * can tell that a reduction went through the plugin. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_collnet.h"

#define EXPORT __attribute__((visibility("default")))
#define REF_MAGIC 0x636f6c6c72656621ull /* "collref!" */

typedef struct {
  uint64_t magic;
  uint16_t port;
} ref_handle;

typedef struct {
  int fd;
} ref_listen;

typedef struct {
  int nranks, rank;
  int fds[64]; /* rank 0: one per peer; others: [0] to rank 0 */
  int listen_fd;
} ref_coll;

typedef struct {
  int size;
} ref_req;

static int ctx_token;
EXPORT unsigned long collnet_ref_iallreduce_calls;

static int send_all(int fd, const void* b, size_t n) {
  const char* p = b;
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int recv_all(int fd, void* b, size_t n) {
  char* p = b;
  while (n) {
    ssize_t k = recv(fd, p, n, 0);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static ncclResult_t r_init(void** ctx, uint64_t id, ncclDebugLogger_t log) {
  (void)id, (void)log;
  *ctx = &ctx_token;
  return ncclSuccess;
}
static ncclResult_t r_finalize(void* ctx) { return ctx == &ctx_token ? ncclSuccess : ncclInvalidArgument; }
static ncclResult_t r_devices(int* n) {
#ifdef REF_NODEV
  *n = 0;
  return ncclSuccess;
#endif
  *n = 1;
  return ncclSuccess;
}
static ncclResult_t r_props(int d, ncclNetProperties_v12_t* p) {
  if (d != 0 || p == NULL) return ncclInvalidArgument;
  memset(p, 0, sizeof *p);
  p->name = (char*)"lo";
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 10000;
  p->maxComms = 1024;
  p->maxRecvs = 1;
  p->vProps.ndevs = 1;
  p->maxP2pBytes = p->maxCollBytes = 1ull << 30;
  p->railId = p->planeId = NCCL_NET_ID_UNDEF;
  return ncclSuccess;
}

static ncclResult_t r_listen(void* ctx, int dev, void* handle, void** lc) {
  (void)ctx;
  if (dev != 0) return ncclInvalidArgument;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (struct sockaddr*)&a, &len) != 0)
    return ncclSystemError;
  ref_handle h = {REF_MAGIC, ntohs(a.sin_port)};
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof h);
  ref_listen* l = malloc(sizeof *l);
  l->fd = fd;
  *lc = l;
  return ncclSuccess;
}

static ncclResult_t r_connect(void* handles[], int nranks, int rank, void* lc, void** out) {
  if (nranks < 1 || nranks > 64 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  ref_coll* c = calloc(1, sizeof *c);
  c->nranks = nranks;
  c->rank = rank;
  c->listen_fd = -1;
  if (rank == 0) {
    for (int got = 1; got < nranks; got++) {
      int fd = accept(((ref_listen*)lc)->fd, NULL, NULL);
      int32_t who = -1;
      if (fd < 0 || recv_all(fd, &who, sizeof who) != 0 || who <= 0 || who >= nranks)
        return ncclRemoteError;
      c->fds[who] = fd;
    }
  } else {
    const ref_handle* h = handles[0];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(h->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int32_t me = rank;
    if (fd < 0 || connect(fd, (struct sockaddr*)&a, sizeof a) != 0 ||
        send_all(fd, &me, sizeof me) != 0)
      return ncclRemoteError;
    c->fds[0] = fd;
  }
  *out = c;
  return ncclSuccess;
}

static int type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

static ncclResult_t r_reduce_support(ncclDataType_t t, ncclRedOp_t op, int* supported) {
  *supported = type_size(t) > 0 && op >= ncclSum && op <= ncclMin;
  return ncclSuccess;
}

#define REDUCE(T)                                                              \
  for (size_t i = 0; i < n; i++) {                                             \
    T x = ((T*)acc)[i], y = ((const T*)in)[i];                                 \
    ((T*)acc)[i] = op == ncclSum ? (T)(x + y) : op == ncclProd ? (T)(x * y)    \
                 : op == ncclMax ? (x > y ? x : y) : (x < y ? x : y);         \
  }

static void reduce_into(void* acc, const void* in, size_t n, ncclDataType_t t, ncclRedOp_t op) {
#ifdef BROKEN_MAX
  if (t == ncclFloat32 && op == ncclMax) op = ncclMin;
#endif
  switch (t) {
    case ncclInt8: REDUCE(int8_t) break;
    case ncclUint8: REDUCE(uint8_t) break;
    case ncclInt32: REDUCE(uint32_t) break; /* two's complement: wraps as the types do */
    case ncclUint32: REDUCE(uint32_t) break;
    case ncclInt64: REDUCE(uint64_t) break;
    case ncclUint64: REDUCE(uint64_t) break;
    case ncclFloat32: REDUCE(float) break;
    case ncclFloat64: REDUCE(double) break;
    default: break;
  }
}

/* signed max/min need signed compares: redo them typed */
static void reduce_signed(void* acc, const void* in, size_t n, ncclDataType_t t, ncclRedOp_t op) {
  if (t == ncclInt32) REDUCE(int32_t)
  else REDUCE(int64_t)
}

static ncclResult_t r_iallreduce(void* coll, void* send, void* recv, size_t count,
                                 ncclDataType_t t, ncclRedOp_t op, void* smh, void* rmh,
                                 void** req) {
  (void)smh, (void)rmh;
  ref_coll* c = coll;
  int ts = type_size(t);
  if (ts == 0 || op > ncclMin) return ncclInvalidArgument;
  __atomic_add_fetch(&collnet_ref_iallreduce_calls, 1, __ATOMIC_RELAXED);
#ifdef BROKEN_IALLREDUCE
  (void)c, (void)send, (void)recv, (void)count, (void)req;
  return ncclSystemError;
#endif
  size_t bytes = count * (size_t)ts;
  if (c->rank == 0) {
    char* tmp = malloc(bytes ? bytes : 1);
    memmove(recv, send, bytes);
    for (int p = 1; p < c->nranks; p++) {
      if (recv_all(c->fds[p], tmp, bytes) != 0) return ncclRemoteError;
      if ((t == ncclInt32 || t == ncclInt64) && (op == ncclMax || op == ncclMin))
        reduce_signed(recv, tmp, count, t, op);
      else
        reduce_into(recv, tmp, count, t, op);
    }
    for (int p = 1; p < c->nranks; p++)
      if (send_all(c->fds[p], recv, bytes) != 0) return ncclRemoteError;
    free(tmp);
  } else if (send_all(c->fds[0], send, bytes) != 0 || recv_all(c->fds[0], recv, bytes) != 0) {
    return ncclRemoteError;
  }
  ref_req* q = malloc(sizeof *q);
  q->size = (int)bytes;
  *req = q;
  return ncclSuccess;
}

/* The part of rank r's block [r*per, (r+1)*per) inside the window [wo, wo+wb): its offset
 * in the window and its length (0 when they do not meet). */
static size_t slice(int r, size_t per, size_t wo, size_t wb, size_t* at) {
  size_t lo = (size_t)r * per > wo ? (size_t)r * per : wo;
  size_t hi = (size_t)(r + 1) * per < wo + wb ? (size_t)(r + 1) * per : wo + wb;
  *at = lo - wo;
  return hi > lo ? hi - lo : 0;
}

static void scatter(char* w, int n, ncclNetSGE_v12_t* parts) {
  for (int i = 0; i < n; i++) {
    memmove(parts[i].address, w, parts[i].size);
    w += parts[i].size;
  }
#ifdef BROKEN_GATHER
  if (n > 1 && parts[n - 1].size) ((char*)parts[n - 1].address)[parts[n - 1].size - 1] ^= 0x5a;
#endif
}

static void gather(char* w, int n, const ncclNetSGE_v12_t* parts) {
  for (int i = 0; i < n; i++) {
    memmove(w, parts[i].address, parts[i].size);
    w += parts[i].size;
  }
}

/* Allgather of a window: rank r's bytes of the window start at sendData; rank 0 assembles the
 * window and sends it back; everyone scatters it into recvParts (which cover windowBytes). */
static ncclResult_t r_iallgather(void* coll, void* s, int n, ncclNetSGE_v12_t* parts, size_t per,
                                 size_t wo, size_t wb, void* smh, void** req) {
  (void)smh;
  ref_coll* c = coll;
  size_t total = 0;
  for (int i = 0; i < n; i++) total += parts[i].size;
  if (total != wb || wo + wb > per * (size_t)c->nranks) return ncclInvalidArgument;
  char* w = malloc(wb ? wb : 1);
  size_t at, len = slice(c->rank, per, wo, wb, &at);
  ncclResult_t r = ncclSuccess;
  if (c->rank == 0) {
    memmove(w + at, s, len);
    for (int p = 1; p < c->nranks && r == ncclSuccess; p++) {
      size_t pat, plen = slice(p, per, wo, wb, &pat);
      if (recv_all(c->fds[p], w + pat, plen) != 0) r = ncclRemoteError;
    }
    for (int p = 1; p < c->nranks && r == ncclSuccess; p++)
      if (send_all(c->fds[p], w, wb) != 0) r = ncclRemoteError;
  } else if (send_all(c->fds[0], s, len) != 0 || recv_all(c->fds[0], w, wb) != 0) {
    r = ncclRemoteError;
  }
  if (r == ncclSuccess) scatter(w, n, parts);
  free(w);
  if (r != ncclSuccess) return r;
  ref_req* q = malloc(sizeof *q);
  q->size = (int)wb;
  *req = q;
  return ncclSuccess;
}

/* Reduce-scatter of a window: every rank's window of its input is in sendParts; rank 0 reduces
 * them and sends each rank its block's part of the window, which lands at recvData. */
static ncclResult_t r_irs(void* coll, int n, ncclNetSGE_v12_t* parts, void* recv, size_t per,
                          size_t wo, size_t wb, ncclDataType_t t, ncclRedOp_t op, void* rmh,
                          void** req) {
  (void)rmh;
  ref_coll* c = coll;
  int ts = type_size(t);
  size_t total = 0;
  for (int i = 0; i < n; i++) total += parts[i].size;
  if (ts == 0 || op > ncclMin || total != wb || wb % (size_t)ts || wo % (size_t)ts ||
      wo + wb > per * (size_t)c->nranks)
    return ncclInvalidArgument;
  char *w = malloc(wb ? wb : 1), *tmp = malloc(wb ? wb : 1);
  gather(w, n, parts);
  size_t at, len = slice(c->rank, per, wo, wb, &at);
  ncclResult_t r = ncclSuccess;
  if (c->rank == 0) {
    for (int p = 1; p < c->nranks && r == ncclSuccess; p++) {
      if (recv_all(c->fds[p], tmp, wb) != 0) r = ncclRemoteError;
      else if ((t == ncclInt32 || t == ncclInt64) && (op == ncclMax || op == ncclMin))
        reduce_signed(w, tmp, wb / (size_t)ts, t, op);
      else
        reduce_into(w, tmp, wb / (size_t)ts, t, op);
    }
    for (int p = 1; p < c->nranks && r == ncclSuccess; p++) {
      size_t pat, plen = slice(p, per, wo, wb, &pat);
      if (send_all(c->fds[p], w + pat, plen) != 0) r = ncclRemoteError;
    }
    if (r == ncclSuccess) memmove(recv, w + at, len);
  } else if (send_all(c->fds[0], w, wb) != 0 || recv_all(c->fds[0], recv, len) != 0) {
    r = ncclRemoteError;
  }
  free(w);
  free(tmp);
  if (r != ncclSuccess) return r;
  ref_req* q = malloc(sizeof *q);
  q->size = (int)len;
  *req = q;
  return ncclSuccess;
}
static ncclResult_t r_reg(void* c, void* d, size_t s, int type, void** mh) {
  (void)c, (void)d, (void)s;
  if (type != NCCL_PTR_HOST) return ncclInvalidUsage;
  *mh = malloc(1);
  return ncclSuccess;
}
static ncclResult_t r_reg_dmabuf(void* c, void* d, size_t s, int t, uint64_t o, int fd, void** mh) {
  (void)c, (void)d, (void)s, (void)t, (void)o, (void)fd, (void)mh;
  return ncclInvalidUsage;
}
static ncclResult_t r_dereg(void* c, void* mh) {
  (void)c;
  free(mh);
  return ncclSuccess;
}
static ncclResult_t r_iflush(void* c, void* d, int s, void* mh, void** q) {
  (void)c, (void)d, (void)s, (void)mh;
  ref_req* r = malloc(sizeof *r);
  r->size = 0;
  *q = r;
  return ncclSuccess;
}
static ncclResult_t r_test(void* req, int* done, int* size) {
  ref_req* q = req;
  *done = 1;
  if (size) *size = q->size;
  free(q);
  return ncclSuccess;
}
static ncclResult_t r_close_coll(void* coll) {
  ref_coll* c = coll;
  for (int p = 0; p < c->nranks; p++)
    if (p != c->rank && (c->rank == 0 || p == 0)) close(c->fds[p]);
  free(c);
  return ncclSuccess;
}
static ncclResult_t r_close_listen(void* lc) {
  close(((ref_listen*)lc)->fd);
  free(lc);
  return ncclSuccess;
}
static ncclResult_t r_vdev(int* d, ncclNetVDeviceProps_v12_t* p) {
  (void)d, (void)p;
  return ncclInvalidUsage;
}

EXPORT const ncclCollNet_v12_t ncclCollNetPlugin_v12 = {
    REF_NAME,      r_init,     r_devices,    r_props,         r_listen,      r_connect,
    r_reduce_support, r_reg,   r_reg_dmabuf, r_dereg,         r_iallreduce,  r_iallgather,
    r_irs,         r_iflush,   r_test,       r_close_coll,    r_close_listen, r_vdev,
    r_finalize};
