/* The verbs RMA group (rma_ib.h): init, devices and properties (net-ib's ports, as GIN proxy
 * devices), listen, connect (the TCP mesh, then one RC QP per rank), the progress thread, and
 * close. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rma_common.h"
#include "rma_ib.h"
#include "util/clock.h"
#include "util/param.h"

#define RI_CTX_MAGIC 0x7269637478000001ull
#define RI_LISTEN_MAGIC 0x72696c7374000001ull
#define RI_GROUP_MAGIC 0x7269677270000001ull
#define RI_HANDLE_MAGIC 0x7765667452696d61ull /* "weftRima" */
#define RI_TIMEOUT_MS 30000
#define RI_CHECK_NS (2ull * 1000 * 1000)
#define RI_BATCH 32

typedef struct {
  uint64_t magic;
  uint64_t secret;
  weft_sockaddr addr;
  int32_t dev;
} ri_handle;
_Static_assert(sizeof(ri_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");

typedef struct {
  uint64_t magic;
  uint64_t secret; /* the listener's, from its handle */
  int32_t rank, nranks;
} ri_hello;

typedef struct {
  uint64_t magic;
  int fd;
  int dev;
  uint64_t secret;
} ri_listen;

typedef struct {
  uint64_t magic;
  void* net; /* net-ib's context: holds the devices open */
} ri_init_ctx;

ncclResult_t rma_ib_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger) {
  if (ctx == NULL) return ncclInvalidArgument;
  ri_init_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) return ncclSystemError;
  ncclResult_t r = net_ib_init(&c->net, comm_id, NULL, logger, NULL);
  if (r != ncclSuccess) {
    free(c);
    return r;
  }
  c->magic = RI_CTX_MAGIC;
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t rma_ib_finalize(void* ctx) {
  ri_init_ctx* c = ctx;
  if (c == NULL || c->magic != RI_CTX_MAGIC) {
    IB_WARN("RMA/IB: finalize: %p is not a context init returned", ctx);
    return ncclInvalidArgument;
  }
  ncclResult_t r = net_ib_finalize(c->net);
  c->magic = 0;
  free(c);
  return r;
}

ncclResult_t rma_ib_devices(int* ndev) {
  if (ndev == NULL) return ncclInvalidArgument;
  return net_ib_devices(ndev);
}

/* The port's properties as a host-driven one-sided device. ptrSupport is host memory: a
 * signal is added by the target's host, so a GPU-resident signal word is out of reach (CUDA and
 * dma-buf registrations are accepted for data where the port can register them). */
ncclResult_t rma_ib_get_properties(int dev, ncclNetProperties_v12_t* props) {
  if (props == NULL) {
    IB_WARN("RMA/IB: getProperties: props is NULL");
    return ncclInvalidArgument;
  }
  if (net_ib_dev_get(dev) == NULL) return ncclInvalidArgument;
  ncclNetProperties_v11_t p11;
  ncclResult_t r = net_ib_get_properties(dev, &p11);
  if (r == ncclSuccess) weft_rma_props_from_v11(&p11, dev, props);
  return r;
}

ncclResult_t rma_ib_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  ri_init_ctx* c = ctx;
  if (c == NULL || c->magic != RI_CTX_MAGIC || handle == NULL || listen_comm == NULL) {
    IB_WARN("RMA/IB: listen: bad argument (ctx %p, handle %p, listenComm %p)", ctx, handle,
            (void*)listen_comm);
    return ncclInvalidArgument;
  }
  if (net_ib_dev_get(dev) == NULL) return ncclInvalidArgument;
  ri_handle h = {RI_HANDLE_MAGIC, weft_net_random64(), {{0}}, dev};
  ncclResult_t r = net_ib_oob_interface(&h.addr);
  if (r != ncclSuccess) return r;
  socket_addr_set_port(&h.addr, 0);
  ri_listen* l = calloc(1, sizeof *l);
  if (l == NULL) return ncclSystemError;
  r = socket_listen(&h.addr, &l->fd, &h.addr);
  if (r != ncclSuccess) {
    free(l);
    return r;
  }
  l->magic = RI_LISTEN_MAGIC;
  l->dev = dev;
  l->secret = h.secret;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof h);
  *listen_comm = l;
  return ncclSuccess;
}

