/* fakeverbs responder: the rx thread of a QP accepts the connection of the remote requester
 * and executes its requests as an HCA would. A packet is accepted only in RTR/RTS, from the QP
 * and address the RTR attributes name, with the RoCE version of our GID and the expected PSN;
 * anything else is dropped (answered DROP: the requester retransmits after its ack timeout).
 * WRITE needs remote-write rights and a valid R_Key range, WRITE_WITH_IMM and SEND a posted
 * receive (waited for up to the requester's RNR budget), READ remote-read rights. Protection
 * faults NAK and move the QP to ERR with IBV_EVENT_QP_ACCESS_ERR. */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "fv_wire.h"

static int active(const fv_qp* q) { return q->state == IBV_QPS_RTR || q->state == IBV_QPS_RTS; }

/* Would an HCA accept this packet on this QP? (state, port, source QP and address, PSN) */
static int accept_packet_locked(fv_qp* q, const fv_hello* h, const fv_pkt* p) {
  fv_device* d = q->ctx->dev;
  if (!active(q) || !fv_port_is_up(d, q->port)) return 0;
  if (h->dst_qpn != q->qp.qp_num || (int)h->dst_port != q->port) return 0;
  if (h->src_qpn != q->dest_qpn) return 0;
  if (q->remote_dev != (int)h->src_dev || q->remote_port != (int)h->src_port) return 0;
  if (d->eth || q->ah.is_global) {
    /* Answers go to our dgid: it must be the requester's source GID, of the same RoCE
     * version as ours. */
    if (memcmp(h->src_gid.raw, q->ah.grh.dgid.raw, 16) != 0) return 0;
    if (h->src_gid_type != d->port[q->port].gid_type[q->ah.grh.sgid_index]) return 0;
  } else if (h->src_lid != q->ah.dlid) {
    return 0;
  }
  return p->psn == q->expect_psn;
}

/* Wait for a posted receive (RNR). 1: one is there; 0: RNR retries used up; -1: the QP stopped
 * or left RTR/RTS. */
static int wait_recv_locked(fv_qp* q, const fv_pkt* p) {
  uint64_t deadline = p->rnr_retry >= 7 ? UINT64_MAX
                                        : fv_now_ns() + (uint64_t)(p->rnr_retry + 1) *
                                                            fv_rnr_timer_ns(q->min_rnr_timer);
  while (q->rq_head == q->rq_tail) {
    if (fv_stopping(q) || !active(q)) return -1;
    if (fv_now_ns() >= deadline) return 0;
    fv_timed_wait(q, deadline);
  }
  return 1;
}

/* The QP turns to error after a responder-side protection fault, with an async event. */
static void access_error_locked(fv_qp* q) {
  fv_qp_to_error_locked(q);
  struct ibv_async_event ev;
  memset(&ev, 0, sizeof ev);
  ev.event_type = IBV_EVENT_QP_ACCESS_ERR;
  ev.element.qp = &q->qp;
  fv_async_post(q->ctx, ev);
}

static void push_recv_wc(fv_qp* q, uint64_t wr_id, enum ibv_wc_opcode op, uint64_t len,
                         const fv_pkt* p, const fv_hello* h, enum ibv_wc_status st) {
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  wc.wr_id = wr_id;
  wc.status = st;
  wc.opcode = st == IBV_WC_SUCCESS ? op : (enum ibv_wc_opcode)0x7f;
  wc.byte_len = (uint32_t)len;
  wc.qp_num = q->qp.qp_num;
  wc.src_qp = h->src_qpn;
  if (p->flags & PF_IMM) {
    wc.imm_data = p->imm;
    wc.wc_flags = IBV_WC_WITH_IMM;
  }
  fv_cq_push(q->rcq, &wc);
}

