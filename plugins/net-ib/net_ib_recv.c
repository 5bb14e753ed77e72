/* The receive side. irecv fills the request's staging entry (address, size, R_Key and tag of
 * each slot) and RDMA-writes it with immediate = sequence into FIFO slot seq % 32 of the sender.
 * Data arrives as writes with immediate straight into the buffers; each immediate names the
 * request (low 8 bits of its sequence), the slot, how many chunks make the slot and whether the
 * sender truncated. iflush reads one byte of the last GPU buffer back through a QP connected to
 * this process itself: that read completes only after the NIC's earlier writes to the buffer
 * are visible to the GPU (GPUDirect RDMA consistency). Host memory needs no flush. */
#include <stddef.h>
#include <string.h>

#include "net_ib_internal.h"

static ncclResult_t check_buffer(const ib_mr* m, void* data, size_t size, int slot) {
  if (size == 0) return ncclSuccess;
  if (m->mr == NULL || (uintptr_t)data < (uintptr_t)m->mr->addr ||
      (uintptr_t)data + size > (uintptr_t)m->mr->addr + m->mr->length) {
    IB_WARN("NET/IB: irecv: slot %d (%zu bytes at %p) is outside the registration passed", slot,
            size, data);
    return ncclInternalError;
  }
  return ncclSuccess;
}

ncclResult_t net_ib_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                          void** mhandles, void** phandles, void** request) {
  ib_comm* c = net_ib_comm_check(recv_comm, IB_RECV, "irecv");
  if (c == NULL || request == NULL) return ncclInternalError;
  if (n < 1 || n > IB_MAX_RECVS || data == NULL || sizes == NULL) {
    IB_WARN("NET/IB: irecv: n = %d (1 to %d) with data %p and sizes %p", n, IB_MAX_RECVS,
            (void*)data, (void*)sizes);
    return ncclInternalError;
  }
  *request = NULL;
  if (c->error != ncclSuccess) return c->error;
  uint32_t seq = c->recv_seq;
  if (c->recvs_posted >= IB_MAX_REQUESTS || c->by_seq[seq & 0xff] != NULL) return ncclSuccess;
  uint32_t rkeys[IB_MAX_RECVS];
  for (int j = 0; j < n; j++) {
    rkeys[j] = 0;
    if (sizes[j] == 0) continue;
    const ib_mr* m = net_ib_mr_check(mhandles ? mhandles[j] : NULL, "irecv");
    if (m == NULL) return ncclInternalError;
    ncclResult_t res = check_buffer(m, data[j], sizes[j], j);
    if (res != ncclSuccess) return res;
    rkeys[j] = m->mr->rkey;
  }
  ib_req* r = net_ib_req_alloc(c, IB_REQ_RECV);
  if (r == NULL) return ncclSuccess;
  ib_cts* e = &c->staging[r->idx];
  memset(e, 0, sizeof *e);
  e->seq = seq;
  e->nslots = (uint16_t)n;
  e->any_tag = tags == NULL;
  for (int j = 0; j < n; j++) {
    e->slot[j].addr = (uint64_t)(uintptr_t)data[j];
    e->slot[j].size = sizes[j];
    e->slot[j].rkey = rkeys[j];
    e->slot[j].tag = tags ? tags[j] : 0;
  }
  struct ibv_sge sge;
  sge.addr = (uint64_t)(uintptr_t)e;
  sge.length = (uint32_t)(offsetof(ib_cts, slot) + (size_t)n * sizeof(ib_cts_slot));
  sge.lkey = c->staging_mr->lkey;
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = IB_WRID(IB_WR_CTS, 0, r->idx);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htobe32(seq);
  wr.wr.rdma.remote_addr = c->remote_fifo + (uint64_t)(seq % IB_MAX_REQUESTS) * sizeof(ib_cts);
  wr.wr.rdma.rkey = c->remote_fifo_rkey;
  if (c->prof && phandles)
    for (int j = 0; j < n; j++) {
      if (phandles[j] == NULL) continue;
      ncclProfilerNetIbDescr_v1_t d;
      ib_prof_descr(c, wr.wr_id, IBV_WC_RECV_RDMA_WITH_IMM, 0, sizes[j], &d);
      weft_net_prof_start(c->prof, phandles[j], IB_PROF_ID, &d, &r->ev[j]);
    }
  int err = net_ib_verbs()->post_send(c->qps[0], &wr, &bad);
  if (err) {
    net_ib_req_free(r); /* ends its events */
    if (net_ib_comm_fail(c, ncclSystemError))
      IB_WARN("NET/IB: %s:%d: ibv_post_send (clear-to-send) on QP %#x failed: %s (peer %s)",
              c->dev->name, c->dev->port, c->qps[0]->qp_num, strerror(err), c->peer);
    return ncclSystemError;
  }
  r->pending = 1;
  r->n = n;
  r->seq = seq;
  r->slots_left = n;
  c->by_seq[seq & 0xff] = r;
  c->recv_seq++;
  c->recvs_posted++;
  *request = r;
  return ncclSuccess;
}

