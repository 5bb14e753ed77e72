/* A connection's verbs resources. Both kinds: a CQ and nqps RC QPs (their context is the comm's
 * async_event). Send comm: the CTS FIFO the receiver writes (registered for remote write) and
 * receives posted on QP 0 for the CTS immediates. Receive comm: a CTS staging entry
 * per request (the source of the CTS writes), receives posted on every QP for the data
 * immediates and, when GPU memory is supported, a flush QP connected to itself with a small
 * host buffer that flush reads land in. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_ib_internal.h"

#define IB_COMM_MAGIC 0x69625f636f6d6d31ull
#define IB_FLUSH_BYTES 4096

int net_ib_comm_fail(ib_comm* c, ncclResult_t res) {
  if (c->error != ncclSuccess) return 0;
  c->error = res;
  net_ib_prof_stop_all(c); /* no completion will end them now */
  return 1;
}

static void req_prof_stop(ib_comm* c, ib_req* r) {
  for (int i = 0; i < IB_MAX_QPS; i++) weft_net_prof_stop(c->prof, &r->ev[i], IB_PROF_ID, NULL);
}

void net_ib_prof_stop_all(ib_comm* c) {
  if (c->prof == NULL || c->reqs == NULL) return;
  for (int i = 0; i < c->nreqs; i++)
    if (c->reqs[i].kind != IB_REQ_FREE) req_prof_stop(c, &c->reqs[i]);
}

ib_comm* net_ib_comm_check(void* comm, int kind, const char* fn) {
  ib_comm* c = comm;
  if (c == NULL || c->magic != IB_COMM_MAGIC || (kind && c->kind != kind)) {
    IB_WARN("NET/IB: %s: invalid %s comm %p", fn,
            kind == IB_SEND ? "send" : kind == IB_RECV ? "receive" : "", comm);
    return NULL;
  }
  return c;
}

static void* alloc_pages(size_t len) {
  void* p = NULL;
  long pg = sysconf(_SC_PAGESIZE);
  size_t rounded = (len + (size_t)pg - 1) & ~((size_t)pg - 1);
  if (posix_memalign(&p, (size_t)pg, rounded) != 0) return NULL;
  memset(p, 0, rounded);
  return p;
}

ncclResult_t net_ib_reg_internal(ib_dev* d, void* buf, size_t len, int access, struct ibv_mr** out,
                                 const char* what) {
  struct ibv_mr* mr = net_ib_verbs()->reg_mr(d->hw->pd, buf, len, access);
  if (mr == NULL) {
    IB_WARN("NET/IB: %s:%d: registering the %s (%zu bytes) failed: %s", d->name, d->port, what,
            len, strerror(errno));
    return ncclSystemError;
  }
  *out = mr;
  return ncclSuccess;
}