/* Returns -1 when the connection must be closed. */
static int serve_write(fv_qp* q, int fd, const fv_hello* h, const fv_pkt* p) {
  char* dst = NULL;
  pthread_mutex_lock(&q->lock);
  int allowed = (q->access & IBV_ACCESS_REMOTE_WRITE) != 0;
  pthread_mutex_unlock(&q->lock);
  if (allowed) dst = fv_mr_resolve(q->pd, p->rkey, p->raddr, p->len, IBV_ACCESS_REMOTE_WRITE, 1);
  if (!dst) {
    if (fv_discard(fd, p->len)) return -1;
    pthread_mutex_lock(&q->lock);
    access_error_locked(q);
    pthread_mutex_unlock(&q->lock);
    return fv_reply(fd, PKT_NAK, p, IBV_WC_REM_ACCESS_ERR, 0);
  }
  uint64_t wr_id = 0;
  if (p->flags & PF_IMM) {
    pthread_mutex_lock(&q->lock);
    int r = wait_recv_locked(q, p);
    if (r == 1) wr_id = q->rq[q->rq_head % q->cap.max_recv_wr].wr_id;
    pthread_mutex_unlock(&q->lock);
    if (r <= 0) {
      if (fv_discard(fd, p->len)) return -1;
      return r == 0 ? fv_reply(fd, PKT_NAK, p, IBV_WC_RNR_RETRY_EXC_ERR, 0)
                    : fv_reply(fd, PKT_DROP, p, 0, 0);
    }
  }
  if (fv_read_full(fd, dst, p->len)) return -1;
  pthread_mutex_lock(&q->lock);
  if (!active(q) || ((p->flags & PF_IMM) && q->rq_head == q->rq_tail)) {
    /* The QP left RTR/RTS (its receives were flushed) while the data came in. */
    pthread_mutex_unlock(&q->lock);
    return fv_reply(fd, PKT_DROP, p, 0, 0);
  }
  q->expect_psn = (q->expect_psn + 1) & 0xffffff;
  if (p->flags & PF_IMM) {
    q->rq_head++;
    push_recv_wc(q, wr_id, IBV_WC_RECV_RDMA_WITH_IMM, p->len, p, h, IBV_WC_SUCCESS);
  }
  pthread_mutex_unlock(&q->lock);
  return fv_reply(fd, PKT_ACK, p, 0, 0);
}

static int serve_send(fv_qp* q, int fd, const fv_hello* h, const fv_pkt* p) {
  pthread_mutex_lock(&q->lock);
  int r = wait_recv_locked(q, p);
  fv_rwr rw;
  memset(&rw, 0, sizeof rw);
  if (r == 1) rw = q->rq[q->rq_head % q->cap.max_recv_wr];
  pthread_mutex_unlock(&q->lock);
  if (r <= 0) {
    if (fv_discard(fd, p->len)) return -1;
    return r == 0 ? fv_reply(fd, PKT_NAK, p, IBV_WC_RNR_RETRY_EXC_ERR, 0)
                  : fv_reply(fd, PKT_DROP, p, 0, 0);
  }
  uint64_t room = 0;
  for (int i = 0; i < rw.nsge; i++) room += rw.sge[i].length;
  enum ibv_wc_status local = IBV_WC_SUCCESS;
  uint32_t remote = 0;
  uint64_t left = p->len;
  if (p->len > room) {
    local = IBV_WC_LOC_LEN_ERR;
    remote = IBV_WC_REM_INV_REQ_ERR;
  }
  for (int i = 0; i < rw.nsge && left > 0 && local == IBV_WC_SUCCESS; i++) {
    uint64_t n = rw.sge[i].length < left ? rw.sge[i].length : left;
    char* dst = fv_mr_resolve(q->pd, rw.sge[i].lkey, rw.sge[i].addr, n, IBV_ACCESS_LOCAL_WRITE, 0);
    if (!dst) {
      local = IBV_WC_LOC_PROT_ERR;
      remote = IBV_WC_REM_OP_ERR;
      break;
    }
    if (fv_read_full(fd, dst, n)) return -1;
    left -= n;
  }
  if (local != IBV_WC_SUCCESS && fv_discard(fd, left)) return -1;
  pthread_mutex_lock(&q->lock);
  if (!active(q) || q->rq_head == q->rq_tail) {
    pthread_mutex_unlock(&q->lock);
    return fv_reply(fd, PKT_DROP, p, 0, 0);
  }
  q->rq_head++;
  push_recv_wc(q, rw.wr_id, IBV_WC_RECV, p->len, p, h, local);
  if (local != IBV_WC_SUCCESS) {
    fv_qp_to_error_locked(q);
  } else {
    q->expect_psn = (q->expect_psn + 1) & 0xffffff;
  }
  pthread_mutex_unlock(&q->lock);
  return local == IBV_WC_SUCCESS ? fv_reply(fd, PKT_ACK, p, 0, 0) : fv_reply(fd, PKT_NAK, p, remote, 0);
}

