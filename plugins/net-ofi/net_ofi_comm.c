/* A comm's lifecycle and its operations: creation (request pool, control region and its
 * registration), the post queue (operations the provider did not take yet, kept in post order
 * so same-tag receives and sends stay FIFO), completion handling, failure, liveness probes and
 * close. Everything here runs with nic->lock held unless it says otherwise. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_ofi.h"
#include "util/clock.h"

/* How long close waits for the provider to hand back cancelled operations. */
#define OFI_CLOSE_WAIT_MS 200

static const char* kind_name(int kind) {
  return kind == OFI_SEND ? "send" : kind == OFI_RECV ? "recv" : "listen";
}

static int op_is_tx(int kind) {
  return kind == OFI_OP_SEND || kind == OFI_OP_CTRL_SEND || kind == OFI_OP_PROBE_SEND;
}

/* ---- NetPlugin events ---- */

static void prof_descr(const ofi_op* op, size_t len, weftProfilerNetOfiDescr_v1_t* d) {
  memset(d, 0, sizeof *d);
  d->type = weftProfileOfiOp;
  d->op.op = op->kind == OFI_OP_SEND ? weftProfileOfiTsend : weftProfileOfiTrecv;
  d->op.device = op->comm->nic->dev;
  d->op.length = len;
  d->op.tag = op->tag;
  d->op.peer = (uint64_t)op->addr;
  d->op.provider = net_ofi_provider();
}

void net_ofi_prof_start(ofi_op* op) {
  weftProfilerNetOfiDescr_v1_t d;
  prof_descr(op, op->len, &d);
  weft_net_prof_start(op->comm->prof, op->phandle, OFI_PROF_ID, &d, &op->ev);
  op->phandle = NULL;
}

void net_ofi_prof_stop(ofi_op* op, size_t len) {
  if (op->ev == NULL) return;
  weftProfilerNetOfiDescr_v1_t d;
  if (op->kind == OFI_OP_RECV) prof_descr(op, len, &d);
  weft_net_prof_stop(op->comm->prof, &op->ev, OFI_PROF_ID, op->kind == OFI_OP_RECV ? &d : NULL);
}

/* Every open event of the comm's requests (failure, close). */
static void prof_stop_all(ofi_comm* c) {
  if (c->prof == NULL || c->reqs == NULL) return;
  for (int i = 0; i < c->window; i++) {
    ofi_req* r = (ofi_req*)(c->reqs + (size_t)i * c->req_stride);
    if (r->state == OFI_REQ_FREE) continue;
    for (int k = 0; k < r->n; k++) weft_net_prof_stop(c->prof, &r->op[k].ev, OFI_PROF_ID, NULL);
  }
}

ofi_comm* net_ofi_comm_check(void* comm, int kind, const char* fn) {
  ofi_comm* c = comm;
  if (c == NULL || c->magic != OFI_COMM_MAGIC || (kind && c->kind != kind) || c->closing) {
    OFI_WARN("NET/OFI: %s: invalid %s comm %p", fn, kind ? kind_name(kind) : "", comm);
    return NULL;
  }
  return c;
}