ncclResult_t rma_ib_close_listen(void* listen_comm) {
  ri_listen* l = listen_comm;
  if (l == NULL || l->magic != RI_LISTEN_MAGIC) {
    IB_WARN("RMA/IB: closeListen: %p is not a listen comm", listen_comm);
    return ncclInvalidArgument;
  }
  close(l->fd);
  l->magic = 0;
  free(l);
  return ncclSuccess;
}

ri_group* ri_group_check(void* p, const char* fn) {
  ri_group* g = p;
  if (g == NULL || g->magic != RI_GROUP_MAGIC) {
    IB_WARN("RMA/IB: %s: %p is not a group connect returned", fn, p);
    return NULL;
  }
  return g;
}

int ri_post_recv(ri_group* g, int peer, int slot) {
  struct ibv_sge sge = {(uint64_t)(uintptr_t)(g->buf + ((size_t)peer * RI_RQ_DEPTH + (size_t)slot) *
                                                           RI_SLOT),
                        RI_SLOT, g->buf_mr->lkey};
  struct ibv_recv_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = RI_RECV_BIT | (uint64_t)peer << 20 | (uint64_t)slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return net_ib_verbs()->post_recv(g->peers[peer].qp, &wr, &bad);
}

/* ---- progress ---- */

static void on_completion(ri_group* g, const struct ibv_wc* wc) {
  if (wc->wr_id & RI_RECV_BIT) {
    int peer = (int)((wc->wr_id >> 20) & 0xfffff), slot = (int)(wc->wr_id & 0xfffff);
    if (peer >= g->nranks) return;
    if (wc->status != IBV_WC_SUCCESS) {
      if (wc->status != IBV_WC_WR_FLUSH_ERR && !g->peers[peer].failed) {
        IB_WARN("RMA/IB: rank %d: a signal receive from rank %d failed: %s", g->rank, peer,
                net_ib_wc_status_str(wc->status));
        __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
      }
      g->peers[peer].failed = 1;
      return;
    }
    const ri_sig* s = (const ri_sig*)(const void*)(g->buf + ((size_t)peer * RI_RQ_DEPTH +
                                                             (size_t)slot) * RI_SLOT);
    ri_apply_signal(g, peer, s, wc->byte_len);
    int e = ri_post_recv(g, peer, slot);
    if (e) {
      IB_WARN("RMA/IB: rank %d: posting a signal receive for rank %d again failed: %s", g->rank,
              peer, strerror(e));
      __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    }
    return;
  }
  ri_req* q = (ri_req*)(uintptr_t)wc->wr_id;
  if (q == NULL) return;
  ri_peer* pe = &g->peers[q->peer];
  if (pe->sq_used > 0) pe->sq_used--;
  if (wc->status != IBV_WC_SUCCESS) {
    ncclResult_t why = net_ib_status_is_remote(wc->status) ? ncclRemoteError : ncclSystemError;
    if (!pe->failed && !pe->closed && !pe->dead)
      IB_WARN("RMA/IB: rank %d: a %s %s rank %d failed: %s", g->rank,
              q->kind == RI_GET ? "get" : q->kind == RI_FLUSH ? "flush" : "put",
              q->kind == RI_PUT ? "to" : "from", q->peer, net_ib_wc_status_str(wc->status));
    if (!pe->closed) __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    pe->failed = 1;
    if (q->error == ncclSuccess) q->error = why;
  }
  if (--q->pending > 0) return;
  if (q->released) {
    ri_req_free(g, q);
    return;
  }
  __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
}

/* A peer's side channel: its goodbye, or its end (the peer died), or nothing. Lock held; the
 * channel's own lock is only tried (regMrSym may be reading it). */
static void check_peer(ri_group* g, int p) {
  ri_peer* pe = &g->peers[p];
  if (pe->fd < 0 || pe->dead || pe->closed || pthread_mutex_trylock(&pe->io) != 0) return;
  char b;
  ssize_t n = recv(pe->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 1 && b == RI_MSG_BYE) {
    ri_msg m;
    (void)socket_recv_all(pe->fd, &m, sizeof m, 1000);
    pe->closed = 1;
    ri_fail_waiting(g, p, ncclRemoteError);
  } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    IB_WARN("RMA/IB: rank %d: rank %d's connection ended without closing the group: it left; "
            "what waits on it fails", g->rank, p);
    pe->dead = 1;
    __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    ri_fail_waiting(g, p, ncclRemoteError);
  }
  pthread_mutex_unlock(&pe->io);
}