static int serve_read(fv_qp* q, int fd, const fv_pkt* p) {
  char* src = NULL;
  pthread_mutex_lock(&q->lock);
  int allowed = (q->access & IBV_ACCESS_REMOTE_READ) != 0;
  pthread_mutex_unlock(&q->lock);
  if (allowed) src = fv_mr_resolve(q->pd, p->rkey, p->raddr, p->len, IBV_ACCESS_REMOTE_READ, 1);
  pthread_mutex_lock(&q->lock);
  if (!src) {
    access_error_locked(q);
    pthread_mutex_unlock(&q->lock);
    return fv_reply(fd, PKT_NAK, p, IBV_WC_REM_ACCESS_ERR, 0);
  }
  q->expect_psn = (q->expect_psn + 1) & 0xffffff;
  pthread_mutex_unlock(&q->lock);
  if (fv_reply(fd, PKT_READ_RESP, p, 0, p->len)) return -1;
  return fv_write_full(fd, src, p->len);
}

static void serve(fv_qp* q, int fd) {
  fv_hello h;
  if (fv_read_full(fd, &h, sizeof h) || h.magic != FV_HELLO_MAGIC) return;
  for (;;) {
    fv_pkt p;
    if (fv_read_full(fd, &p, sizeof p)) return;
    if (p.type != PKT_WRITE && p.type != PKT_SEND && p.type != PKT_READ) return;
    if (p.len > FV_MAX_MSG) return;
    pthread_mutex_lock(&q->lock);
    int ok = accept_packet_locked(q, &h, &p);
    pthread_mutex_unlock(&q->lock);
    int r;
    if (!ok) {
      /* An HCA discards it silently; the requester learns by its ack timeout. */
      fv_trace("qp %#x drops psn %u from %#x", q->qp.qp_num, p.psn, h.src_qpn);
      r = (p.type != PKT_READ && fv_discard(fd, p.len)) ? -1 : fv_reply(fd, PKT_DROP, &p, 0, 0);
    } else if (p.type == PKT_WRITE) {
      r = serve_write(q, fd, &h, &p);
    } else if (p.type == PKT_SEND) {
      r = serve_send(q, fd, &h, &p);
    } else {
      r = serve_read(q, fd, &p);
    }
    if (r) return;
  }
}

void* fv_rx_main(void* arg) {
  fv_qp* q = arg;
  while (!fv_stopping(q)) {
    struct pollfd pf[2] = {{q->listen_fd, POLLIN, 0}, {q->wake_fd, POLLIN, 0}};
    int r = poll(pf, 2, -1);
    if (fv_stopping(q)) break;
    if (r <= 0 || !(pf[0].revents & POLLIN)) continue;
    int fd = accept4(q->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    pthread_mutex_lock(&q->lock);
    if (q->stop) {
      pthread_mutex_unlock(&q->lock);
      close(fd);
      break;
    }
    q->in_fd = fd;
    pthread_mutex_unlock(&q->lock);
    serve(q, fd);
    pthread_mutex_lock(&q->lock);
    q->in_fd = -1;
    pthread_mutex_unlock(&q->lock);
    close(fd);
  }
  return NULL;
}