ncclResult_t net_ofi_comm_create(ofi_nic* nic, int kind, ofi_comm** out) {
  ofi_comm* c = calloc(1, sizeof *c);
  if (c == NULL) goto oom;
  c->magic = OFI_COMM_MAGIC;
  c->kind = kind;
  c->nic = nic;
  c->id = net_ofi_nic_new_id(nic);
  c->peer = FI_ADDR_UNSPEC;
  c->last_activity_ns = clock_ns();
  long page = sysconf(_SC_PAGESIZE);
  size_t ctrl_len = (sizeof(ofi_ctrl_region) + (size_t)page - 1) / (size_t)page * (size_t)page;
  if (posix_memalign((void**)&c->ctrl, (size_t)page, ctrl_len) != 0) goto oom;
  memset(c->ctrl, 0, ctrl_len);
  int nops = OFI_LISTEN_BUFS + 1;
  if (kind != OFI_LISTEN) {
    int n = kind == OFI_SEND ? 1 : OFI_MAX_RECVS;
    c->window = kind == OFI_SEND ? OFI_SEND_WINDOW : OFI_RECV_WINDOW;
    c->req_stride = (sizeof(ofi_req) + (size_t)n * sizeof(ofi_op) + 63) & ~(size_t)63;
    c->reqs = calloc((size_t)c->window, c->req_stride);
    c->free_ids = malloc((size_t)c->window * sizeof(int));
    if (c->reqs == NULL || c->free_ids == NULL) goto oom;
    for (int i = 0; i < c->window; i++) c->free_ids[i] = c->window - 1 - i;
    c->nfree = c->window;
    nops += c->window * n;
  }
  c->qcap = 1;
  while (c->qcap < (unsigned)nops) c->qcap <<= 1;
  c->q = malloc(c->qcap * sizeof *c->q);
  if (c->q == NULL) goto oom;
  if (nic->mr_mode & FI_MR_LOCAL) {
    ncclResult_t res = net_ofi_mr_get(nic, c->ctrl, sizeof *c->ctrl, NCCL_PTR_HOST, &c->ctrl_mh);
    if (res != ncclSuccess) {
      free(c->q);
      free(c->free_ids);
      free(c->reqs);
      free(c->ctrl);
      free(c);
      return res;
    }
  }
  for (int i = 0; i < OFI_LISTEN_BUFS; i++) {
    c->ctrl_op[i].comm = c;
    c->ctrl_op[i].desc = ofi_mr_desc(c->ctrl_mh);
  }
  c->probe_rx_op.comm = c->probe_tx_op.comm = c;
  c->probe_rx_op.kind = OFI_OP_PROBE_RECV;
  c->probe_tx_op.kind = OFI_OP_PROBE_SEND;
  c->probe_rx_op.desc = c->probe_tx_op.desc = ofi_mr_desc(c->ctrl_mh);
  c->next = nic->comms;
  nic->comms = c;
  *out = c;
  return ncclSuccess;
oom:
  OFI_WARN("NET/OFI: out of memory creating a %s comm", kind_name(kind));
  if (c) {
    free(c->q);
    free(c->free_ids);
    free(c->reqs);
    free(c->ctrl);
    free(c);
  }
  return ncclSystemError;
}

ncclResult_t net_ofi_comm_fail(ofi_comm* c, ncclResult_t res, const char* fmt, ...) {
  if (c->error != ncclSuccess) return res;
  c->error = res;
  prof_stop_all(c); /* what the provider still holds may never complete */
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  OFI_WARN("NET/OFI: %s comm %s %s on %s (%s): %s", kind_name(c->kind),
           c->kind == OFI_RECV ? "from" : "to", c->peer_str, c->nic->d->name, net_ofi_provider(),
           text);
  return res;
}

/* ---- requests ---- */

ofi_req* net_ofi_req_get(ofi_comm* c, int kind, int n) {
  if (c->nfree == 0) return NULL;
  int id = c->free_ids[--c->nfree];
  ofi_req* r = (ofi_req*)(c->reqs + (size_t)id * c->req_stride);
  memset(r, 0, sizeof *r + (size_t)n * sizeof(ofi_op));
  r->magic = OFI_REQ_MAGIC;
  r->state = OFI_REQ_ACTIVE;
  r->kind = kind;
  r->n = n;
  r->comm = c;
  for (int i = 0; i < n; i++) {
    r->op[i].comm = c;
    r->op[i].req = r;
    r->op[i].slot = (uint8_t)i;
  }
  return r;
}

/* Drop a request's ops that are still queued (never posted). */
static void dequeue_req(ofi_comm* c, ofi_req* r) {
  unsigned w = c->qhead;
  for (unsigned i = c->qhead; i != c->qtail; i++) {
    ofi_op* op = c->q[i & (c->qcap - 1)];
    if (op->req == r) {
      op->queued = 0;
      continue;
    }
    c->q[w++ & (c->qcap - 1)] = op;
  }
  c->qtail = w;
}

