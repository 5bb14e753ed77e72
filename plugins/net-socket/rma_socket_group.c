/* The socket RMA group (rma_socket.h): init, devices and properties (the socket net's
 * interfaces, as a GIN proxy device: the host drives every transfer), listen, the full-mesh
 * connect, the per-peer send queues, the receiver and responder threads, and close. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rma_common.h"
#include "rma_socket.h"

#define RS_CTX_MAGIC 0x7273637478000001ull
#define RS_LISTEN_MAGIC 0x72736c7374000001ull
#define RS_COLL_MAGIC 0x7273636f6c6c0001ull
#define RS_HANDLE_MAGIC 0x7765667452736d61ull /* "weftRsma" */
#define RS_CONNECT_TIMEOUT_MS 30000
#define RS_IO_TIMEOUT_MS 30000

typedef struct {
  uint64_t magic;
  uint64_t secret;
  weft_sockaddr addr;
} rs_handle;

typedef struct {
  uint64_t magic;
  uint64_t secret; /* the listener's, from its handle */
  int32_t rank;
  int32_t nranks;
} rs_hello;

typedef struct {
  uint64_t magic;
  int fd;
  uint64_t secret;
} rs_listen;

typedef struct {
  uint64_t magic;
  uint64_t comm_id;
} rs_init_ctx;

ncclResult_t rma_socket_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger) {
  if (ctx == NULL) {
    NS_WARN("RMA/Socket: init: ctx is NULL");
    return ncclInvalidArgument;
  }
  if (logger) net_socket_set_logger(logger);
  ncclResult_t r = net_socket_devices_init();
  if (r != ncclSuccess) return r;
  rs_init_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) return ncclSystemError;
  c->magic = RS_CTX_MAGIC;
  c->comm_id = comm_id;
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t rma_socket_finalize(void* ctx) {
  rs_init_ctx* c = ctx;
  if (c == NULL || c->magic != RS_CTX_MAGIC) {
    NS_WARN("RMA/Socket: finalize: %p is not a context init returned", ctx);
    return ncclInvalidArgument;
  }
  c->magic = 0;
  free(c);
  return ncclSuccess;
}

ncclResult_t rma_socket_devices(int* ndev) { return net_socket_devices(ndev); }

ncclResult_t rma_socket_get_properties(int dev, ncclNetProperties_v12_t* props) {
  if (props == NULL) {
    NS_WARN("RMA/Socket: getProperties: props is NULL");
    return ncclInvalidArgument;
  }
  ncclNetProperties_v11_t p11;
  ncclResult_t r = net_socket_get_properties(dev, &p11);
  if (r == ncclSuccess) weft_rma_props_from_v11(&p11, dev, props);
  return r;
}

ncclResult_t rma_socket_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  rs_init_ctx* c = ctx;
  if (c == NULL || c->magic != RS_CTX_MAGIC || handle == NULL || listen_comm == NULL) {
    NS_WARN("RMA/Socket: listen: bad argument (ctx %p, handle %p, listenComm %p)", ctx, handle,
            (void*)listen_comm);
    return ncclInvalidArgument;
  }
  const ns_dev* d = net_socket_dev_get(dev);
  if (d == NULL) return ncclInvalidArgument;
  rs_listen* l = calloc(1, sizeof *l);
  if (l == NULL) return ncclSystemError;
  rs_handle h = {RS_HANDLE_MAGIC, weft_net_random64(), d->addr};
  socket_addr_set_port(&h.addr, 0);
  ncclResult_t r = socket_listen(&h.addr, &l->fd, &h.addr);
  if (r != ncclSuccess) {
    free(l);
    return r;
  }
  l->magic = RS_LISTEN_MAGIC;
  l->secret = h.secret;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof h);
  *listen_comm = l;
  return ncclSuccess;
}

ncclResult_t rma_socket_close_listen(void* listen_comm) {
  rs_listen* l = listen_comm;
  if (l == NULL || l->magic != RS_LISTEN_MAGIC) {
    NS_WARN("RMA/Socket: closeListen: %p is not a listen comm", listen_comm);
    return ncclInvalidArgument;
  }
  close(l->fd);
  l->magic = 0;
  free(l);
  return ncclSuccess;
}

rs_coll* rma_socket_coll_check(void* p, const char* fn) {
  rs_coll* c = p;
  if (c == NULL || c->magic != RS_COLL_MAGIC) {
    NS_WARN("RMA/Socket: %s: %p is not a group connect returned", fn, p);
    return NULL;
  }
  return c;
}

