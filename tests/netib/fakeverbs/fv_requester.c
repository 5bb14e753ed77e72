/* fakeverbs requester: the tx thread streams the send queue, in order, to the responder the RTR
 * address names (connecting, and reconnecting after a loss); the ack thread reads the answers
 * and completes WRs in order: ACK completes, NAK fails with the status, DROP or a broken
 * connection is a lost packet (go-back-N after the ack timeout, RETRY_EXC_ERR after retry_cnt
 * retries). Local keys are checked when the NIC reads or writes the memory. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fv_wire.h"

/* Connect to the responder the RTR address names. 0, or -1 (the packet is then lost). */
static int connect_out(fv_qp* q) {
  pthread_mutex_lock(&q->lock);
  int rdev = q->remote_dev, rport = q->remote_port;
  fv_hello h;
  memset(&h, 0, sizeof h);
  h.magic = FV_HELLO_MAGIC;
  h.src_dev = (uint32_t)q->ctx->dev->index;
  h.src_port = (uint32_t)q->port;
  h.src_qpn = q->qp.qp_num;
  h.src_lid = q->ctx->dev->port[q->port].lid;
  h.dst_port = (uint32_t)rport;
  h.dst_qpn = q->dest_qpn;
  if (q->ah.is_global) {
    h.src_gid = q->ctx->dev->port[q->port].gid[q->ah.grh.sgid_index];
    h.src_gid_type = q->ctx->dev->port[q->port].gid_type[q->ah.grh.sgid_index];
  }
  int old = q->out_fd;
  q->out_fd = -1;
  pthread_mutex_unlock(&q->lock);
  if (old >= 0) close(old);
  if (rdev < 0) return -1;
  struct sockaddr_un a;
  socklen_t len;
  fv_qp_name(&a, &len, fv_dev(rdev), h.dst_qpn);
  /* Non-blocking connect: a responder that does not take the connection is a lost packet,
   * never a stuck NIC thread. */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int fl = -1;
  if (connect(fd, (struct sockaddr*)&a, len) != 0 || (fl = fcntl(fd, F_GETFL)) < 0 ||
      fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 || fv_write_full(fd, &h, sizeof h) != 0) {
    close(fd);
    return -1;
  }
  pthread_mutex_lock(&q->lock);
  if (q->stop) {
    pthread_mutex_unlock(&q->lock);
    close(fd);
    return -1;
  }
  q->out_fd = fd;
  q->out_broken = 0;
  q->out_epoch++;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  return 0;
}

/* Local side of a WR: each SGE resolved against the QP's PD (local write for a READ's sink).
 * 0, or -1 on a bad key or range. */
static int resolve_local(fv_qp* q, const fv_swr* w, char* ptr[FV_MAX_SGE]) {
  int access = w->opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_LOCAL_WRITE : 0;
  for (int i = 0; i < w->nsge; i++) {
    ptr[i] = fv_mr_resolve(q->pd, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, access, 0);
    if (!ptr[i]) return -1;
  }
  return 0;
}

