/* The send side. A CTS entry becomes usable when the completion of the receiver's
 * write-with-immediate arrives (the immediate is its sequence number); it is copied out of the
 * FIFO then. Sends are matched to the oldest entry not fully sent — by tag within it, or in
 * slot order when the receive was posted without tags — and write the payload with immediate
 * into the receive buffer: one chunk per QP for large messages (at least IB_STRIPE_MIN each, at most
 * the port's message size), starting at a rotating QP. isend itself only queues: a send is
 * accepted before its receive is posted (*request = NULL only when the window of
 * IB_SEND_REQS requests is full), and matched in post order as entries arrive. A queued send
 * whose tag is in no unmatched slot of the oldest entry waits (the receive it belongs to is a
 * later one). */
#include <string.h>

#include "net_ib_internal.h"

ncclResult_t net_ib_send_cts_arrived(ib_comm* c, uint32_t seq, int q) {
  int fi = (int)(seq % IB_MAX_REQUESTS);
  ib_cts e;
  memcpy(&e, &c->fifo[fi], sizeof e);
  if (e.seq != seq || e.nslots < 1 || e.nslots > IB_MAX_RECVS || c->cts_valid[fi]) {
    if (net_ib_comm_fail(c, ncclInternalError))
      IB_WARN("NET/IB: clear-to-send %u from %s is inconsistent (entry says %u with %u slots%s)",
              seq, c->peer, e.seq, e.nslots, c->cts_valid[fi] ? ", previous one unused" : "");
    return ncclInternalError;
  }
  c->cts[fi] = e;
  memset(c->cts_matched[fi], 0, sizeof c->cts_matched[fi]);
  c->cts_valid[fi] = 1;
  return net_ib_post_recv_wr(c, q, IB_WR_CTS_RECV);
}

static ncclResult_t post_data(ib_comm* c, ib_req* r, char* data, size_t n, const void* mhandle,
                              const ib_cts_slot* s, uint32_t seq, int slot, int trunc) {
  const ib_mr* mh = mhandle;
  int nq = c->nqps;
  size_t max_msg = c->dev->max_msg;
  size_t k = 1;
  if (n > 0) {
    size_t by_stripe = n / IB_STRIPE_MIN ? n / IB_STRIPE_MIN : 1; /* chunks ≥ IB_STRIPE_MIN */
    size_t by_msg = (n + max_msg - 1) / max_msg;
    k = by_stripe < (size_t)nq ? by_stripe : (size_t)nq;
    if (k < by_msg) k = by_msg;
    if (k > (size_t)nq) {
      IB_WARN("NET/IB: isend of %zu bytes: above %d QPs x %zu bytes (maxP2pBytes)", n, nq, max_msg);
      return ncclInternalError;
    }
  }
  int nchunks = (int)k;
  size_t base = n / k, rem = n % k, off = 0;
  for (int i = 0; i < nchunks; i++) {
    size_t len = base + ((size_t)i < rem ? 1 : 0);
    int q = (c->next_qp + i) % nq;
    struct ibv_sge sge;
    sge.addr = (uint64_t)(uintptr_t)(data + off);
    sge.length = (uint32_t)len;
    sge.lkey = mh && mh->mr ? mh->mr->lkey : 0;
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = IB_WRID(IB_WR_DATA, q, r->idx);
    wr.sg_list = &sge;
    wr.num_sge = len ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htobe32(IB_IMM(seq, slot, nchunks, trunc));
    wr.wr.rdma.remote_addr = s->addr + off;
    wr.wr.rdma.rkey = s->rkey;
    if (r->phandle) {
      ncclProfilerNetIbDescr_v1_t d;
      ib_prof_descr(c, wr.wr_id, IBV_WR_RDMA_WRITE_WITH_IMM, q, len, &d);
      weft_net_prof_start(c->prof, r->phandle, IB_PROF_ID, &d, &r->ev[q]);
    }
    int e = net_ib_verbs()->post_send(c->qps[q], &wr, &bad);
    if (e) { /* the failure below ends the events of the request */
      if (net_ib_comm_fail(c, ncclSystemError))
        IB_WARN("NET/IB: %s:%d: ibv_post_send (RDMA write of %zu bytes) on QP %#x failed: %s "
                "(peer %s)", c->dev->name, c->dev->port, len, c->qps[q]->qp_num, strerror(e),
                c->peer);
      return ncclSystemError;
    }
    r->pending++;
    off += len;
  }
  c->next_qp = (c->next_qp + nchunks) % nq;
  return ncclSuccess;
}

