/* fakeverbs post_send / post_recv (installed in ibv_context.ops, as a provider does). They check
 * what a provider checks at post time — QP state, opcode, SGE count, inline size, queue room —
 * and answer with an errno value and *bad_wr on the first WR refused; WRs before it are posted.
 * Local keys are checked later, when the emulated NIC reads or writes the memory. Posting to a
 * QP in ERR completes the WR at once with IBV_WC_WR_FLUSH_ERR. */
#include <errno.h>
#include <string.h>

#include "fv.h"

static int check_send(const fv_qp* q, const struct ibv_send_wr* wr) {
  switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE: case IBV_WR_RDMA_WRITE_WITH_IMM: case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: case IBV_WR_RDMA_READ:
      break;
    default:
      return EINVAL;
  }
  if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge) return EINVAL;
  if (wr->send_flags & IBV_SEND_INLINE) {
    if (wr->opcode == IBV_WR_RDMA_READ) return EINVAL;
    uint64_t len = 0;
    for (int i = 0; i < wr->num_sge; i++) len += wr->sg_list[i].length;
    if (len > q->cap.max_inline_data) return EINVAL;
  }
  return 0;
}

static void port_down(fv_qp* q) {
  fv_device* d = q->ctx->dev;
  if (__atomic_exchange_n(&d->port[q->port].fault_down, 1, __ATOMIC_ACQ_REL)) return;
  fv_trace("%s port %d down (injected)", d->dev.name, q->port);
  struct ibv_async_event ev;
  memset(&ev, 0, sizeof ev);
  ev.event_type = IBV_EVENT_PORT_ERR;
  ev.element.port_num = q->port;
  fv_async_post_device(d, ev);
}

int fv_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
  fv_qp* q = (fv_qp*)qp;
  int err = 0;
  pthread_mutex_lock(&q->lock);
  for (; wr; wr = wr->next) {
    if (q->state == IBV_QPS_RESET || q->state == IBV_QPS_INIT || q->state == IBV_QPS_RTR)
      err = EINVAL;
    if (!err) err = check_send(q, wr);
    if (!err && q->state != IBV_QPS_ERR && q->sq_tail - q->sq_free >= q->cap.max_send_wr)
      err = ENOMEM;
    if (err) break;
    fv_swr w;
    memset(&w, 0, sizeof w);
    w.wr_id = wr->wr_id;
    w.opcode = wr->opcode;
    w.flags = wr->send_flags;
    w.imm = wr->imm_data;
    w.raddr = wr->wr.rdma.remote_addr;
    w.rkey = wr->wr.rdma.rkey;
    w.nsge = wr->num_sge;
    for (int i = 0; i < wr->num_sge; i++) {
      w.sge[i] = wr->sg_list[i];
      w.len += wr->sg_list[i].length;
    }
    if (wr->send_flags & IBV_SEND_INLINE) {
      /* The data is copied now; the keys are not looked at. */
      w.is_inline = 1;
      size_t off = 0;
      for (int i = 0; i < wr->num_sge; i++) {
        memcpy(w.inl + off, (void*)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
        off += wr->sg_list[i].length;
      }
    }
    w.signaled = q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
    long n = fv_count_send_wr();
    if (fv_fault.wc_error_at && n == fv_fault.wc_error_at) {
      w.fault_status = fv_fault.wc_error_status;
      fv_trace("send WR %ld will complete with %s (injected)", n,
               ibv_wc_status_str((enum ibv_wc_status)w.fault_status));
    }
    /* Down before this WR can leave: it is the first to find the link dead. */
    if (fv_fault.port_down_at && n == fv_fault.port_down_at) port_down(q);
    if (q->state == IBV_QPS_ERR) {
      struct ibv_wc wc;
      memset(&wc, 0, sizeof wc);
      wc.wr_id = w.wr_id;
      wc.status = IBV_WC_WR_FLUSH_ERR;
      wc.opcode = (enum ibv_wc_opcode)0x7f;
      wc.qp_num = qp->qp_num;
      fv_cq_push(q->scq, &wc);
      continue;
    }
    w.psn = q->next_psn;
    q->next_psn = (q->next_psn + 1) & 0xffffff;
    q->sq[q->sq_tail % q->cap.max_send_wr] = w;
    q->sq_tail++;
  }
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  if (err && bad) *bad = wr;
  return err;
}

int fv_post_recv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
  fv_qp* q = (fv_qp*)qp;
  int err = 0;
  uint32_t cap = q->cap.max_recv_wr;
  pthread_mutex_lock(&q->lock);
  for (; wr; wr = wr->next) {
    if (q->state == IBV_QPS_RESET) err = EINVAL;
    if (!err && (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_recv_sge)) err = EINVAL;
    if (!err && q->state != IBV_QPS_ERR && q->rq_tail - q->rq_head >= cap) err = ENOMEM;
    if (err) break;
    if (q->state == IBV_QPS_ERR) {
      struct ibv_wc wc;
      memset(&wc, 0, sizeof wc);
      wc.wr_id = wr->wr_id;
      wc.status = IBV_WC_WR_FLUSH_ERR;
      wc.opcode = (enum ibv_wc_opcode)0x7f;
      wc.qp_num = qp->qp_num;
      fv_cq_push(q->rcq, &wc);
      continue;
    }
    fv_rwr* r = &q->rq[q->rq_tail % cap];
    r->wr_id = wr->wr_id;
    r->nsge = wr->num_sge;
    for (int i = 0; i < wr->num_sge; i++) r->sge[i] = wr->sg_list[i];
    q->rq_tail++;
  }
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  if (err && bad) *bad = wr;
  return err;
}
