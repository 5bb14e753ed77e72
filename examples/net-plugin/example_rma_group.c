/* The example's one-sided group (example_rma.h): init, devices and properties (the net's
 * interfaces, as a GIN proxy device), listen, the full-mesh connect, the receiver and responder
 * threads, and close. connect blocks until every peer is reached: it is collective, as NCCL
 * calls it. */
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "example_rma.h"

#define EXR_IO_MS 30000
#define EXR_CTX_MAGIC 0x6578726374780001ull
#define EXR_LISTEN_MAGIC 0x65786c7374000001ull
#define EXR_GROUP_MAGIC 0x657867727030001ull
#define EXR_HANDLE_MAGIC 0x6578726d61686e64ull

struct exr_handle {
  uint64_t magic, secret;
  struct sockaddr_in addr;
};
_Static_assert(sizeof(struct exr_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");

struct exr_hello {
  uint64_t magic, secret; /* the listener's secret, from its handle */
  int32_t rank, nranks;
};

struct exr_listen {
  uint64_t magic;
  int fd;
  uint64_t secret;
};

struct exr_init_ctx {
  uint64_t magic;
  void* net_ctx; /* the net side's init: device discovery and the logger */
};

ncclResult_t exr_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger) {
  if (ctx == NULL) return ncclInvalidArgument;
  struct exr_init_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) return ncclSystemError;
  ncclResult_t r = ex_init(&c->net_ctx, comm_id, NULL, logger, NULL);
  if (r != ncclSuccess) {
    free(c);
    return r;
  }
  c->magic = EXR_CTX_MAGIC;
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t exr_finalize(void* ctx) {
  struct exr_init_ctx* c = ctx;
  if (c == NULL || c->magic != EXR_CTX_MAGIC) {
    EX_WARN("RMA finalize: %p is not a context init returned", ctx);
    return ncclInvalidArgument;
  }
  ex_finalize(c->net_ctx);
  c->magic = 0;
  free(c);
  return ncclSuccess;
}

ncclResult_t exr_devices(int* ndev) {
  if (ndev == NULL) return ncclInvalidArgument;
  return ex_devices(ndev);
}

ncclResult_t exr_get_properties(int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v11_t p;
  if (props == NULL) return ncclInvalidArgument;
  ncclResult_t r = ex_get_properties(dev, &p);
  if (r != ncclSuccess) return r;
  memset(props, 0, sizeof *props);
  props->name = p.name;
  props->pciPath = p.pciPath;
  props->guid = p.guid;
  props->ptrSupport = NCCL_PTR_HOST;
  props->speed = p.speed;
  props->latency = p.latency;
  props->maxComms = p.maxComms;
  props->maxRecvs = 1;
  /* The host issues every transfer: a proxy device (no device handle for GPU code). */
  props->netDeviceType = NCCL_NET_DEVICE_GIN_PROXY;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  props->maxMultiRequestSize = 1;
  props->railId = NCCL_NET_ID_UNDEF;
  props->planeId = NCCL_NET_ID_UNDEF;
  return ncclSuccess;
}

ncclResult_t exr_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  struct exr_init_ctx* c = ctx;
  if (c == NULL || c->magic != EXR_CTX_MAGIC || handle == NULL || listen_comm == NULL) {
    EX_WARN("RMA listen: bad argument (ctx %p, handle %p, listenComm %p)", ctx, handle,
            (void*)listen_comm);
    return ncclInvalidArgument;
  }
  const struct ex_device* d = ex_device_get(dev);
  if (d == NULL) return ncclInvalidArgument;
  struct exr_listen* l = calloc(1, sizeof *l);
  if (l == NULL) return ncclSystemError;
  struct sockaddr_in addr = d->addr;
  socklen_t len = sizeof addr;
  l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l->fd < 0 || bind(l->fd, (struct sockaddr*)&addr, sizeof addr) != 0 ||
      listen(l->fd, 128) != 0 || getsockname(l->fd, (struct sockaddr*)&addr, &len) != 0 ||
      getrandom(&l->secret, sizeof l->secret, 0) != (ssize_t)sizeof l->secret) {
    EX_WARN("RMA listen on %s: %s", d->name, strerror(errno));
    if (l->fd >= 0) close(l->fd);
    free(l);
    return ncclSystemError;
  }
  struct exr_handle h = {EXR_HANDLE_MAGIC, l->secret, addr};
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof h);
  l->magic = EXR_LISTEN_MAGIC;
  *listen_comm = l;
  return ncclSuccess;
}

ncclResult_t exr_close_listen(void* listen_comm) {
  struct exr_listen* l = listen_comm;
  if (l == NULL || l->magic != EXR_LISTEN_MAGIC) {
    EX_WARN("RMA closeListen: %p is not a listen comm", listen_comm);
    return ncclInvalidArgument;
  }
  close(l->fd);
  l->magic = 0;
  free(l);
  return ncclSuccess;
}