/* Match the oldest queued send to the oldest CTS entry. 1 when it was posted, 0 when it must
 * wait (no entry yet, or no unmatched slot with its tag), -1 on failure. */
static int match_one(ib_comm* c, ib_req* r) {
  uint32_t seq = c->send_seq;
  int fi = (int)(seq % IB_MAX_REQUESTS);
  if (!c->cts_valid[fi] || c->cts[fi].seq != seq) return 0;
  const ib_cts* e = &c->cts[fi];
  int j = -1;
  for (int k = 0; k < e->nslots && j < 0; k++)
    if (!c->cts_matched[fi][k] && (e->any_tag || e->slot[k].tag == r->tag)) j = k;
  if (j < 0) return 0;
  const ib_cts_slot* s = &e->slot[j];
  size_t n = r->size;
  int trunc = 0;
  if (r->size > s->size) {
    n = (size_t)s->size;
    trunc = 1;
    r->error = ncclInternalError;
    IB_WARN("NET/IB: isend of %zu bytes (tag %d) to %s, whose receive has %llu bytes: message "
            "truncated", r->size, r->tag, c->peer, (unsigned long long)s->size);
  }
  if (post_data(c, r, r->data, n, r->mh, s, seq, j, trunc) != ncclSuccess) return -1;
  r->size = n;
  r->posted = 1;
  c->cts_matched[fi][j] = 1;
  int all = 1;
  for (int k = 0; k < e->nslots; k++) all &= c->cts_matched[fi][k];
  if (all) {
    c->cts_valid[fi] = 0;
    c->send_seq++;
  }
  return 1;
}

ncclResult_t net_ib_send_progress(ib_comm* c) {
  while (c->q_head != c->q_tail) {
    ib_req* r = &c->reqs[c->queue[c->q_head % (unsigned)c->nreqs]];
    int m = match_one(c, r);
    if (m < 0) return c->error != ncclSuccess ? c->error : ncclSystemError;
    if (m == 0) break;
    c->q_head++;
  }
  return ncclSuccess;
}

/* Sends are queued in post order and matched as CTS entries arrive (here, and in every later
 * isend and test): a send needs no posted receive to be accepted. */
ncclResult_t net_ib_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                          void* phandle, void** request) {
  ib_comm* c = net_ib_comm_check(send_comm, IB_SEND, "isend");
  if (c == NULL || request == NULL) return ncclInternalError;
  *request = NULL;
  if (c->error != ncclSuccess) return c->error;
  ib_mr* mh = NULL;
  if (size > 0) {
    mh = net_ib_mr_check(mhandle, "isend");
    if (mh == NULL) return ncclInternalError;
    if (mh->mr == NULL || (uintptr_t)data < (uintptr_t)mh->mr->addr ||
        (uintptr_t)data + size > (uintptr_t)mh->mr->addr + mh->mr->length) {
      IB_WARN("NET/IB: isend: %zu bytes at %p are outside the registration passed", size, data);
      return ncclInternalError;
    }
  }
  ib_req* r = net_ib_req_alloc(c, IB_REQ_SEND);
  if (r == NULL) return net_ib_poll(c); /* window full: progress, try again later */
  r->data = data;
  r->size = size;
  r->tag = tag;
  r->mh = mh;
  r->phandle = c->prof ? phandle : NULL;
  c->queue[c->q_tail++ % (unsigned)c->nreqs] = r->idx;
  *request = r;
  return net_ib_poll(c);
}