ncclResult_t net_ib_comm_create(int kind, int dev, int nqps, ib_comm** out) {
  ib_dev* d = net_ib_dev_get(dev);
  if (d == NULL) return ncclInternalError;
  if (nqps < 1 || nqps > IB_MAX_QPS) {
    IB_WARN("NET/IB: %d QPs per connection is outside 1..%d", nqps, IB_MAX_QPS);
    return ncclInternalError;
  }
  const ib_verbs* v = net_ib_verbs();
  ib_comm* c = calloc(1, sizeof *c);
  if (c == NULL) {
    IB_WARN("NET/IB: out of memory allocating a connection");
    return ncclSystemError;
  }
  c->magic = IB_COMM_MAGIC;
  c->kind = kind;
  c->dev_index = dev;
  c->dev = d;
  c->fd = -1;
  c->async_event = -1;
  c->nqps = nqps;
  c->nreqs = kind == IB_SEND ? IB_SEND_REQS : IB_RECV_REQS;
  c->reqs = calloc((size_t)c->nreqs, sizeof *c->reqs);
  c->free_ids = calloc((size_t)c->nreqs, sizeof *c->free_ids);
  c->queue = calloc((size_t)c->nreqs, sizeof *c->queue);
  ncclResult_t res = ncclSystemError;
  if (c->reqs == NULL || c->free_ids == NULL || c->queue == NULL) {
    IB_WARN("NET/IB: out of memory allocating requests");
    goto fail;
  }
  for (int i = 0; i < c->nreqs; i++) {
    c->reqs[i].comm = c;
    c->reqs[i].idx = i;
    c->free_ids[c->nreqs - 1 - i] = i;
  }
  c->nfree = c->nreqs;
  int gpu = kind == IB_RECV && (d->ptr_support & NCCL_PTR_CUDA);
  c->cq_size = nqps * (IB_SQ_DEPTH + IB_RQ_DEPTH) + (gpu ? IB_RECV_REQS : 0) + 16;
  if (d->hw->attr.max_cqe > 0 && c->cq_size > d->hw->attr.max_cqe) c->cq_size = d->hw->attr.max_cqe;
  c->cq = v->create_cq(d->hw->ctx, c->cq_size, &c->async_event, NULL, 0);
  if (c->cq == NULL) {
    IB_WARN("NET/IB: %s:%d: ibv_create_cq of %d entries failed: %s", d->name, d->port, c->cq_size,
            strerror(errno));
    goto fail;
  }
  for (int i = 0; i < nqps; i++) {
    res = net_ib_qp_create(c, IBV_ACCESS_REMOTE_WRITE, &c->qps[i]);
    if (res != ncclSuccess) goto fail;
  }
  if (kind == IB_SEND) {
    size_t len = sizeof(ib_cts) * IB_MAX_REQUESTS;
    c->fifo = alloc_pages(len);
    res = ncclSystemError;
    if (c->fifo == NULL) goto fail;
    res = net_ib_reg_internal(d, c->fifo, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                              &c->fifo_mr, "CTS FIFO");
    if (res != ncclSuccess) goto fail;
  } else {
    size_t len = sizeof(ib_cts) * (size_t)c->nreqs;
    c->staging = alloc_pages(len);
    res = ncclSystemError;
    if (c->staging == NULL) goto fail;
    res = net_ib_reg_internal(d, c->staging, len, IBV_ACCESS_LOCAL_WRITE, &c->staging_mr,
                              "CTS staging area");
    if (res != ncclSuccess) goto fail;
    if (gpu) {
      c->flush_buf = alloc_pages(IB_FLUSH_BYTES);
      res = ncclSystemError;
      if (c->flush_buf == NULL) goto fail;
      res = net_ib_reg_internal(d, c->flush_buf, IB_FLUSH_BYTES, IBV_ACCESS_LOCAL_WRITE,
                                &c->flush_mr, "flush buffer");
      if (res != ncclSuccess) goto fail;
      res = net_ib_qp_create(c, IBV_ACCESS_REMOTE_READ, &c->flush_qp);
      if (res != ncclSuccess) goto fail;
    }
  }
  *out = c;
  return ncclSuccess;
fail:
  net_ib_comm_destroy(c);
  return res == ncclSuccess ? ncclSystemError : res;
}

void net_ib_comm_info(const ib_comm* c, ib_conn_info* info) {
  const ib_dev* d = c->dev;
  memset(info, 0, sizeof *info);
  info->magic = IB_INFO_MAGIC;
  info->version = IB_PROTO_VERSION;
  info->nqps = (uint32_t)c->nqps;
  for (int i = 0; i < c->nqps; i++) info->qpn[i] = c->qps[i]->qp_num;
  memcpy(info->gid, d->gid.raw, 16);
  info->lid = d->lid;
  info->link_layer = (uint32_t)d->link_layer;
  info->mtu = (uint32_t)d->mtu;
  info->roce_version = (uint32_t)d->roce_version;
  if (c->fifo_mr) {
    info->fifo_addr = (uint64_t)(uintptr_t)c->fifo;
    info->fifo_rkey = c->fifo_mr->rkey;
  }
}