ncclResult_t exr_io(int fd, void* buf, size_t len, int send) {
  char* p = buf;
  while (len > 0) {
    struct pollfd pf = {.fd = fd, .events = send ? POLLOUT : POLLIN};
    int k = poll(&pf, 1, EXR_IO_MS);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return ncclRemoteError; /* silent for EXR_IO_MS: the peer is stuck or gone */
    ssize_t n = send ? sendto(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT, NULL, 0)
                     : recv(fd, p, len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return ncclRemoteError;
    p += n;
    len -= (size_t)n;
  }
  return ncclSuccess;
}

struct exr_group* exr_group_check(void* p, const char* fn) {
  struct exr_group* g = p;
  if (g == NULL || g->magic != EXR_GROUP_MAGIC) {
    EX_WARN("RMA %s: %p is not a group connect returned", fn, p);
    return NULL;
  }
  return g;
}

void exr_fail_waiting(struct exr_group* g, int peer, ncclResult_t why) {
  for (struct exr_req* q = g->reqs; q; q = q->next) {
    if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE) || (peer >= 0 && q->peer != peer)) continue;
    q->error = why;
    __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
  }
}

void exr_peer_gone(struct exr_group* g, int peer, const char* why) {
  pthread_mutex_lock(&g->lock);
  if (!g->dead[peer]) {
    g->dead[peer] = 1;
    if (why && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
      EX_WARN("RMA rank %d: peer rank %d left (%s)", g->rank, peer, why);
      __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    }
    exr_fail_waiting(g, peer, ncclRemoteError);
  }
  pthread_mutex_unlock(&g->lock);
}

/* Reads every live peer's socket and applies what arrives, one whole message at a time. */
static void* receiver_main(void* arg) {
  struct exr_group* g = arg;
  struct pollfd* pf = calloc((size_t)g->nranks, sizeof *pf);
  int* who = calloc((size_t)g->nranks, sizeof *who);
  while (pf && who && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
    int n = 0;
    pthread_mutex_lock(&g->lock);
    for (int p = 0; p < g->nranks; p++)
      if (p != g->rank && !g->dead[p]) {
        pf[n] = (struct pollfd){.fd = g->fds[p], .events = POLLIN};
        who[n++] = p;
      }
    pthread_mutex_unlock(&g->lock);
    if (n == 0) break;
    if (poll(pf, (nfds_t)n, 100) <= 0) continue;
    for (int i = 0; i < n; i++) {
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      struct exr_msg m;
      if (exr_io(pf[i].fd, &m, sizeof m, 0) != ncclSuccess)
        exr_peer_gone(g, who[i], "its socket closed");
      else if (exr_apply(g, who[i], &m) != ncclSuccess)
        exr_peer_gone(g, who[i], "a message broke off");
    }
  }
  free(pf);
  free(who);
  return NULL;
}