void net_ofi_req_put(ofi_req* r) {
  ofi_comm* c = r->comm;
  dequeue_req(c, r);
  if (r->nposted > 0) {
    /* The provider still holds buffers of it: free once they come back. */
    r->state = OFI_REQ_ZOMBIE;
    return;
  }
  r->state = OFI_REQ_FREE;
  r->magic = 0;
  c->free_ids[c->nfree++] = (int)(((char*)r - c->reqs) / (ptrdiff_t)c->req_stride);
}

/* ---- posting ---- */

static ssize_t post_one(ofi_comm* c, ofi_op* op) {
  ofi_nic* nic = c->nic;
  int tx = op_is_tx(op->kind);
  int data = op->kind == OFI_OP_SEND || op->kind == OFI_OP_RECV;
  if (data && (tx ? nic->tx_posted >= nic->tx_limit : nic->rx_posted >= nic->rx_limit))
    return -FI_EAGAIN;
  if ((nic->mr_mode & FI_MR_LOCAL) && op->len > 0 && op->desc == NULL) {
    /* Every buffer must be registered: a path that forgot is a bug of ours. */
    OFI_WARN("NET/OFI: internal: a %zu-byte %s without a registration descriptor", op->len,
             tx ? "send" : "receive");
    return -FI_EINVAL;
  }
  ssize_t rc = tx ? net_ofi_fi.tsend(nic->ep, op->buf, op->len, op->desc, op->addr, op->tag,
                                     &op->fctx)
                  : net_ofi_fi.trecv(nic->ep, op->buf, op->len, op->desc, op->addr, op->tag,
                                     op->ignore, &op->fctx);
  if (rc == 0) {
    if (op->phandle) net_ofi_prof_start(op);
    op->posted = 1;
    if (tx)
      nic->tx_posted++;
    else
      nic->rx_posted++;
    c->outstanding++;
    if (op->req) op->req->nposted++;
  }
  return rc;
}

void net_ofi_op_queue(ofi_comm* c, ofi_op* op) {
  op->queued = 1;
  c->q[c->qtail++ & (c->qcap - 1)] = op;
}

static const char* op_name(int kind) {
  switch (kind) {
    case OFI_OP_SEND: return "send";
    case OFI_OP_RECV: return "receive";
    case OFI_OP_CONNECT_RECV: return "connect-request receive";
    case OFI_OP_ACCEPT_RECV: return "accept-reply receive";
    case OFI_OP_CTRL_SEND: return "connection message";
    case OFI_OP_PROBE_RECV: return "probe receive";
    default: return "probe";
  }
}

ncclResult_t net_ofi_post_queued(ofi_comm* c) {
  while (c->qhead != c->qtail && c->error == ncclSuccess) {
    ofi_op* op = c->q[c->qhead & (c->qcap - 1)];
    ssize_t rc = post_one(c, op);
    if (rc == -FI_EAGAIN) break;
    c->qhead++;
    op->queued = 0;
    if (rc != 0) {
      ncclResult_t res = net_ofi_result((int)rc);
      if (op->req) op->req->error = res;
      return net_ofi_comm_fail(c, res, "fi_%s of a %zu-byte %s failed: %s",
                               op_is_tx(op->kind) ? "tsend" : "trecv", op->len,
                               op_name(op->kind), net_ofi_strerror((int)rc));
    }
  }
  return c->error;
}

/* ---- completions ---- */