ncclResult_t net_ib_post_recv_wr(ib_comm* c, int q, int kind) {
  struct ibv_recv_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = IB_WRID(kind, q, 0);
  wr.num_sge = 0; /* immediates only: no data lands in a receive buffer */
  int e = net_ib_verbs()->post_recv(c->qps[q], &wr, &bad);
  if (e) {
    if (net_ib_comm_fail(c, ncclSystemError))
      IB_WARN("NET/IB: %s:%d: ibv_post_recv on QP %#x failed: %s (peer %s)", c->dev->name,
              c->dev->port, c->qps[q]->qp_num, strerror(e), c->peer);
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t net_ib_comm_connect_qps(ib_comm* c, const ib_conn_info* remote, int traffic_class) {
  if (remote->nqps != (uint32_t)c->nqps) {
    IB_WARN("NET/IB: peer %s has %u QPs for this connection, we have %d", c->peer, remote->nqps,
            c->nqps);
    return ncclInternalError;
  }
  ib_dev* d = c->dev;
  enum ibv_mtu mtu = (enum ibv_mtu)remote->mtu < d->mtu ? (enum ibv_mtu)remote->mtu : d->mtu;
  struct ibv_ah_attr ah;
  ncclResult_t res = net_ib_make_ah(d, remote, traffic_class, &ah);
  if (res != ncclSuccess) return res;
  for (int i = 0; i < c->nqps; i++) {
    res = net_ib_qp_rtr(d, c->qps[i], remote->qpn[i], &ah, mtu);
    if (res == ncclSuccess) res = net_ib_qp_rts(d, c->qps[i]);
    if (res != ncclSuccess) return res;
  }
  if (c->kind == IB_SEND) {
    for (int k = 0; k < IB_MAX_REQUESTS + 16; k++) {
      res = net_ib_post_recv_wr(c, 0, IB_WR_CTS_RECV);
      if (res != ncclSuccess) return res;
    }
    return ncclSuccess;
  }
  c->remote_fifo = remote->fifo_addr;
  c->remote_fifo_rkey = remote->fifo_rkey;
  for (int i = 0; i < c->nqps; i++)
    for (int k = 0; k < IB_RQ_DEPTH; k++) {
      res = net_ib_post_recv_wr(c, i, IB_WR_DATA_RECV);
      if (res != ncclSuccess) return res;
    }
  if (c->flush_qp) {
    /* The flush QP reads from this process's own memory: connected to itself. */
    ib_conn_info self;
    net_ib_comm_info(c, &self);
    struct ibv_ah_attr own;
    res = net_ib_make_ah(d, &self, traffic_class, &own);
    if (res == ncclSuccess) res = net_ib_qp_rtr(d, c->flush_qp, c->flush_qp->qp_num, &own, d->mtu);
    if (res == ncclSuccess) res = net_ib_qp_rts(d, c->flush_qp);
    if (res != ncclSuccess) return res;
  }
  return ncclSuccess;
}

void net_ib_comm_destroy(ib_comm* c) {
  if (c == NULL) return;
  net_ib_prof_stop_all(c); /* requests still in flight */
  const ib_verbs* v = net_ib_verbs();
  for (int i = 0; i < IB_MAX_QPS; i++) {
    if (c->qps[i]) {
      int e = v->destroy_qp(c->qps[i]);
      if (e) IB_WARN("NET/IB: ibv_destroy_qp failed: %s", strerror(e));
    }
    c->qps[i] = NULL;
  }
  if (c->flush_qp) {
    int e = v->destroy_qp(c->flush_qp);
    if (e) IB_WARN("NET/IB: ibv_destroy_qp (flush) failed: %s", strerror(e));
  }
  if (c->cq) {
    int e = v->destroy_cq(c->cq);
    if (e) IB_WARN("NET/IB: ibv_destroy_cq failed: %s", strerror(e));
  }
  if (c->fifo_mr) v->dereg_mr(c->fifo_mr);
  if (c->staging_mr) v->dereg_mr(c->staging_mr);
  if (c->flush_mr) v->dereg_mr(c->flush_mr);
  free(c->fifo);
  free(c->staging);
  free(c->flush_buf);
  if (c->fd >= 0) close(c->fd);
  free(c->reqs);
  free(c->free_ids);
  free(c->queue);
  c->magic = 0;
  free(c);
}

ib_req* net_ib_req_alloc(ib_comm* c, int kind) {
  if (c->nfree == 0) return NULL;
  ib_req* r = &c->reqs[c->free_ids[--c->nfree]];
  int idx = r->idx;
  memset(r, 0, sizeof *r);
  r->comm = c;
  r->idx = idx;
  r->kind = kind;
  r->error = ncclSuccess;
  return r;
}

void net_ib_req_free(ib_req* r) {
  ib_comm* c = r->comm;
  if (c->prof) req_prof_stop(c, r);
  r->kind = IB_REQ_FREE;
  c->free_ids[c->nfree++] = r->idx;
}
