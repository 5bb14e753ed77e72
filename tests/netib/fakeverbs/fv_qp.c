/* fakeverbs queue pairs: creation (RC only), the state machine with the attribute masks the IB
 * specification requires for each RC transition (a missing required attribute, one not allowed
 * for the transition, or an out-of-range value is EINVAL), destruction, and the completion
 * helpers the NIC threads (fv_wire.c) use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fv.h"

uint64_t fv_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t fv_ack_timeout_ns(uint8_t timeout) {
  if (timeout == 0) return 3600ull * 1000000000ull; /* 0: wait forever */
  return 4096ull << timeout;
}

/* Minimum RNR NAK timer, IB spec table 45 (microseconds, code 0 is the largest). */
uint64_t fv_rnr_timer_ns(uint8_t code) {
  static const uint32_t us[32] = {655360, 10,    20,    30,    40,    60,     80,     120,
                                  160,    240,   320,   480,   640,   960,    1280,   1920,
                                  2560,   3840,  5120,  7680,  10240, 15360,  20480,  30720,
                                  40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return (uint64_t)us[code & 31] * 1000ull;
}

static uint32_t random24(void) {
  static uint64_t s;
  uint64_t x = __atomic_add_fetch(&s, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED) ^ fv_now_ns() ^
               ((uint64_t)getpid() << 20);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  uint32_t q = (uint32_t)(x & 0xffffff);
  return q < 2 ? q + 2 : q; /* 0 and 1 are special QPNs */
}

FV_EXPORT struct ibv_qp* ibv_create_qp(struct ibv_pd* pd, struct ibv_qp_init_attr* a) {
  fv_pd* p = (fv_pd*)pd;
  int err = 0;
  if (!p || !a || !a->send_cq || !a->recv_cq)
    err = EINVAL;
  else if (a->qp_type != IBV_QPT_RC || a->srq)
    err = EOPNOTSUPP;
  else if (a->cap.max_send_wr < 1 || a->cap.max_send_wr > FV_MAX_QP_WR ||
           a->cap.max_recv_wr > FV_MAX_QP_WR || a->cap.max_send_sge > FV_MAX_SGE ||
           a->cap.max_recv_sge > FV_MAX_SGE || a->cap.max_inline_data > FV_MAX_INLINE)
    err = EINVAL;
  else if (a->send_cq->context != pd->context || a->recv_cq->context != pd->context)
    err = EINVAL;
  if (!err && fv_fault.fail_create_qp && fv_count_create_qp() >= fv_fault.fail_create_qp) {
    fv_trace("create_qp: injected failure");
    err = ENOMEM;
  }
  fv_qp* q = err ? NULL : calloc(1, sizeof *q);
  if (!err && !q) err = ENOMEM;
  if (!err) {
    q->sq = calloc(a->cap.max_send_wr, sizeof *q->sq);
    q->rq = calloc(a->cap.max_recv_wr ? a->cap.max_recv_wr : 1, sizeof *q->rq);
    if (!q->sq || !q->rq) err = ENOMEM;
  }
  if (err) {
    if (q) {
      free(q->sq);
      free(q->rq);
      free(q);
    }
    errno = err;
    return NULL;
  }
  q->qp.context = pd->context;
  q->qp.qp_context = a->qp_context;
  q->qp.pd = pd;
  q->qp.send_cq = a->send_cq;
  q->qp.recv_cq = a->recv_cq;
  q->qp.state = IBV_QPS_RESET;
  q->qp.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&q->qp.mutex, NULL);
  pthread_cond_init(&q->qp.cond, NULL);
  q->ctx = (fv_context*)pd->context;
  q->pd = p;
  q->scq = (fv_cq*)a->send_cq;
  q->rcq = (fv_cq*)a->recv_cq;
  q->sq_sig_all = a->sq_sig_all;
  q->cap = a->cap;
  q->state = IBV_QPS_RESET;
  q->remote_dev = q->remote_port = -1;
  q->listen_fd = q->in_fd = q->out_fd = q->wake_fd = -1;
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->cond, NULL);
  for (int tries = 0;; tries++) {
    q->qp.qp_num = random24();
    int r = fv_wire_listen(q);
    if (r == 0) break;
    if (r != EADDRINUSE || tries > 64) {
      free(q->sq);
      free(q->rq);
      free(q);
      errno = r;
      return NULL;
    }
  }
  if (fv_wire_start_rx(q) != 0) {
    fv_wire_stop(q);
    free(q->sq);
    free(q->rq);
    free(q);
    errno = ENOMEM;
    return NULL;
  }
  __atomic_add_fetch(&p->nobjs, 1, __ATOMIC_ACQ_REL);
  __atomic_add_fetch(&q->scq->nqps, 1, __ATOMIC_ACQ_REL);
  __atomic_add_fetch(&q->rcq->nqps, 1, __ATOMIC_ACQ_REL);
  fv_trace("create_qp %#x on %s", q->qp.qp_num, q->ctx->dev->dev.name);
  return &q->qp;
}