void rma_socket_fail_waiting(rs_coll* c, int peer, ncclResult_t why) {
  for (rs_req* q = c->reqs; q; q = q->next) {
    if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE) || (peer >= 0 && q->peer != peer)) continue;
    q->error = why;
    __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
  }
}

static void out_free(rs_out* o) {
  while (o) {
    rs_out* next = o->next;
    free(o);
    o = next;
  }
}

void rma_socket_peer_gone(rs_coll* c, int peer, const char* why) {
  pthread_mutex_lock(&c->lock);
  if (!c->dead[peer]) {
    c->dead[peer] = 1;
    if (why && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
      NS_WARN("RMA/Socket: rank %d: peer rank %d left (%s)", c->rank, peer, why);
      __atomic_store_n(&c->error, 1, __ATOMIC_RELEASE);
    }
    rma_socket_fail_waiting(c, peer, ncclRemoteError);
  }
  pthread_mutex_unlock(&c->lock);
  pthread_mutex_lock(&c->send_lock[peer]);
  rs_out* dropped = c->out[peer];
  c->out[peer] = NULL;
  pthread_mutex_unlock(&c->send_lock[peer]);
  out_free(dropped);
}

static uint64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

int rma_socket_out_progress(rs_coll* c, int peer) {
  int moved = 0;
  while (c->out[peer]) {
    rs_out* o = c->out[peer];
    size_t before = o->sent;
    ncclResult_t r = ncclSuccess;
    if (o->sent < sizeof o->hdr)
      r = socket_progress(c->fds[peer], 1, &o->hdr, sizeof o->hdr, &o->sent);
    if (r == ncclSuccess && o->sent >= sizeof o->hdr && o->size) {
      size_t done = o->sent - sizeof o->hdr;
      r = socket_progress(c->fds[peer], 1, (void*)o->data, o->size, &done);
      o->sent = sizeof o->hdr + done;
    }
    if (r != ncclSuccess) return -1;
    if (o->sent > before) moved = 1;
    if (o->sent < sizeof o->hdr + o->size) break; /* the socket is full */
    c->out[peer] = o->next;
    if (o->token) rma_socket_complete(c, o->token, ncclSuccess);
    free(o);
  }
  if (c->out[peer] == NULL || moved) {
    c->stall_since[peer] = 0;
  } else {
    uint64_t now = now_ms();
    if (c->stall_since[peer] == 0) c->stall_since[peer] = now;
    else if (now - c->stall_since[peer] > RS_IO_TIMEOUT_MS) return -1;
  }
  return c->out[peer] != NULL;
}

ncclResult_t rma_socket_send(rs_coll* c, int peer, const rs_msg* m, const void* data, size_t size,
                             uint64_t token) {
  rs_out* o = calloc(1, sizeof *o);
  if (o == NULL) return ncclSystemError;
  o->hdr = *m;
  o->data = data;
  o->size = data ? size : 0;
  o->token = token;
  pthread_mutex_lock(&c->lock);
  int dead = c->dead[peer];
  pthread_mutex_unlock(&c->lock);
  if (dead) {
    free(o);
    return ncclRemoteError;
  }
  pthread_mutex_lock(&c->send_lock[peer]);
  rs_out** at = &c->out[peer];
  while (*at) at = &(*at)->next;
  *at = o;
  int st = rma_socket_out_progress(c, peer);
  pthread_mutex_unlock(&c->send_lock[peer]);
  if (st < 0) {
    rma_socket_peer_gone(c, peer, "a send failed");
    return ncclRemoteError;
  }
  if (st > 0) { /* the responder writes the rest as the socket drains */
    pthread_mutex_lock(&c->lock);
    c->kick = 1;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
  }
  return ncclSuccess;
}

static void* receiver_main(void* arg) {
  rs_coll* c = arg;
  struct pollfd* pf = calloc((size_t)c->nranks, sizeof *pf);
  int* who = calloc((size_t)c->nranks, sizeof *who);
  while (pf && who && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
    int n = 0;
    pthread_mutex_lock(&c->lock);
    for (int p = 0; p < c->nranks; p++) {
      if (p == c->rank || c->dead[p]) continue;
      pf[n] = (struct pollfd){.fd = c->fds[p], .events = POLLIN};
      who[n++] = p;
    }
    pthread_mutex_unlock(&c->lock);
    if (n == 0) break;
    int k = poll(pf, (nfds_t)n, 100);
    if (k <= 0) continue;
    for (int i = 0; i < n; i++) {
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      rs_msg m;
      if (socket_recv_all(pf[i].fd, &m, sizeof m, RS_IO_TIMEOUT_MS) != ncclSuccess) {
        rma_socket_peer_gone(c, who[i], "its socket closed");
        continue;
      }
      if (rma_socket_apply(c, who[i], &m) != ncclSuccess) rma_socket_peer_gone(c, who[i], "a message broke off");
    }
  }
  free(pf);
  free(who);
  return NULL;
}

