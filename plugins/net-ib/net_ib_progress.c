/* Progress and completion: draining a comm's CQ, test(), and turning failures into results.
 *   - a completion error fails the connection: ncclRemoteError when the peer side is at fault
 *     or unreachable (retry/RNR counters exceeded, remote access/operation/request errors),
 *     ncclSystemError for local ones; the WARN carries the verbs status text;
 *   - an async event on one of the comm's QPs or its CQ, the port going down or the device
 *     failing: ncclSystemError;
 *   - the peer's end of the setup socket closing while a request is pending (its process died,
 *     or it closed the comm): ncclRemoteError. On a real fabric an RC QP only notices a dead
 *     peer when it sends; a receiver waiting for data would wait forever without this.
 * A request that completed is reported done even when the connection failed afterwards. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "net_ib_internal.h"
#include "util/clock.h"

#define IB_POLL_BATCH 16
#define IB_LIVE_CHECK_NS (10ull * 1000 * 1000)

int net_ib_status_is_remote(enum ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR: case IBV_WC_RNR_RETRY_EXC_ERR: case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_OP_ERR: case IBV_WC_REM_INV_REQ_ERR: case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR: case IBV_WC_BAD_RESP_ERR: case IBV_WC_REM_INV_RD_REQ_ERR:
      return 1;
    default:
      return 0;
  }
}

static const char* wr_kind(uint64_t wr_id) {
  switch (IB_WRID_KIND(wr_id)) {
    case IB_WR_DATA: return "data write";
    case IB_WR_DATA_RECV: return "data receive";
    case IB_WR_CTS: return "clear-to-send write";
    case IB_WR_CTS_RECV: return "clear-to-send receive";
    case IB_WR_FLUSH: return "flush read";
    default: return "work request";
  }
}

static ncclResult_t wc_failed(ib_comm* c, const struct ibv_wc* wc) {
  ncclResult_t res = net_ib_status_is_remote(wc->status) ? ncclRemoteError : ncclSystemError;
  if (net_ib_comm_fail(c, res))
    IB_WARN("NET/IB: %s:%d: %s on QP %#x failed: %s (status %d, vendor error %#x); peer %s",
            c->dev->name, c->dev->port, wr_kind(wc->wr_id), wc->qp_num,
            net_ib_wc_status_str(wc->status), (int)wc->status, wc->vendor_err, c->peer);
  return c->error;
}

static ib_req* req_of(ib_comm* c, uint64_t wr_id, int kind) {
  int idx = IB_WRID_IDX(wr_id);
  if (idx < 0 || idx >= c->nreqs || c->reqs[idx].kind != kind || c->reqs[idx].pending <= 0) {
    if (net_ib_comm_fail(c, ncclInternalError))
      IB_WARN("NET/IB: completion for an unknown request (wr_id %#llx) on the connection with %s",
              (unsigned long long)wr_id, c->peer);
    return NULL;
  }
  return &c->reqs[idx];
}

static ncclResult_t handle(ib_comm* c, const struct ibv_wc* wc) {
  if (wc->status != IBV_WC_SUCCESS) return wc_failed(c, wc);
  int kind = IB_WRID_KIND(wc->wr_id);
  int q = IB_WRID_QP(wc->wr_id);
  ib_req* r;
  switch (kind) {
    case IB_WR_DATA:
    case IB_WR_CTS:
    case IB_WR_FLUSH:
      r = req_of(c, wc->wr_id,
                 kind == IB_WR_DATA ? IB_REQ_SEND : kind == IB_WR_CTS ? IB_REQ_RECV : IB_REQ_FLUSH);
      if (r == NULL) return c->error;
      r->pending--;
      if (kind == IB_WR_DATA) weft_net_prof_stop(c->prof, &r->ev[q], IB_PROF_ID, NULL);
      return ncclSuccess;
    case IB_WR_CTS_RECV:
    case IB_WR_DATA_RECV:
      if (!(wc->wc_flags & IBV_WC_WITH_IMM) || q >= c->nqps) break;
      return kind == IB_WR_CTS_RECV ? net_ib_send_cts_arrived(c, be32toh(wc->imm_data), q)
                                    : net_ib_recv_data_arrived(c, be32toh(wc->imm_data),
                                                               wc->byte_len, q);
    default:
      break;
  }
  if (net_ib_comm_fail(c, ncclInternalError))
    IB_WARN("NET/IB: unexpected completion (wr_id %#llx, opcode %d) from %s",
            (unsigned long long)wc->wr_id, (int)wc->opcode, c->peer);
  return c->error;
}

ncclResult_t net_ib_poll(ib_comm* c) {
  if (c->error != ncclSuccess) return c->error;
  struct ibv_wc wc[IB_POLL_BATCH];
  for (int round = 0; round < 8; round++) {
    int n = net_ib_verbs()->poll_cq(c->cq, IB_POLL_BATCH, wc);
    if (n < 0) {
      if (net_ib_comm_fail(c, ncclSystemError))
        IB_WARN("NET/IB: %s:%d: ibv_poll_cq failed (%d); peer %s", c->dev->name, c->dev->port, n,
                c->peer);
      return c->error;
    }
    for (int i = 0; i < n; i++) {
      ncclResult_t res = handle(c, &wc[i]);
      if (res != ncclSuccess) return res;
    }
    if (n < IB_POLL_BATCH) break;
  }
  if (c->kind == IB_SEND && c->q_head != c->q_tail) return net_ib_send_progress(c);
  return ncclSuccess;
}

static ncclResult_t check_async(ib_comm* c) {
  int ev = __atomic_load_n(&c->async_event, __ATOMIC_ACQUIRE);
  if (ev >= 0) {
    if (net_ib_comm_fail(c, ncclSystemError))
      IB_WARN("NET/IB: %s:%d: connection with %s failed: async event \"%s\"", c->dev->name,
              c->dev->port, c->peer, net_ib_event_str((enum ibv_event_type)ev));
    return c->error;
  }
  if (__atomic_load_n(&c->dev->port_down, __ATOMIC_ACQUIRE)) {
    if (net_ib_comm_fail(c, ncclSystemError))
      IB_WARN("NET/IB: %s:%d: port is down (async event); connection with %s failed",
              c->dev->name, c->dev->port, c->peer);
    return c->error;
  }
  if (__atomic_load_n(&c->dev->hw->fatal, __ATOMIC_ACQUIRE)) {
    if (net_ib_comm_fail(c, ncclSystemError))
      IB_WARN("NET/IB: %s: device fatal error (async event); connection with %s failed",
              c->dev->name, c->peer);
    return c->error;
  }
  return ncclSuccess;
}

/* 1 when the peer's end of the setup socket is gone. Checked at most every 10 ms. */
static int peer_gone(ib_comm* c) {
  uint64_t now = clock_ns();
  if (now < c->next_live_check_ns || c->fd < 0) return 0;
  c->next_live_check_ns = now + IB_LIVE_CHECK_NS;
  char b;
  ssize_t k = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static int complete(const ib_req* r) {
  if (r->pending != 0) return 0;
  if (r->kind == IB_REQ_SEND) return r->posted;
  return r->kind != IB_REQ_RECV || r->slots_left == 0;
}

static ib_req* req_check(void* request) {
  ib_req* r = request;
  if (r == NULL || r->comm == NULL || net_ib_comm_check(r->comm, 0, "test") == NULL ||
      r < r->comm->reqs || r >= r->comm->reqs + r->comm->nreqs || r->kind == IB_REQ_FREE) {
    IB_WARN("NET/IB: test: invalid request %p (already completed?)", request);
    return NULL;
  }
  return r;
}

ncclResult_t net_ib_test(void* request, int* done, int* sizes) {
  ib_req* r = req_check(request);
  if (r == NULL || done == NULL) return ncclInternalError;
  ib_comm* c = r->comm;
  *done = 0;
  if (!complete(r)) {
    ncclResult_t res = net_ib_poll(c);
    if (res == ncclSuccess && !complete(r)) res = check_async(c);
    if (res == ncclSuccess && !complete(r) && peer_gone(c)) {
      /* What it sent before leaving may still be in the CQ. */
      res = net_ib_poll(c);
      if (res == ncclSuccess && !complete(r) && net_ib_comm_fail(c, ncclRemoteError))
        IB_WARN("NET/IB: %s:%d: %s closed the connection (process gone, or comm closed) with "
                "a %s pending", c->dev->name, c->dev->port, c->peer,
                r->kind == IB_REQ_SEND ? "send" : r->kind == IB_REQ_RECV ? "receive" : "flush");
      res = c->error;
    }
    if (!complete(r)) return res;
  }
  *done = 1;
  if (sizes) {
    if (r->kind == IB_REQ_RECV) {
      for (int j = 0; j < r->n; j++) sizes[j] = r->got[j] > (size_t)INT32_MAX ? INT32_MAX : (int)r->got[j];
    } else if (r->kind == IB_REQ_SEND) {
      sizes[0] = r->size > (size_t)INT32_MAX ? INT32_MAX : (int)r->size;
    } else {
      sizes[0] = 0;
    }
  }
  ncclResult_t out = r->error;
  if (r->kind == IB_REQ_RECV) c->recvs_posted--;
  net_ib_req_free(r);
  return out;
}

ncclResult_t net_ib_close_send(void* send_comm) {
  ib_comm* c = net_ib_comm_check(send_comm, IB_SEND, "closeSend");
  if (c == NULL) return ncclInternalError;
  net_ib_comm_destroy(c);
  return ncclSuccess;
}

ncclResult_t net_ib_close_recv(void* recv_comm) {
  ib_comm* c = net_ib_comm_check(recv_comm, IB_RECV, "closeRecv");
  if (c == NULL) return ncclInternalError;
  net_ib_comm_destroy(c);
  return ncclSuccess;
}