void ri_progress_locked(ri_group* g) {
  struct ibv_wc wc[RI_BATCH];
  for (;;) {
    int n = net_ib_verbs()->poll_cq(g->cq, RI_BATCH, wc);
    if (n < 0) {
      IB_WARN("RMA/IB: rank %d: ibv_poll_cq failed (%d)", g->rank, n);
      __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
      break;
    }
    for (int i = 0; i < n; i++) on_completion(g, &wc[i]);
    if (n < RI_BATCH) break;
  }
  int ev = __atomic_load_n(&g->async_event, __ATOMIC_ACQUIRE);
  if (ev >= 0 && !g->async_seen) { /* a QP in error also fails its work: this is the why */
    g->async_seen = 1;
    IB_WARN("RMA/IB: rank %d: %s on the group's QPs or CQ", g->rank,
            net_ib_event_str((enum ibv_event_type)ev));
    __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
  }
  uint64_t now = clock_ns();
  if (now >= g->next_check_ns) {
    g->next_check_ns = now + RI_CHECK_NS;
    for (int p = 0; p < g->nranks; p++) check_peer(g, p);
  }
}

static void* progress_main(void* arg) {
  ri_group* g = arg;
  while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&g->lock);
    ri_progress_locked(g);
    pthread_mutex_unlock(&g->lock);
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* ---- connect ---- */

static void group_free(ri_group* g) {
  const ib_verbs* v = net_ib_verbs();
  for (int p = 0; p < g->nranks; p++)
    if (g->peers && g->peers[p].qp) v->destroy_qp(g->peers[p].qp);
  for (uint32_t i = 0; i < g->nmrs; i++)
    if (g->mrs[i]) {
      if (g->mrs[i]->mr) v->dereg_mr(g->mrs[i]->mr);
      free(g->mrs[i]->remote);
      free(g->mrs[i]);
    }
  while (g->reqs) {
    ri_req* q = g->reqs;
    g->reqs = q->next;
    free(q);
  }
  if (g->buf_mr) v->dereg_mr(g->buf_mr);
  if (g->cq) v->destroy_cq(g->cq);
  for (int p = 0; g->peers && p < g->nranks; p++) {
    if (g->peers[p].fd >= 0) socket_close(g->peers[p].fd);
    pthread_mutex_destroy(&g->peers[p].io);
  }
  pthread_mutex_destroy(&g->lock);
  free(g->buf);
  free(g->peers);
  free(g->mrs);
  g->magic = 0;
  free(g);
}

/* Lower ranks connect to higher ones; a higher rank accepts one socket per lower rank. */
static ncclResult_t mesh(ri_group* g, ri_handle* const* hs, ri_listen* l) {
  for (int p = g->rank + 1; p < g->nranks; p++) {
    ncclResult_t r = socket_connect(&hs[p]->addr, RI_TIMEOUT_MS, &g->peers[p].fd);
    if (r != ncclSuccess) return r;
    ri_hello h = {RI_HANDLE_MAGIC, hs[p]->secret, g->rank, g->nranks};
    if ((r = socket_send_all(g->peers[p].fd, &h, sizeof h, RI_TIMEOUT_MS)) != ncclSuccess)
      return r;
  }
  for (int got = 0; got < g->rank;) {
    int fd = -1;
    ncclResult_t r = socket_accept(l->fd, RI_TIMEOUT_MS, &fd);
    if (r != ncclSuccess) return r;
    if (fd < 0) {
      IB_WARN("RMA/IB: connect: rank %d heard from %d of %d lower ranks in %d ms", g->rank, got,
              g->rank, RI_TIMEOUT_MS);
      return ncclRemoteError;
    }
    ri_hello h;
    if (socket_recv_all(fd, &h, sizeof h, RI_TIMEOUT_MS) != ncclSuccess ||
        h.magic != RI_HANDLE_MAGIC || h.secret != l->secret || h.rank < 0 || h.rank >= g->rank ||
        h.nranks != g->nranks || g->peers[h.rank].fd >= 0) {
      socket_close(fd); /* a stray or stale connection */
      continue;
    }
    g->peers[h.rank].fd = fd;
    got++;
  }
  for (int p = 0; p < g->nranks; p++)
    if (p != g->rank) socket_set_nodelay(g->peers[p].fd);
  return ncclSuccess;
}

