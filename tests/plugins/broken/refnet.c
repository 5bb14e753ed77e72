/* refnet (see refnet.h). Wire format per message: a 20-byte header {u32 tag, u64 reported size,
 * u64 payload bytes} and the payload. A send comm posts at most NCCL_NET_MAX_REQUESTS x 8
 * requests, a recv comm NCCL_NET_MAX_REQUESTS; past that isend/irecv return a NULL request, and
 * isend also does while REFNET_SOFT_QUEUE sends wait for the socket.
 * Requests progress in post order; a receive of n slots completes when one message per slot has
 * landed, each in the first free slot carrying its tag (any slot when n is 1). */
#include "refnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REFNET_MAGIC 0x7265666e65742121ull /* "refnet!!" */
#define REFNET_MAX_RECVS 8
#define REFNET_SEND_REQS (NCCL_NET_MAX_REQUESTS * REFNET_MAX_RECVS)
#define REFNET_RECV_REQS NCCL_NET_MAX_REQUESTS
#define REFNET_CHUNK (4u << 20)
#define REFNET_SOFT_QUEUE 8 /* queued sends past which isend returns NULL */

typedef struct {
  uint64_t magic;
  struct sockaddr_in addr;
  void* pending; /* the connecting comm, kept in the caller's copy of the handle */
} refnet_handle;