ncclResult_t net_ib_recv_data_arrived(ib_comm* c, uint32_t imm, uint32_t len, int q) {
  ib_req* r = c->by_seq[IB_IMM_SEQ(imm)];
  int slot = (int)IB_IMM_SLOT(imm);
  int nchunks = (int)IB_IMM_NCHUNKS(imm);
  if (r == NULL || r->kind != IB_REQ_RECV || slot >= r->n || r->seen[slot] >= nchunks) {
    if (net_ib_comm_fail(c, ncclInternalError))
      IB_WARN("NET/IB: data from %s that no posted receive expects (immediate %#x)", c->peer, imm);
    return ncclInternalError;
  }
  r->got[slot] += len;
  r->seen[slot]++;
  if (IB_IMM_TRUNC(imm) && r->error == ncclSuccess) {
    r->error = ncclInternalError;
    IB_WARN("NET/IB: %s sent more than the %llu bytes of receive slot %d: message truncated",
            c->peer, (unsigned long long)c->staging[r->idx].slot[slot].size, slot);
  }
  if (r->seen[slot] == nchunks && r->ev[slot]) { /* the slot is complete: its event ends */
    ncclProfilerNetIbDescr_v1_t d;
    ib_prof_descr(c, IB_WRID(IB_WR_CTS, 0, r->idx), IBV_WC_RECV_RDMA_WITH_IMM, 0, r->got[slot],
                  &d);
    weft_net_prof_stop(c->prof, &r->ev[slot], IB_PROF_ID, &d);
  }
  if (r->seen[slot] == nchunks && --r->slots_left == 0) c->by_seq[r->seq & 0xff] = NULL;
  return net_ib_post_recv_wr(c, q, IB_WR_DATA_RECV);
}

ncclResult_t net_ib_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                           void** request) {
  ib_comm* c = net_ib_comm_check(recv_comm, IB_RECV, "iflush");
  if (c == NULL || request == NULL) return ncclInternalError;
  *request = NULL;
  if (c->error != ncclSuccess) return c->error;
  if (c->flush_qp == NULL || n < 1 || n > IB_MAX_RECVS || data == NULL || sizes == NULL ||
      mhandles == NULL)
    return ncclSuccess;
  int last = -1;
  for (int j = 0; j < n; j++) {
    const ib_mr* m = mhandles[j] ? net_ib_mr_check(mhandles[j], "iflush") : NULL;
    if (sizes[j] > 0 && m && m->type != NCCL_PTR_HOST && m->mr) last = j;
  }
  if (last < 0) return ncclSuccess; /* host memory: nothing to flush */
  const ib_mr* m = mhandles[last];
  ib_req* r = net_ib_req_alloc(c, IB_REQ_FLUSH);
  if (r == NULL) {
    IB_WARN("NET/IB: iflush: more than %d requests in flight on the connection from %s",
            IB_RECV_REQS, c->peer);
    return ncclInternalError;
  }
  struct ibv_sge sge;
  sge.addr = (uint64_t)(uintptr_t)c->flush_buf;
  sge.length = 1;
  sge.lkey = c->flush_mr->lkey;
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = IB_WRID(IB_WR_FLUSH, 0, r->idx);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)data[last];
  wr.wr.rdma.rkey = m->mr->rkey;
  int err = net_ib_verbs()->post_send(c->flush_qp, &wr, &bad);
  if (err) {
    net_ib_req_free(r);
    if (net_ib_comm_fail(c, ncclSystemError))
      IB_WARN("NET/IB: %s:%d: ibv_post_send (flush read) failed: %s", c->dev->name, c->dev->port,
              strerror(err));
    return ncclSystemError;
  }
  r->pending = 1;
  *request = r;
  return ncclSuccess;
}