/* Sends the replies the receiver queued (get data, flush acknowledgements). */
static void* responder_main(void* arg) {
  struct exr_group* g = arg;
  pthread_mutex_lock(&g->lock);
  for (;;) {
    while (g->replies == NULL && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
      pthread_cond_wait(&g->cond, &g->lock);
    struct exr_reply* r = g->replies;
    if (r == NULL) break;
    g->replies = r->next;
    int dead = g->dead[r->peer];
    pthread_mutex_unlock(&g->lock);
    if (!dead) {
      pthread_mutex_lock(&g->send_lock[r->peer]);
      ncclResult_t res = exr_io(g->fds[r->peer], &r->msg, sizeof r->msg, 1);
      if (res == ncclSuccess && r->msg.op == EXR_GET_REPLY && r->msg.size)
        res = exr_io(g->fds[r->peer], (void*)r->data, r->msg.size, 1);
      pthread_mutex_unlock(&g->send_lock[r->peer]);
      if (res != ncclSuccess) exr_peer_gone(g, r->peer, "a reply could not be sent");
    }
    free(r);
    pthread_mutex_lock(&g->lock);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

static void group_free(struct exr_group* g) {
  for (int p = 0; p < g->nranks; p++) {
    if (g->fds[p] >= 0) close(g->fds[p]);
    pthread_mutex_destroy(&g->send_lock[p]);
  }
  for (uint32_t i = 0; i < g->nmrs; i++) free(g->mrs[i]);
  while (g->reqs) {
    struct exr_req* q = g->reqs;
    g->reqs = q->next;
    free(q);
  }
  while (g->replies) {
    struct exr_reply* r = g->replies;
    g->replies = r->next;
    free(r);
  }
  pthread_mutex_destroy(&g->lock);
  pthread_cond_destroy(&g->cond);
  free(g->mrs);
  free(g->fds);
  free(g->dead);
  free(g->send_lock);
  g->magic = 0;
  free(g);
}

/* Lower ranks connect to higher ones; a rank accepts one socket from each lower rank. */
static ncclResult_t mesh(struct exr_group* g, struct exr_handle* const* hs, struct exr_listen* l) {
  for (int p = g->rank + 1; p < g->nranks; p++) {
    g->fds[p] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (g->fds[p] < 0 ||
        connect(g->fds[p], (const struct sockaddr*)&hs[p]->addr, sizeof hs[p]->addr) != 0) {
      EX_WARN("RMA connect: rank %d cannot reach rank %d: %s", g->rank, p, strerror(errno));
      return ncclRemoteError;
    }
    struct exr_hello h = {EXR_HANDLE_MAGIC, hs[p]->secret, g->rank, g->nranks};
    if (exr_io(g->fds[p], &h, sizeof h, 1) != ncclSuccess) return ncclRemoteError;
  }
  for (int got = 0; got < g->rank;) {
    struct pollfd pf = {.fd = l->fd, .events = POLLIN};
    if (poll(&pf, 1, EXR_IO_MS) <= 0) {
      EX_WARN("RMA connect: rank %d heard from %d of its %d lower ranks", g->rank, got, g->rank);
      return ncclRemoteError;
    }
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    struct exr_hello h;
    if (exr_io(fd, &h, sizeof h, 0) != ncclSuccess || h.magic != EXR_HANDLE_MAGIC ||
        h.secret != l->secret || h.rank < 0 || h.rank >= g->rank || h.nranks != g->nranks ||
        g->fds[h.rank] >= 0) {
      close(fd); /* a stray or stale connection */
      continue;
    }
    g->fds[h.rank] = fd;
    got++;
  }
  for (int p = 0; p < g->nranks; p++) {
    int one = 1;
    if (p != g->rank) setsockopt(g->fds[p], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return ncclSuccess;
}

ncclResult_t exr_connect(void* ctx, void* handles[], int nranks, int rank, void* listen_comm,
                         void** coll) {
  struct exr_init_ctx* c = ctx;
  struct exr_listen* l = listen_comm;
  if (c == NULL || c->magic != EXR_CTX_MAGIC || l == NULL || l->magic != EXR_LISTEN_MAGIC ||
      handles == NULL || coll == NULL || nranks < 1 || rank < 0 || rank >= nranks) {
    EX_WARN("RMA connect: bad argument (ctx %p, listenComm %p, handles %p, nranks %d, rank %d)",
            ctx, listen_comm, (void*)handles, nranks, rank);
    return ncclInvalidArgument;
  }
  for (int p = 0; p < nranks; p++)
    if (handles[p] == NULL || ((struct exr_handle*)handles[p])->magic != EXR_HANDLE_MAGIC) {
      EX_WARN("RMA connect: the handle of rank %d is not one listen wrote", p);
      return ncclInvalidArgument;
    }
  struct exr_group* g = calloc(1, sizeof *g);
  if (g == NULL) return ncclSystemError;
  g->magic = EXR_GROUP_MAGIC;
  g->nranks = nranks;
  g->rank = rank;
  g->next_token = 1;
  g->fds = malloc(sizeof(int) * (size_t)nranks);
  g->dead = calloc((size_t)nranks, sizeof(int));
  g->send_lock = calloc((size_t)nranks, sizeof(pthread_mutex_t));
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  if (g->fds == NULL || g->dead == NULL || g->send_lock == NULL) {
    free(g->fds), free(g->dead), free(g->send_lock), free(g);
    return ncclSystemError;
  }
  for (int p = 0; p < nranks; p++) {
    g->fds[p] = -1;
    pthread_mutex_init(&g->send_lock[p], NULL);
  }
  ncclResult_t r = mesh(g, (struct exr_handle* const*)handles, l);
  if (r == ncclSuccess && nranks > 1) {
    if (pthread_create(&g->receiver, NULL, receiver_main, g) != 0) {
      r = ncclSystemError;
    } else if (pthread_create(&g->responder, NULL, responder_main, g) != 0) {
      __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
      pthread_join(g->receiver, NULL);
      r = ncclSystemError;
    } else {
      g->threads = 1;
    }
  }
  if (r != ncclSuccess) {
    group_free(g);
    return r;
  }
  *coll = g;
  return ncclSuccess;
}

ncclResult_t exr_close_coll(void* coll) {
  struct exr_group* g = exr_group_check(coll, "closeColl");
  if (g == NULL) return ncclInvalidArgument;
  for (int p = 0; p < g->nranks; p++) { /* tell live peers this is a close, not a failure */
    pthread_mutex_lock(&g->lock);
    int live = p != g->rank && !g->dead[p];
    pthread_mutex_unlock(&g->lock);
    if (!live) continue;
    struct exr_msg bye = {.op = EXR_BYE};
    pthread_mutex_lock(&g->send_lock[p]);
    (void)exr_io(g->fds[p], &bye, sizeof bye, 1);
    pthread_mutex_unlock(&g->send_lock[p]);
  }
  pthread_mutex_lock(&g->lock);
  __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
  for (int p = 0; p < g->nranks; p++)
    if (g->fds[p] >= 0) shutdown(g->fds[p], SHUT_RDWR);
  if (g->threads) {
    pthread_join(g->receiver, NULL);
    pthread_join(g->responder, NULL);
  }
  group_free(g);
  return ncclSuccess;
}