/* This rank's side of the QP it made for peer p. */
static void local_info(const ri_group* g, int p, ib_conn_info* info) {
  const ib_dev* d = g->d;
  memset(info, 0, sizeof *info);
  info->magic = IB_INFO_MAGIC;
  info->version = IB_PROTO_VERSION;
  info->nqps = 1;
  info->qpn[0] = g->peers[p].qp->qp_num;
  memcpy(info->gid, d->gid.raw, 16);
  info->lid = d->lid;
  info->link_layer = (uint32_t)d->link_layer;
  info->mtu = (uint32_t)d->mtu;
  info->roce_version = (uint32_t)d->roce_version;
  info->fifo_addr = (uint64_t)(uintptr_t)(g->buf + g->buf_len - 128); /* the flush source */
  info->fifo_rkey = g->buf_mr->rkey;
}

/* CQ, buffers, one QP per rank (to RTS against the peer's), receives posted, then a "ready"
 * byte each way: no signal is sent before its receives exist. */
static ncclResult_t setup_qps(ri_group* g) {
  const ib_verbs* v = net_ib_verbs();
  ib_dev* d = g->d;
  int cqe = g->nranks * (RI_SQ_DEPTH + RI_RQ_DEPTH) + 16;
  g->cq = v->create_cq(d->hw->ctx, cqe, &g->async_event, NULL, 0);
  if (g->cq == NULL) {
    IB_WARN("RMA/IB: %s:%d: ibv_create_cq (%d entries) failed: %s", d->name, d->port, cqe,
            strerror(errno));
    return ncclSystemError;
  }
  long pg = sysconf(_SC_PAGESIZE);
  g->buf_len = (size_t)g->nranks * RI_RQ_DEPTH * RI_SLOT + 128;
  g->buf_len = (g->buf_len + (size_t)pg - 1) & ~((size_t)pg - 1);
  void* buf = NULL;
  if (posix_memalign(&buf, (size_t)pg, g->buf_len) != 0) return ncclSystemError;
  memset(buf, 0, g->buf_len);
  g->buf = buf;
  ncclResult_t r = net_ib_reg_internal(d, g->buf, g->buf_len,
                                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
                                       &g->buf_mr, "RMA signal buffers");
  if (r != ncclSuccess) return r;
  ib_qp_caps caps = {&g->async_event, g->cq, RI_SQ_DEPTH, RI_RQ_DEPTH, sizeof(ri_sig)};
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  for (int p = 0; p < g->nranks; p++)
    if ((r = net_ib_qp_create_on(d, &caps, access, &g->peers[p].qp)) != ncclSuccess) return r;
  for (int p = 0; p < g->nranks; p++) { /* every info out first: no exchange waits on another */
    if (p == g->rank) continue;
    ib_conn_info mine;
    local_info(g, p, &mine);
    if ((r = socket_send_all(g->peers[p].fd, &mine, sizeof mine, RI_TIMEOUT_MS)) != ncclSuccess)
      return r;
  }
  int tc = (int)param_int(WEFT_PARAM_IB_TC);
  for (int p = 0; p < g->nranks; p++) {
    ib_conn_info peer;
    if (p == g->rank) {
      local_info(g, p, &peer);
    } else if ((r = socket_recv_all(g->peers[p].fd, &peer, sizeof peer, RI_TIMEOUT_MS)) !=
               ncclSuccess) {
      return r;
    } else if (peer.magic != IB_INFO_MAGIC || peer.version != IB_PROTO_VERSION ||
               peer.nqps != 1) {
      IB_WARN("RMA/IB: connect: rank %d: rank %d sent no QP description", g->rank, p);
      return ncclRemoteError;
    }
    g->peers[p].flush_addr = peer.fifo_addr;
    g->peers[p].flush_rkey = peer.fifo_rkey;
    struct ibv_ah_attr ah;
    enum ibv_mtu mtu = (enum ibv_mtu)peer.mtu < d->mtu ? (enum ibv_mtu)peer.mtu : d->mtu;
    if ((r = net_ib_make_ah(d, &peer, tc, &ah)) != ncclSuccess ||
        (r = net_ib_qp_rtr(d, g->peers[p].qp, peer.qpn[0], &ah, mtu)) != ncclSuccess ||
        (r = net_ib_qp_rts(d, g->peers[p].qp)) != ncclSuccess)
      return r;
    for (int s = 0; s < RI_RQ_DEPTH; s++) {
      int e = ri_post_recv(g, p, s);
      if (e) {
        IB_WARN("RMA/IB: %s:%d: posting signal receives failed: %s", d->name, d->port,
                strerror(e));
        return ncclSystemError;
      }
    }
  }
  char ready = 1;
  for (int p = 0; p < g->nranks; p++)
    if (p != g->rank &&
        (r = socket_send_all(g->peers[p].fd, &ready, 1, RI_TIMEOUT_MS)) != ncclSuccess)
      return r;
  for (int p = 0; p < g->nranks; p++)
    if (p != g->rank &&
        (r = socket_recv_all(g->peers[p].fd, &ready, 1, RI_TIMEOUT_MS)) != ncclSuccess)
      return r;
  return ncclSuccess;
}