void* fv_tx_main(void* arg) {
  fv_qp* q = arg;
  pthread_mutex_lock(&q->lock);
  for (;;) {
    if (q->stop) break;
    if (q->state != IBV_QPS_RTS || q->sq_sent >= q->sq_tail) {
      pthread_cond_wait(&q->cond, &q->lock);
      continue;
    }
    if (fv_now_ns() < q->retransmit_at_ns) {
      fv_timed_wait(q, q->retransmit_at_ns);
      continue;
    }
    if (!fv_port_is_up(q->ctx->dev, q->port)) {
      /* Nothing leaves a dead link: the retries run out (compressed to no delay). */
      fv_qp_complete_head_locked(q, IBV_WC_RETRY_EXC_ERR, 0);
      continue;
    }
    uint64_t idx = q->sq_sent;
    fv_swr w = q->sq[idx % q->cap.max_send_wr];
    if (w.fault_status) {
      /* Injected: the WR fails as if the responder had answered so, in queue order. */
      if (q->sq_head == idx)
        fv_qp_complete_head_locked(q, (enum ibv_wc_status)w.fault_status, 0);
      else
        pthread_cond_wait(&q->cond, &q->lock);
      continue;
    }
    if (w.len > FV_MAX_MSG) {
      fv_qp_fail_at_locked(q, idx, IBV_WC_LOC_LEN_ERR);
      continue;
    }
    char* ptr[FV_MAX_SGE];
    if (!w.is_inline && resolve_local(q, &w, ptr) != 0) {
      fv_qp_fail_at_locked(q, idx, IBV_WC_LOC_PROT_ERR);
      continue;
    }
    q->sq_sent++;
    q->tx_busy = idx + 1;
    uint32_t gen = q->gen;
    int need_connect = q->out_fd < 0 || q->out_broken;
    pthread_mutex_unlock(&q->lock);

    int fd = -1;
    if (need_connect && connect_out(q) != 0) {
      pthread_mutex_lock(&q->lock);
      q->tx_busy = 0;
      if (gen == q->gen) fv_qp_lost_locked(q);
      continue;
    }
    pthread_mutex_lock(&q->lock);
    fd = q->out_fd;
    uint8_t rnr = q->rnr_retry;
    pthread_mutex_unlock(&q->lock);
    fv_pkt p;
    memset(&p, 0, sizeof p);
    p.type = w.opcode == IBV_WR_RDMA_READ ? PKT_READ
             : (w.opcode == IBV_WR_SEND || w.opcode == IBV_WR_SEND_WITH_IMM) ? PKT_SEND
                                                                            : PKT_WRITE;
    p.psn = w.psn;
    p.gen = gen;
    p.flags = (w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w.opcode == IBV_WR_SEND_WITH_IMM) ? PF_IMM : 0;
    p.len = w.len;
    p.raddr = w.raddr;
    p.rkey = w.rkey;
    p.imm = w.imm;
    p.rnr_retry = rnr;
    /* A failed write means the connection broke: the ack thread sees it and the packet counts
     * as lost. */
    if (fd >= 0 && fv_write_full(fd, &p, sizeof p) == 0 && p.type != PKT_READ) {
      if (w.is_inline) {
        fv_write_full(fd, w.inl, w.len);
      } else {
        for (int i = 0; i < w.nsge; i++)
          if (fv_write_full(fd, ptr[i], w.sge[i].length)) break;
      }
    }
    pthread_mutex_lock(&q->lock);
    q->tx_busy = 0;
    pthread_cond_broadcast(&q->cond);
  }
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

/* The answer to a READ: its data lands in the WR's SGEs. */
static void read_response(fv_qp* q, int fd, const fv_pkt* p, uint64_t epoch) {
  pthread_mutex_lock(&q->lock);
  fv_swr w = q->sq[q->sq_head % q->cap.max_send_wr];
  uint64_t head = q->sq_head;
  pthread_mutex_unlock(&q->lock);
  char* ptr[FV_MAX_SGE];
  int ok = resolve_local(q, &w, ptr) == 0 && p->len <= w.len;
  uint64_t left = p->len;
  for (int i = 0; ok && i < w.nsge && left > 0; i++) {
    uint64_t n = w.sge[i].length < left ? w.sge[i].length : left;
    if (fv_read_full(fd, ptr[i], n)) return; /* connection loss: the ack loop handles it */
    left -= n;
  }
  if (left > 0 && fv_discard(fd, left)) return;
  pthread_mutex_lock(&q->lock);
  if (epoch == q->out_epoch && head == q->sq_head && p->gen == q->gen)
    fv_qp_complete_head_locked(q, ok ? IBV_WC_SUCCESS : IBV_WC_LOC_PROT_ERR, (uint32_t)p->len);
  pthread_mutex_unlock(&q->lock);
}

void* fv_ack_main(void* arg) {
  fv_qp* q = arg;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    while (!q->stop && (q->out_fd < 0 || q->out_broken)) pthread_cond_wait(&q->cond, &q->lock);
    if (q->stop) {
      pthread_mutex_unlock(&q->lock);
      return NULL;
    }
    int fd = q->out_fd;
    uint64_t epoch = q->out_epoch;
    pthread_mutex_unlock(&q->lock);
    fv_pkt p;
    if (fv_read_full(fd, &p, sizeof p)) {
      pthread_mutex_lock(&q->lock);
      if (epoch == q->out_epoch && !q->out_broken) {
        q->out_broken = 1;
        fv_qp_lost_locked(q); /* whatever was on the wire got no answer */
        pthread_cond_broadcast(&q->cond);
      }
      pthread_mutex_unlock(&q->lock);
      continue;
    }
    pthread_mutex_lock(&q->lock);
    /* A WR completes only once the NIC is done reading its memory (the answer can overtake the
     * end of the tx thread's send call). */
    while (q->tx_busy && q->tx_busy == q->sq_head + 1 && !q->stop)
      pthread_cond_wait(&q->cond, &q->lock);
    int current = p.gen == q->gen && q->sq_head < q->sq_sent &&
                  q->sq[q->sq_head % q->cap.max_send_wr].psn == p.psn;
    if (!current) {
      pthread_mutex_unlock(&q->lock);
      if (p.type == PKT_READ_RESP && p.len <= FV_MAX_MSG) fv_discard(fd, p.len);
      continue;
    }
    switch (p.type) {
      case PKT_ACK:
        fv_qp_complete_head_locked(q, IBV_WC_SUCCESS, 0);
        break;
      case PKT_NAK:
        fv_qp_complete_head_locked(q, (enum ibv_wc_status)p.status, 0);
        break;
      case PKT_DROP:
        fv_qp_lost_locked(q);
        break;
      case PKT_READ_RESP:
        pthread_mutex_unlock(&q->lock);
        read_response(q, fd, &p, epoch);
        continue;
      default:
        break;
    }
    pthread_mutex_unlock(&q->lock);
  }
}