_Static_assert(sizeof(refnet_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");

typedef struct __attribute__((packed)) {
  uint32_t tag;
  uint64_t reported;
  uint64_t payload;
} refnet_header;

enum { REQ_FREE = 0, REQ_POSTED, REQ_DONE };

struct refnet_comm;

typedef struct {
  uint64_t magic;
  int state;
  int recv; /* 1 receive, 0 send */
  struct refnet_comm* comm;
  int n;
  char* data[REFNET_MAX_RECVS];
  size_t size[REFNET_MAX_RECVS];    /* send: payload; recv: posted */
  size_t reported[REFNET_MAX_RECVS];
  int tag[REFNET_MAX_RECVS];
  int filled[REFNET_MAX_RECVS];
  size_t send_reported;
} refnet_req;

typedef struct refnet_comm {
  int fd;
  int recv;
  int error;
  int nreqs;
  refnet_req* reqs;
  int* order; /* ring of request indexes in post order */
  int head, count;
  /* send: bytes of the head message's header+payload written */
  size_t sent;
  /* recv: header being read, then payload into slot */
  refnet_header hdr;
  size_t hdr_got;
  int slot;
  size_t pay_got;
} refnet_comm;

typedef struct {
  int fd;
  int pending_fd;
  uint64_t hello;
  size_t hello_got;
} refnet_listen_comm;

typedef struct {
  refnet_comm* comm; /* the comm being built */
  int connected;
  size_t hello_sent;
} refnet_connecting;

static ncclDebugLogger_t logger;

ncclResult_t refnet_init(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                         ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  (void)commId, (void)config, (void)profFunction;
  logger = logFunction;
  *ctx = malloc(1);
  return *ctx ? ncclSuccess : ncclSystemError;
}

ncclResult_t refnet_finalize(void* ctx) {
  free(ctx);
  return ncclSuccess;
}

ncclResult_t refnet_devices(int* ndev) {
  *ndev = 1;
  return ncclSuccess;
}

ncclResult_t refnet_getProperties(int dev, ncclNetProperties_v11_t* props) {
  if (dev != 0) return ncclInvalidArgument;
  memset(props, 0, sizeof *props);
  props->name = "lo";
  props->pciPath = NULL;
  props->guid = 0x7265666e6574ull;
  props->ptrSupport = NCCL_PTR_HOST;
  props->speed = 10000;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = REFNET_MAX_RECVS;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = 0;
  props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = MAX_COLLNET_SIZE;
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t refnet_listen(void* ctx, int dev, void* handle, void** listenComm) {
  (void)ctx;
  if (dev != 0) return ncclInvalidArgument;
  refnet_listen_comm* l = calloc(1, sizeof *l);
  if (!l) return ncclSystemError;
  l->pending_fd = -1;
  l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  refnet_handle h;
  memset(&h, 0, sizeof h);
  h.magic = REFNET_MAGIC;
  h.addr.sin_family = AF_INET;
  h.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof h.addr;
  if (l->fd < 0 || bind(l->fd, (struct sockaddr*)&h.addr, sizeof h.addr) != 0 ||
      listen(l->fd, 128) != 0 || getsockname(l->fd, (struct sockaddr*)&h.addr, &len) != 0) {
    if (l->fd >= 0) close(l->fd);
    free(l);
    return ncclSystemError;
  }
  memcpy(handle, &h, sizeof h);
  *listenComm = l;
  return ncclSuccess;
}

static refnet_comm* comm_new(int fd, int recv) {
  refnet_comm* c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = fd;
  c->recv = recv;
  c->nreqs = recv ? REFNET_RECV_REQS : REFNET_SEND_REQS;
  c->reqs = calloc((size_t)c->nreqs, sizeof *c->reqs);
  c->order = calloc((size_t)c->nreqs, sizeof *c->order);
  if (!c->reqs || !c->order) {
    free(c->reqs);
    free(c->order);
    free(c);
    return NULL;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return c;
}

static void comm_free(refnet_comm* c) {
  if (c->fd >= 0) close(c->fd);
  free(c->reqs);
  free(c->order);
  free(c);
}

ncclResult_t refnet_connect(void* ctx, int dev, void* handle, void** sendComm,
                            ncclNetDeviceHandle_v11_t** sendDevComm) {
  (void)ctx, (void)sendDevComm;
  *sendComm = NULL;
  if (dev != 0) return ncclInvalidArgument;
  /* NCCL hands plugins handles aligned for 8-byte fields, and plugins cast them (as here):
   * a core that does not is caught here, not only under UBSan. */
  if ((uintptr_t)handle % _Alignof(refnet_handle) != 0) return ncclInvalidUsage;
  refnet_handle* h = handle;
  if (h->magic != REFNET_MAGIC) return ncclInvalidArgument;
  refnet_connecting* st = h->pending;
  if (st == NULL) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ncclSystemError;
    if (connect(fd, (struct sockaddr*)&h->addr, sizeof h->addr) != 0 && errno != EINPROGRESS) {
      close(fd);
      return ncclSystemError;
    }
    st = calloc(1, sizeof *st);
    if (st) st->comm = comm_new(fd, 0);
    if (!st || !st->comm) {
      free(st);
      close(fd);
      return ncclSystemError;
    }
    h->pending = st;
    return ncclSuccess;
  }
  refnet_comm* c = st->comm;
  if (!st->connected) {
    struct pollfd p = {c->fd, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0) return ncclSuccess;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) goto fail;
    st->connected = 1;
  }
  uint64_t hello = REFNET_MAGIC;
  while (st->hello_sent < sizeof hello) {
    ssize_t n = send(c->fd, (char*)&hello + st->hello_sent, sizeof hello - st->hello_sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ncclSuccess;
    if (n <= 0) goto fail;
    st->hello_sent += (size_t)n;
  }
  *sendComm = c;
  h->pending = NULL;
  free(st);
  return ncclSuccess;
fail:
  h->pending = NULL;
  comm_free(c);
  free(st);
  return ncclSystemError;
}

ncclResult_t refnet_accept(void* listenComm, void** recvComm,
                           ncclNetDeviceHandle_v11_t** recvDevComm) {
  (void)recvDevComm;
  refnet_listen_comm* l = listenComm;
  *recvComm = NULL;
  if (l->pending_fd < 0) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? ncclSuccess
                                                                                  : ncclSystemError;
    l->pending_fd = fd;
    l->hello_got = 0;
  }
  while (l->hello_got < sizeof l->hello) {
    ssize_t n = recv(l->pending_fd, (char*)&l->hello + l->hello_got, sizeof l->hello - l->hello_got,
                     MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ncclSuccess;
    if (n <= 0) {
      close(l->pending_fd);
      l->pending_fd = -1;
      return ncclSystemError;
    }
    l->hello_got += (size_t)n;
  }
  int fd = l->pending_fd;
  l->pending_fd = -1;
  if (l->hello != REFNET_MAGIC) {
    close(fd);
    return ncclSystemError;
  }
  refnet_comm* c = comm_new(fd, 1);
  if (!c) {
    close(fd);
    return ncclSystemError;
  }
  *recvComm = c;
  return ncclSuccess;
}

ncclResult_t refnet_regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  (void)comm, (void)data, (void)size;
  if (type != NCCL_PTR_HOST) return ncclInvalidArgument;
  uint64_t* mh = malloc(sizeof *mh);
  if (!mh) return ncclSystemError;
  *mh = REFNET_MAGIC;
  *mhandle = mh;
  return ncclSuccess;
}

ncclResult_t refnet_deregMr(void* comm, void* mhandle) {
  (void)comm;
  uint64_t* mh = mhandle;
  if (!mh || *mh != REFNET_MAGIC) return ncclInternalError;
  *mh = 0;
  free(mh);
  return ncclSuccess;
}

static refnet_req* req_alloc(refnet_comm* c) {
  if (c->count >= c->nreqs) return NULL;
  for (int i = 0; i < c->nreqs; i++) {
    refnet_req* r = &c->reqs[i];
    if (r->state != REQ_FREE) continue;
    memset(r, 0, sizeof *r);
    r->magic = REFNET_MAGIC;
    r->comm = c;
    r->state = REQ_POSTED;
    c->order[(c->head + c->count) % c->nreqs] = i;
    c->count++;
    return r;
  }
  return NULL;
}

/* Moves bytes on c until the socket would block or the queue is empty. */
static void progress(refnet_comm* c) {
  while (!c->error && c->count > 0) {
    refnet_req* r = &c->reqs[c->order[c->head]];
    if (!c->recv) {
      refnet_header h = {(uint32_t)r->tag[0], r->send_reported, r->size[0]};
      size_t total = sizeof h + r->size[0];
      while (c->sent < total) {
        ssize_t n;
        if (c->sent < sizeof h) {
          n = send(c->fd, (char*)&h + c->sent, sizeof h - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        } else {
          size_t off = c->sent - sizeof h, left = r->size[0] - off;
          n = send(c->fd, r->data[0] + off, left < REFNET_CHUNK ? left : REFNET_CHUNK,
                   MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (n <= 0) {
          c->error = 1;
          return;
        }
        c->sent += (size_t)n;
      }
      c->sent = 0;
    } else {
      for (;;) {
        int open_slots = 0;
        for (int j = 0; j < r->n; j++) open_slots += !r->filled[j];
        if (!open_slots) break;
        if (c->hdr_got < sizeof c->hdr) {
          ssize_t n = recv(c->fd, (char*)&c->hdr + c->hdr_got, sizeof c->hdr - c->hdr_got,
                           MSG_DONTWAIT);
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
          if (n <= 0) {
            c->error = 1;
            return;
          }
          c->hdr_got += (size_t)n;
          if (c->hdr_got < sizeof c->hdr) continue;
          c->slot = -1;
          for (int j = 0; j < r->n && c->slot < 0; j++)
            if (!r->filled[j] && (r->n == 1 || r->tag[j] == (int)c->hdr.tag)) c->slot = j;
          if (c->slot < 0 || c->hdr.payload > r->size[c->slot]) {
            c->error = 1; /* no slot for the tag, or a message larger than the receive */
            return;
          }
          c->pay_got = 0;
        }
        while (c->pay_got < c->hdr.payload) {
          size_t left = c->hdr.payload - c->pay_got;
          ssize_t n = recv(c->fd, r->data[c->slot] + c->pay_got,
                           left < REFNET_CHUNK ? left : REFNET_CHUNK, MSG_DONTWAIT);
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
          if (n <= 0) {
            c->error = 1;
            return;
          }
          c->pay_got += (size_t)n;
        }
        r->filled[c->slot] = 1;
        r->reported[c->slot] = c->hdr.reported;
        c->hdr_got = 0;
      }
    }
    r->state = REQ_DONE;
    c->head = (c->head + 1) % c->nreqs;
    c->count--;
  }
}

ncclResult_t refnet_isend_sized(void* sendComm, void* data, size_t payload, size_t reported,
                                int tag, void** request) {
  refnet_comm* c = sendComm;
  *request = NULL;
  progress(c);
  if (c->error) return ncclSystemError;
  /* Back-pressure: while the socket is full and several sends queue behind it, ask the caller
   * to retry (NCCL's contract allows a NULL request at any time). */
  if (c->count >= REFNET_SOFT_QUEUE) return ncclSuccess;
  refnet_req* r = req_alloc(c);
  if (!r) return ncclSuccess; /* window full: retry */
  r->n = 1;
  r->data[0] = data;
  r->size[0] = payload;
  r->send_reported = reported;
  r->tag[0] = tag;
  *request = r;
  progress(c);
  return ncclSuccess;
}

ncclResult_t refnet_isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                          void* phandle, void** request) {
  (void)mhandle, (void)phandle;
  return refnet_isend_sized(sendComm, data, size, size, tag, request);
}

ncclResult_t refnet_irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                          void** mhandles, void** phandles, void** request) {
  (void)mhandles, (void)phandles;
  refnet_comm* c = recvComm;
  *request = NULL;
  if (n < 1 || n > REFNET_MAX_RECVS) return ncclInvalidArgument;
  if (c->error) return ncclSystemError;
  refnet_req* r = req_alloc(c);
  if (!r) return ncclSuccess;
  r->recv = 1;
  r->n = n;
  for (int j = 0; j < n; j++) {
    r->data[j] = data[j];
    r->size[j] = sizes[j];
    r->tag[j] = tags ? tags[j] : 0;
  }
  *request = r;
  progress(c);
  return ncclSuccess;
}

ncclResult_t refnet_iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                           void** request) {
  (void)recvComm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL; /* host memory: nothing to flush */
  return ncclSuccess;
}

int refnet_request_info(void* request, int* n, size_t* posted) {
  refnet_req* r = request;
  if (!r || r->magic != REFNET_MAGIC) return -1;
  if (!r->recv) return 0;
  *n = r->n;
  for (int j = 0; j < r->n; j++) posted[j] = r->size[j];
  return 1;
}

ncclResult_t refnet_test(void* request, int* done, int* sizes) {
  refnet_req* r = request;
  *done = 0;
  if (!r || r->magic != REFNET_MAGIC || r->state == REQ_FREE) return ncclInternalError;
  refnet_comm* c = r->comm;
  if (r->state != REQ_DONE) progress(c);
  if (r->state != REQ_DONE) return c->error ? ncclSystemError : ncclSuccess;
  *done = 1;
  if (sizes) {
    if (r->recv)
      for (int j = 0; j < r->n; j++) sizes[j] = (int)r->reported[j];
    else
      sizes[0] = (int)r->size[0];
  }
  r->state = REQ_FREE;
  r->magic = 0;
  return ncclSuccess;
}

ncclResult_t refnet_closeSend(void* sendComm) {
  comm_free(sendComm);
  return ncclSuccess;
}

ncclResult_t refnet_closeRecv(void* recvComm) {
  comm_free(recvComm);
  return ncclSuccess;
}

ncclResult_t refnet_closeListen(void* listenComm) {
  refnet_listen_comm* l = listenComm;
  if (l->pending_fd >= 0) close(l->pending_fd);
  close(l->fd);
  free(l);
  return ncclSuccess;
}

int refnet_comm_fd(void* comm) { return ((refnet_comm*)comm)->fd; }