/* The responder: queues the replies the receiver asked for, and writes every peer's queue as
 * its socket drains (poll for room while something waits, else sleep until kicked). */
static void* responder_main(void* arg) {
  rs_coll* c = arg;
  struct pollfd* pf = calloc((size_t)c->nranks, sizeof *pf);
  int* who = calloc((size_t)c->nranks, sizeof *who);
  int waiting = 0;
  while (pf && who) {
    pthread_mutex_lock(&c->lock);
    while (!waiting && c->replies == NULL && !c->kick && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
      pthread_cond_wait(&c->cond, &c->lock);
    rs_reply* replies = c->replies;
    c->replies = NULL;
    c->kick = 0;
    pthread_mutex_unlock(&c->lock);
    if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
      while (replies) {
        rs_reply* r = replies;
        replies = r->next;
        free(r);
      }
      break;
    }
    while (replies) {
      rs_reply* r = replies;
      replies = r->next;
      size_t size = r->msg.op == RS_GET_REPLY ? r->msg.size : 0;
      (void)rma_socket_send(c, r->peer, &r->msg, r->data, size, 0); /* a dead peer: dropped */
      free(r);
    }
    int n = 0;
    for (int p = 0; p < c->nranks; p++) {
      if (p == c->rank) continue;
      pthread_mutex_lock(&c->send_lock[p]);
      int st = c->out[p] ? rma_socket_out_progress(c, p) : 0;
      pthread_mutex_unlock(&c->send_lock[p]);
      if (st < 0) rma_socket_peer_gone(c, p, "its socket took no more data");
      if (st > 0) {
        pf[n] = (struct pollfd){.fd = c->fds[p], .events = POLLOUT};
        who[n++] = p;
      }
    }
    waiting = n > 0;
    if (waiting) (void)poll(pf, (nfds_t)n, 10); /* short: replies to other peers come in meanwhile */
  }
  free(pf);
  free(who);
  return NULL;
}

static void coll_free(rs_coll* c) {
  for (int p = 0; p < c->nranks; p++) {
    if (c->fds[p] >= 0) socket_close(c->fds[p]);
    pthread_mutex_destroy(&c->send_lock[p]);
    if (c->out) out_free(c->out[p]);
  }
  for (uint32_t i = 0; i < c->nmrs; i++) free(c->mrs[i]);
  while (c->reqs) {
    rs_req* q = c->reqs;
    c->reqs = q->next;
    free(q);
  }
  while (c->replies) {
    rs_reply* r = c->replies;
    c->replies = r->next;
    free(r);
  }
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  free(c->mrs);
  free(c->fds);
  free(c->send_lock);
  free(c->out);
  free(c->stall_since);
  free(c->dead);
  c->magic = 0;
  free(c);
}

/* Lower ranks connect to higher ones; a higher rank accepts one socket per lower rank. */
static ncclResult_t mesh(rs_coll* c, rs_handle* const* hs, rs_listen* l) {
  for (int p = c->rank + 1; p < c->nranks; p++) {
    ncclResult_t r = socket_connect(&hs[p]->addr, RS_CONNECT_TIMEOUT_MS, &c->fds[p]);
    if (r != ncclSuccess) return r;
    rs_hello h = {RS_HANDLE_MAGIC, hs[p]->secret, c->rank, c->nranks};
    if ((r = socket_send_all(c->fds[p], &h, sizeof h, RS_IO_TIMEOUT_MS)) != ncclSuccess) return r;
  }
  for (int got = 0; got < c->rank;) {
    int fd = -1;
    ncclResult_t r = socket_accept(l->fd, RS_CONNECT_TIMEOUT_MS, &fd);
    if (r != ncclSuccess) return r;
    if (fd < 0) {
      NS_WARN("RMA/Socket: connect: rank %d heard from %d of %d lower ranks in %d ms", c->rank,
              got, c->rank, RS_CONNECT_TIMEOUT_MS);
      return ncclRemoteError;
    }
    rs_hello h;
    if (socket_recv_all(fd, &h, sizeof h, RS_IO_TIMEOUT_MS) != ncclSuccess ||
        h.magic != RS_HANDLE_MAGIC || h.secret != l->secret || h.rank < 0 || h.rank >= c->rank ||
        h.nranks != c->nranks || c->fds[h.rank] >= 0) {
      socket_close(fd); /* a stray or stale connection */
      continue;
    }
    c->fds[h.rank] = fd;
    got++;
  }
  for (int p = 0; p < c->nranks; p++)
    if (p != c->rank) socket_set_nodelay(c->fds[p]);
  return ncclSuccess;
}