/* ---- completions ---- */

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE: case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    default: return IBV_WC_SEND;
  }
}

static void push_send_wc(fv_qp* q, const fv_swr* w, enum ibv_wc_status status, uint32_t len) {
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  wc.wr_id = w->wr_id;
  wc.status = status;
  /* The specification leaves opcode undefined for an error completion: make relying on it
   * visible. */
  wc.opcode = status == IBV_WC_SUCCESS ? wc_opcode(w->opcode) : (enum ibv_wc_opcode)0x7f;
  wc.byte_len = len;
  wc.qp_num = q->qp.qp_num;
  wc.vendor_err = status == IBV_WC_SUCCESS ? 0 : 0xfa;
  fv_cq_push(q->scq, &wc);
}

static void push_recv_flush(fv_qp* q, const fv_rwr* r) {
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  wc.wr_id = r->wr_id;
  wc.status = IBV_WC_WR_FLUSH_ERR;
  wc.opcode = (enum ibv_wc_opcode)0x7f;
  wc.qp_num = q->qp.qp_num;
  fv_cq_push(q->rcq, &wc);
}

/* Every outstanding WR completes with status at index fail (if in range) and FLUSH_ERR
 * otherwise, in queue order; the QP is then in ERR. */
static void fail_from_locked(fv_qp* q, uint64_t fail, enum ibv_wc_status status) {
  for (uint64_t i = q->sq_head; i < q->sq_tail; i++)
    push_send_wc(q, &q->sq[i % q->cap.max_send_wr], i == fail ? status : IBV_WC_WR_FLUSH_ERR, 0);
  q->sq_free = q->sq_head = q->sq_sent = q->sq_tail;
  for (uint64_t i = q->rq_head; i < q->rq_tail; i++)
    push_recv_flush(q, &q->rq[i % (q->cap.max_recv_wr ? q->cap.max_recv_wr : 1)]);
  q->rq_head = q->rq_tail;
  if (q->state != IBV_QPS_ERR) fv_trace("qp %#x -> ERR", q->qp.qp_num);
  /* ibv_qp.state is the user's view: modify_qp and query_qp update it, the NIC does not. */
  q->state = IBV_QPS_ERR;
  pthread_cond_broadcast(&q->cond);
}

void fv_qp_to_error_locked(fv_qp* q) { fail_from_locked(q, UINT64_MAX, IBV_WC_WR_FLUSH_ERR); }