void net_ofi_op_complete(ofi_op* op, size_t len, const struct fi_cq_err_entry* err) {
  ofi_comm* c = op->comm;
  ofi_nic* nic = c->nic;
  if (op->ev) net_ofi_prof_stop(op, err ? 0 : len);
  if (op->posted) {
    op->posted = 0;
    if (op_is_tx(op->kind))
      nic->tx_posted--;
    else
      nic->rx_posted--;
    c->outstanding--;
    if (op->req) op->req->nposted--;
  }
  if (c->closing) {
    /* A comm closed while the provider still held some of its operations. */
    if (c->outstanding == 0 && c->close_done) net_ofi_comm_free(c);
    return;
  }
  char detail[320] = "";
  if (err) {
    char pbuf[192];
    const char* ptext = net_ofi_fi.cq_strerror(nic->cq, err->prov_errno, err->err_data, pbuf,
                                               sizeof pbuf);
    snprintf(detail, sizeof detail, "%s (provider error %d: %s)", net_ofi_strerror(err->err),
             err->prov_errno, ptext ? ptext : "?");
  }
  if (!err) c->last_activity_ns = clock_ns();
  switch (op->kind) {
    case OFI_OP_SEND:
    case OFI_OP_RECV: {
      ofi_req* r = op->req;
      if (r->state == OFI_REQ_ZOMBIE) {
        if (r->nposted == 0) {
          r->state = OFI_REQ_ACTIVE;
          net_ofi_req_put(r);
        }
        return;
      }
      if (err && err->err == FI_ETRUNC && op->kind == OFI_OP_RECV) {
        if (err->olen)
          OFI_WARN("NET/OFI: recv comm from %s on %s (%s): message truncated: the send is %zu "
                   "bytes longer than the %zu-byte receive",
                   c->peer_str, nic->d->name, net_ofi_provider(), err->olen, op->len);
        else
          OFI_WARN("NET/OFI: recv comm from %s on %s (%s): message truncated: the send is longer "
                   "than the %zu-byte receive (%s)",
                   c->peer_str, nic->d->name, net_ofi_provider(), op->len, detail);
        r->error = ncclInternalError;
      } else if (err) {
        r->error = net_ofi_comm_fail(c, net_ofi_result(err->err), "%s of %zu bytes failed: %s",
                                     op_name(op->kind), op->len, detail);
      } else if (op->kind == OFI_OP_RECV) {
        r->sizes[op->slot] = len > INT_MAX ? INT_MAX : (int)len;
      }
      r->ndone++;
      return;
    }
    case OFI_OP_CONNECT_RECV:
      if (err) {
        net_ofi_comm_fail(c, net_ofi_result(err->err), "connect-request receive failed: %s",
                          detail);
        return;
      }
      net_ofi_connect_arrived(op);
      return;
    case OFI_OP_ACCEPT_RECV:
      if (err) {
        net_ofi_comm_fail(c, net_ofi_result(err->err), "accept-reply receive failed: %s", detail);
        return;
      }
      net_ofi_accept_arrived(op);
      return;
    case OFI_OP_CTRL_SEND:
      if (err)
        net_ofi_comm_fail(c, net_ofi_result(err->err), "%s failed: %s",
                          c->kind == OFI_SEND ? "connect request" : "accept reply", detail);
      return;
    case OFI_OP_PROBE_RECV:
      if (err) {
        net_ofi_comm_fail(c, net_ofi_result(err->err), "probe receive failed: %s", detail);
        return;
      }
      net_ofi_op_queue(c, op);
      return;
    case OFI_OP_PROBE_SEND:
      c->probe_inflight = 0;
      if (err)
        net_ofi_comm_fail(c, ncclRemoteError, "the peer did not take a liveness probe: %s",
                          detail);
      return;
    default:
      return;
  }
}

/* ---- liveness ---- */