ncclResult_t rma_socket_connect(void* ctx, void* handles[], int nranks, int rank,
                                void* listen_comm, void** coll_comm) {
  rs_init_ctx* ic = ctx;
  rs_listen* l = listen_comm;
  if (ic == NULL || ic->magic != RS_CTX_MAGIC || l == NULL || l->magic != RS_LISTEN_MAGIC ||
      handles == NULL || coll_comm == NULL || nranks < 1 || rank < 0 || rank >= nranks) {
    NS_WARN("RMA/Socket: connect: bad argument (ctx %p, listenComm %p, handles %p, nranks %d, "
            "rank %d)", ctx, listen_comm, (void*)handles, nranks, rank);
    return ncclInvalidArgument;
  }
  for (int p = 0; p < nranks; p++) {
    const rs_handle* h = handles[p];
    if (h == NULL || h->magic != RS_HANDLE_MAGIC) {
      NS_WARN("RMA/Socket: connect: handle of rank %d is not one listen wrote", p);
      return ncclInvalidArgument;
    }
  }
  rs_coll* c = calloc(1, sizeof *c);
  if (c == NULL) return ncclSystemError;
  c->magic = RS_COLL_MAGIC;
  c->nranks = nranks;
  c->rank = rank;
  c->next_token = 1;
  c->fds = malloc(sizeof(int) * (size_t)nranks);
  c->dead = calloc((size_t)nranks, sizeof(int));
  c->send_lock = calloc((size_t)nranks, sizeof(pthread_mutex_t));
  c->out = calloc((size_t)nranks, sizeof *c->out);
  c->stall_since = calloc((size_t)nranks, sizeof *c->stall_since);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  if (c->fds == NULL || c->dead == NULL || c->send_lock == NULL || c->out == NULL ||
      c->stall_since == NULL) {
    coll_free(c);
    return ncclSystemError;
  }
  for (int p = 0; p < nranks; p++) {
    c->fds[p] = -1;
    pthread_mutex_init(&c->send_lock[p], NULL);
  }
  ncclResult_t r = mesh(c, (rs_handle* const*)handles, l);
  if (r == ncclSuccess && nranks > 1) {
    if (pthread_create(&c->receiver, NULL, receiver_main, c) != 0) r = ncclSystemError;
    else if (pthread_create(&c->responder, NULL, responder_main, c) != 0) {
      __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
      pthread_join(c->receiver, NULL);
      r = ncclSystemError;
    } else {
      c->threads = 1;
    }
  }
  if (r != ncclSuccess) {
    NS_WARN("RMA/Socket: connect: rank %d of %d could not reach its peers", rank, nranks);
    coll_free(c);
    return r;
  }
  *coll_comm = c;
  return ncclSuccess;
}

ncclResult_t rma_socket_close_coll(void* coll_comm) {
  rs_coll* c = rma_socket_coll_check(coll_comm, "closeColl");
  if (c == NULL) return ncclInvalidArgument;
  for (int p = 0; p < c->nranks; p++) { /* tell the live peers this is a close, not a failure */
    pthread_mutex_lock(&c->lock);
    int live = p != c->rank && !c->dead[p];
    pthread_mutex_unlock(&c->lock);
    if (!live) continue;
    rs_msg bye = {.op = RS_BYE};
    pthread_mutex_lock(&c->send_lock[p]);
    if (c->out[p] == NULL) /* not in the middle of a queued message */
      (void)socket_send_all(c->fds[p], &bye, sizeof bye, 1000);
    pthread_mutex_unlock(&c->send_lock[p]);
  }
  pthread_mutex_lock(&c->lock);
  __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  for (int p = 0; p < c->nranks; p++)
    if (c->fds[p] >= 0) shutdown(c->fds[p], SHUT_RDWR);
  if (c->threads) {
    pthread_join(c->receiver, NULL);
    pthread_join(c->responder, NULL);
  }
  coll_free(c);
  return ncclSuccess;
}