void fv_qp_complete_head_locked(fv_qp* q, enum ibv_wc_status status, uint32_t byte_len) {
  if (q->sq_head >= q->sq_tail) return;
  if (status != IBV_WC_SUCCESS) {
    fv_trace("qp %#x wr %llu fails: %s", q->qp.qp_num, (unsigned long long)q->sq_head,
             ibv_wc_status_str(status));
    fail_from_locked(q, q->sq_head, status);
    return;
  }
  fv_swr* w = &q->sq[q->sq_head % q->cap.max_send_wr];
  if (w->signaled) {
    push_send_wc(q, w, IBV_WC_SUCCESS, byte_len);
    /* A signaled completion frees its slot and every unsignaled one before it. */
    q->sq_free = q->sq_head + 1;
  }
  q->sq_head++;
  if (q->sq_sent < q->sq_head) q->sq_sent = q->sq_head;
  pthread_cond_broadcast(&q->cond);
}

void fv_qp_fail_at_locked(fv_qp* q, uint64_t idx, enum ibv_wc_status status) {
  fail_from_locked(q, idx, status);
}

void fv_qp_lost_locked(fv_qp* q) {
  if (q->sq_head >= q->sq_sent) return;
  fv_swr* w = &q->sq[q->sq_head % q->cap.max_send_wr];
  if (++w->retries > q->retry_cnt) {
    fv_qp_complete_head_locked(q, IBV_WC_RETRY_EXC_ERR, 0);
    return;
  }
  /* Go-back-N: everything after the lost packet is resent after the ack timeout. */
  q->gen++;
  q->sq_sent = q->sq_head;
  q->retransmit_at_ns = fv_now_ns() + fv_ack_timeout_ns(q->timeout);
  fv_trace("qp %#x psn %u lost, retry %d of %d", q->qp.qp_num, w->psn, w->retries, q->retry_cnt);
  pthread_cond_broadcast(&q->cond);
}

/* ---- the state machine ---- */

enum {
  M_STATE = IBV_QP_STATE, M_CUR = IBV_QP_CUR_STATE, M_PKEY = IBV_QP_PKEY_INDEX,
  M_PORT = IBV_QP_PORT, M_ACCESS = IBV_QP_ACCESS_FLAGS, M_AV = IBV_QP_AV,
  M_MTU = IBV_QP_PATH_MTU, M_DQPN = IBV_QP_DEST_QPN, M_RQPSN = IBV_QP_RQ_PSN,
  M_DRD = IBV_QP_MAX_DEST_RD_ATOMIC, M_RNRT = IBV_QP_MIN_RNR_TIMER, M_TIMEOUT = IBV_QP_TIMEOUT,
  M_RETRY = IBV_QP_RETRY_CNT, M_RNRR = IBV_QP_RNR_RETRY, M_SQPSN = IBV_QP_SQ_PSN,
  M_RD = IBV_QP_MAX_QP_RD_ATOMIC, M_ALT = IBV_QP_ALT_PATH, M_MIG = IBV_QP_PATH_MIG_STATE,
};

/* Required and optional attribute masks of an RC transition; 0 when the transition is not
 * allowed (to RESET and to ERR are always allowed, with no attribute). */
static int transition(enum ibv_qp_state from, enum ibv_qp_state to, int* req, int* opt) {
  *req = *opt = 0;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return 1;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    *req = M_PKEY | M_PORT | M_ACCESS;
    return 1;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_INIT) {
    *opt = M_PKEY | M_PORT | M_ACCESS;
    return 1;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    *req = M_AV | M_MTU | M_DQPN | M_RQPSN | M_DRD | M_RNRT;
    *opt = M_ALT | M_ACCESS | M_PKEY;
    return 1;
  }
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    *req = M_TIMEOUT | M_RETRY | M_RNRR | M_SQPSN | M_RD;
    *opt = M_ALT | M_ACCESS | M_RNRT | M_MIG;
    return 1;
  }
  if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) {
    *opt = M_ACCESS | M_ALT | M_MIG | M_RNRT;
    return 1;
  }
  return 0;
}