void net_ofi_liveness(ofi_comm* c) {
  if (c->error != ncclSuccess || c->kind == OFI_LISTEN || net_ofi_cfg.probe_ms <= 0) return;
  if (c->kind == OFI_SEND && !c->connected) return;
  uint64_t now = clock_ns();
  if (c->nfree == c->window) {
    /* Nothing pending: nothing to wait for. */
    c->last_activity_ns = now;
    c->probe_refused_since_ns = 0;
    return;
  }
  if (now - c->last_activity_ns < (uint64_t)net_ofi_cfg.probe_ms * 1000000ull) return;
  if (net_ofi_cfg.pid_check && net_ofi_ident_gone(&c->peer_ident)) {
    net_ofi_comm_fail(c, ncclRemoteError, "the peer process (pid %d, this host) has exited",
                      (int)c->peer_ident.pid);
    return;
  }
  if (c->probe_inflight) return;
  ofi_op* op = &c->probe_tx_op;
  op->buf = c->ctrl->probe_tx;
  op->len = 0;
  op->addr = c->peer;
  op->tag = ofi_tag(c->nic, OFI_KIND_CTRL, c->peer_id, OFI_CTRL_PROBE);
  ssize_t rc = post_one(c, op);
  if (rc == 0) {
    c->probe_inflight = 1;
    c->probe_refused_since_ns = 0;
    c->last_activity_ns = now;
    return;
  }
  if (rc != -FI_EAGAIN) {
    net_ofi_comm_fail(c, net_ofi_result((int)rc), "liveness probe: fi_tsend failed: %s",
                      net_ofi_strerror((int)rc));
    return;
  }
  if (c->probe_refused_since_ns == 0) {
    c->probe_refused_since_ns = now;
  } else if (now - c->probe_refused_since_ns >= (uint64_t)net_ofi_cfg.peer_timeout_ms * 1000000ull) {
    net_ofi_comm_fail(c, ncclRemoteError,
                      "the peer is unreachable: the provider refused a liveness probe for %d ms "
                      "(fi_tsend: %s; WEFT_OFI_PEER_TIMEOUT_MS)",
                      net_ofi_cfg.peer_timeout_ms, net_ofi_strerror(-FI_EAGAIN));
  }
}

/* ---- close ---- */

static void free_comm(ofi_comm* c) {
  ofi_nic* nic = c->nic;
  for (ofi_comm** p = &nic->comms; *p; p = &(*p)->next) {
    if (*p == c) {
      *p = c->next;
      break;
    }
  }
  if (c->ctrl_mh) net_ofi_mr_put(nic, c->ctrl_mh);
  c->magic = 0;
  free(c->q);
  free(c->free_ids);
  free(c->reqs);
  free(c->ctrl);
  free(c);
}

void net_ofi_comm_free(ofi_comm* c) { free_comm(c); }

static void cancel_op(ofi_comm* c, ofi_op* op) {
  if (op->posted) net_ofi_fi.cancel(&c->nic->ep->fid, &op->fctx);
}

void net_ofi_comm_close(ofi_comm* c) {
  ofi_nic* nic = c->nic;
  pthread_mutex_lock(&nic->lock);
  c->closing = 1;
  c->qhead = c->qtail = 0;
  for (int i = 0; i < OFI_LISTEN_BUFS; i++) cancel_op(c, &c->ctrl_op[i]);
  cancel_op(c, &c->probe_rx_op);
  cancel_op(c, &c->probe_tx_op);
  for (int i = 0; i < c->window; i++) {
    ofi_req* r = (ofi_req*)(c->reqs + (size_t)i * c->req_stride);
    if (r->state == OFI_REQ_FREE) continue;
    for (int k = 0; k < r->n; k++) cancel_op(c, &r->op[k]);
  }
  uint64_t deadline = clock_ns() + OFI_CLOSE_WAIT_MS * 1000000ull;
  weft_backoff b = {0};
  while (c->outstanding > 0 && clock_ns() < deadline && net_ofi_progress(nic) == ncclSuccess) {
    if (c->outstanding == 0) break;
    pthread_mutex_unlock(&nic->lock);
    backoff_wait(&b);
    pthread_mutex_lock(&nic->lock);
  }
  prof_stop_all(c); /* the core finalizes its profiler after the close */
  if (c->outstanding == 0) {
    free_comm(c);
  } else {
    /* The provider keeps some operations (sends it cannot cancel): the comm's memory stays
     * until they complete (then the completion reaps it) or the endpoint closes. */
    OFI_INFO(NCCL_NET, "NET/OFI: %s comm closed with %d operation(s) still in the provider",
             kind_name(c->kind), c->outstanding);
    c->close_done = 1;
  }
  pthread_mutex_unlock(&nic->lock);
  net_ofi_nic_release(nic);
}