ncclResult_t rma_ib_connect(void* ctx, void* handles[], int nranks, int rank, void* listen_comm,
                            void** coll) {
  ri_init_ctx* c = ctx;
  ri_listen* l = listen_comm;
  if (c == NULL || c->magic != RI_CTX_MAGIC || l == NULL || l->magic != RI_LISTEN_MAGIC ||
      handles == NULL || coll == NULL || nranks < 1 || nranks > RI_MAX_RANKS || rank < 0 ||
      rank >= nranks) {
    IB_WARN("RMA/IB: connect: bad argument (ctx %p, listenComm %p, handles %p, nranks %d (at "
            "most %d), rank %d)", ctx, listen_comm, (void*)handles, nranks, RI_MAX_RANKS, rank);
    return ncclInvalidArgument;
  }
  for (int p = 0; p < nranks; p++) {
    const ri_handle* h = handles[p];
    if (h == NULL || h->magic != RI_HANDLE_MAGIC) {
      IB_WARN("RMA/IB: connect: the handle of rank %d is not one listen wrote", p);
      return ncclInvalidArgument;
    }
  }
  ri_group* g = calloc(1, sizeof *g);
  if (g == NULL) return ncclSystemError;
  g->magic = RI_GROUP_MAGIC;
  g->nranks = nranks;
  g->rank = rank;
  g->d = net_ib_dev_get(l->dev);
  g->async_event = -1;
  pthread_mutex_init(&g->lock, NULL);
  g->peers = calloc((size_t)nranks, sizeof *g->peers);
  if (g->peers == NULL || g->d == NULL) {
    ncclResult_t why = g->d == NULL ? ncclInvalidArgument : ncclSystemError;
    free(g->peers);
    g->peers = NULL;
    group_free(g);
    return why;
  }
  for (int p = 0; p < nranks; p++) {
    g->peers[p].fd = -1;
    pthread_mutex_init(&g->peers[p].io, NULL);
  }
  ncclResult_t r = mesh(g, (ri_handle* const*)handles, l);
  if (r == ncclSuccess) r = setup_qps(g);
  if (r == ncclSuccess && pthread_create(&g->progress, NULL, progress_main, g) != 0)
    r = ncclSystemError;
  if (r != ncclSuccess) {
    IB_WARN("RMA/IB: connect: rank %d of %d could not connect its group on %s:%d", rank, nranks,
            g->d->name, g->d->port);
    group_free(g);
    return r;
  }
  g->thread = 1;
  *coll = g;
  return ncclSuccess;
}

ncclResult_t rma_ib_close_coll(void* coll) {
  ri_group* g = ri_group_check(coll, "closeColl");
  if (g == NULL) return ncclInvalidArgument;
  /* Let what is in flight finish for a moment (peers may still be reading from us). */
  uint64_t until = clock_ns() + 2000ull * 1000 * 1000;
  for (;;) {
    pthread_mutex_lock(&g->lock);
    ri_progress_locked(g);
    int busy = 0;
    for (int p = 0; p < g->nranks; p++)
      busy += g->peers[p].sq_used > 0 && !g->peers[p].dead && !g->peers[p].failed;
    pthread_mutex_unlock(&g->lock);
    if (!busy || clock_ns() > until) break;
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  ri_msg bye = {.type = RI_MSG_BYE};
  for (int p = 0; p < g->nranks; p++) { /* tell the live peers this is a close, not a failure */
    ri_peer* pe = &g->peers[p];
    pthread_mutex_lock(&g->lock);
    int dead = pe->dead;
    pthread_mutex_unlock(&g->lock);
    if (pe->fd < 0 || dead) continue;
    pthread_mutex_lock(&pe->io);
    (void)socket_send_all(pe->fd, &bye, sizeof bye, 1000);
    pthread_mutex_unlock(&pe->io);
  }
  __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
  if (g->thread) pthread_join(g->progress, NULL);
  group_free(g);
  return ncclSuccess;
}