static int check_ah(fv_qp* q, const struct ibv_ah_attr* ah) {
  fv_device* d = q->ctx->dev;
  int port = ah->port_num ? ah->port_num : q->port;
  if (port != q->port || ah->sl > 15) return EINVAL;
  if (d->eth && !ah->is_global) return EINVAL; /* RoCE needs a GRH */
  if (ah->is_global) {
    if (ah->grh.sgid_index >= d->port[port].ngid) return EINVAL;
    static const uint8_t zero[16];
    if (memcmp(ah->grh.dgid.raw, zero, 16) == 0) return EINVAL;
  } else if (ah->dlid == 0) {
    return EINVAL;
  }
  return 0;
}

static int check_values(fv_qp* q, const struct ibv_qp_attr* a, int mask, int new_port) {
  fv_device* d = q->ctx->dev;
  if ((mask & M_PORT) && (a->port_num < 1 || a->port_num > d->nports)) return EINVAL;
  if ((mask & M_PKEY) && a->pkey_index >= 1) return EINVAL; /* one P_Key per port */
  if ((mask & M_ACCESS) &&
      (a->qp_access_flags & ~(unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
    return EINVAL;
  if ((mask & M_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > d->port[new_port].mtu))
    return EINVAL;
  if ((mask & M_DQPN) && a->dest_qp_num > 0xffffff) return EINVAL;
  if ((mask & M_RQPSN) && a->rq_psn > 0xffffff) return EINVAL;
  if ((mask & M_SQPSN) && a->sq_psn > 0xffffff) return EINVAL;
  if ((mask & M_DRD) && a->max_dest_rd_atomic > 16) return EINVAL;
  if ((mask & M_RD) && a->max_rd_atomic > 16) return EINVAL;
  if ((mask & M_RNRT) && a->min_rnr_timer > 31) return EINVAL;
  if ((mask & M_TIMEOUT) && a->timeout > 31) return EINVAL;
  if ((mask & M_RETRY) && a->retry_cnt > 7) return EINVAL;
  if ((mask & M_RNRR) && a->rnr_retry > 7) return EINVAL;
  if ((mask & M_AV) && check_ah(q, &a->ah_attr)) return EINVAL;
  return 0;
}

static void reset_locked(fv_qp* q) {
  q->sq_free = q->sq_head = q->sq_sent = q->sq_tail = 0;
  q->rq_head = q->rq_tail = 0;
  q->gen++;
  q->remote_dev = q->remote_port = -1;
}

FV_EXPORT int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* a, int mask) {
  fv_qp* q = (fv_qp*)qp;
  if (!q || !a || !(mask & M_STATE)) return EINVAL;
  pthread_mutex_lock(&q->lock);
  enum ibv_qp_state from = q->state, to = a->qp_state;
  int req, opt;
  int err = 0;
  if ((mask & M_CUR) && a->cur_qp_state != from) err = EINVAL;
  if (!err && !transition(from, to, &req, &opt)) err = EINVAL;
  if (!err && ((mask & req) != req || (mask & ~(req | opt | M_STATE | M_CUR)))) err = EINVAL;
  int new_port = (mask & M_PORT) ? a->port_num : q->port;
  if (!err) err = check_values(q, a, mask, new_port);
  if (err) {
    fv_trace("modify_qp %#x %d->%d mask %#x: EINVAL", qp->qp_num, from, to, mask);
    pthread_mutex_unlock(&q->lock);
    return err;
  }
  if (mask & M_PORT) q->port = a->port_num;
  if (mask & M_PKEY) q->pkey_index = a->pkey_index;
  if (mask & M_ACCESS) q->access = a->qp_access_flags;
  if (mask & M_MTU) q->path_mtu = a->path_mtu;
  if (mask & M_DQPN) q->dest_qpn = a->dest_qp_num;
  if (mask & M_RQPSN) q->rq_psn = q->expect_psn = a->rq_psn;
  if (mask & M_SQPSN) q->sq_psn = q->next_psn = a->sq_psn;
  if (mask & M_RNRT) q->min_rnr_timer = a->min_rnr_timer;
  if (mask & M_TIMEOUT) q->timeout = a->timeout;
  if (mask & M_RETRY) q->retry_cnt = a->retry_cnt;
  if (mask & M_RNRR) q->rnr_retry = a->rnr_retry;
  if (mask & M_AV) {
    q->ah = a->ah_attr;
    int dev = -1, port = -1;
    if (q->ah.is_global)
      fv_find_port_by_gid(&q->ah.grh.dgid, &dev, &port);
    else
      fv_find_port_by_lid(q->ah.dlid, &dev, &port);
    q->remote_dev = dev;
    q->remote_port = port;
  }
  if (to == IBV_QPS_ERR) {
    fv_qp_to_error_locked(q);
    q->qp.state = IBV_QPS_ERR;
  } else {
    if (to == IBV_QPS_RESET) reset_locked(q);
    q->state = q->qp.state = to;
  }
  int start_tx = to == IBV_QPS_RTS && !q->tx_started;
  if (start_tx) q->tx_started = 1;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  fv_trace("modify_qp %#x %d->%d", qp->qp_num, from, to);
  if (start_tx && fv_wire_start_tx(q) != 0) return ENOMEM;
  return 0;
}

FV_EXPORT int ibv_query_qp(struct ibv_qp* qp, struct ibv_qp_attr* a, int mask,
                           struct ibv_qp_init_attr* init) {
  fv_qp* q = (fv_qp*)qp;
  (void)mask;
  if (!q || !a) return EINVAL;
  pthread_mutex_lock(&q->lock);
  memset(a, 0, sizeof *a);
  a->qp_state = a->cur_qp_state = q->state;
  a->port_num = (uint8_t)q->port;
  a->qp_access_flags = q->access;
  a->path_mtu = q->path_mtu;
  a->dest_qp_num = q->dest_qpn;
  a->rq_psn = q->expect_psn;
  a->sq_psn = q->next_psn;
  a->ah_attr = q->ah;
  a->timeout = q->timeout;
  a->retry_cnt = q->retry_cnt;
  a->rnr_retry = q->rnr_retry;
  a->min_rnr_timer = q->min_rnr_timer;
  a->cap = q->cap;
  qp->state = q->state;
  if (init) {
    memset(init, 0, sizeof *init);
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->cap = q->cap;
    init->qp_type = IBV_QPT_RC;
    init->sq_sig_all = q->sq_sig_all;
  }
  pthread_mutex_unlock(&q->lock);
  return 0;
}

FV_EXPORT int ibv_destroy_qp(struct ibv_qp* qp) {
  fv_qp* q = (fv_qp*)qp;
  /* As libibverbs: wait until every async event naming this QP was acknowledged (bounded, so a
   * plugin that never acks shows up as a message rather than a hang). */
  pthread_mutex_lock(&q->lock);
  uint64_t deadline = fv_now_ns() + 30ull * 1000000000ull;
  while (__atomic_load_n(&q->events_unacked, __ATOMIC_ACQUIRE) > 0 && fv_now_ns() < deadline) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&q->cond, &q->lock, &ts);
  }
  int unacked = __atomic_load_n(&q->events_unacked, __ATOMIC_ACQUIRE);
  if (unacked > 0)
    fprintf(stderr, "fakeverbs: destroy_qp %#x: %d async events never acknowledged\n",
            qp->qp_num, unacked);
  pthread_mutex_unlock(&q->lock);
  fv_wire_stop(q);
  __atomic_sub_fetch(&q->pd->nobjs, 1, __ATOMIC_ACQ_REL);
  __atomic_sub_fetch(&q->scq->nqps, 1, __ATOMIC_ACQ_REL);
  __atomic_sub_fetch(&q->rcq->nqps, 1, __ATOMIC_ACQ_REL);
  fv_trace("destroy_qp %#x", qp->qp_num);
  pthread_mutex_destroy(&q->lock);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->qp.mutex);
  pthread_cond_destroy(&q->qp.cond);
  free(q->sq);
  free(q->rq);
  free(q);
  return 0;
}
