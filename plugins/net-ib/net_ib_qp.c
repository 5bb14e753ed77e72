/* RC queue pairs: creation in INIT, and the RTR / RTS transitions with the attributes the
 * settings give — NCCL_IB_PKEY (P_Key index), NCCL_IB_SL, traffic class (NCCL_IB_TC or the
 * connect config), NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT. PSNs start at 0 on both sides; the RNR
 * retry count is 7 (wait for the receive to be posted, never fail for it). */
#include <errno.h>
#include <string.h>

#include "net_ib_internal.h"
#include "util/param.h"

#define IB_MIN_RNR_TIMER 12 /* 0.64 ms */

ncclResult_t net_ib_qp_create(ib_comm* c, int access, struct ibv_qp** out) {
  ib_qp_caps caps = {&c->async_event, c->cq, IB_SQ_DEPTH, IB_RQ_DEPTH, 0};
  return net_ib_qp_create_on(c->dev, &caps, access, out);
}

ncclResult_t net_ib_qp_create_on(const ib_dev* d, const ib_qp_caps* caps, int access,
                                 struct ibv_qp** out) {
  const ib_verbs* v = net_ib_verbs();
  int max_wr = d->hw->attr.max_qp_wr > 0 ? d->hw->attr.max_qp_wr : caps->send_wr;
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.qp_context = caps->async_event;
  a.send_cq = caps->cq;
  a.recv_cq = caps->cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = (uint32_t)(caps->send_wr < max_wr ? caps->send_wr : max_wr);
  a.cap.max_recv_wr = (uint32_t)(caps->recv_wr < max_wr ? caps->recv_wr : max_wr);
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = caps->inline_bytes;
  struct ibv_qp* qp = v->create_qp(d->hw->pd, &a);
  if (qp == NULL) {
    IB_WARN("NET/IB: %s:%d: ibv_create_qp failed: %s", d->name, d->port, strerror(errno));
    return ncclSystemError;
  }
  struct ibv_qp_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.qp_state = IBV_QPS_INIT;
  qa.pkey_index = (uint16_t)param_int(WEFT_PARAM_IB_PKEY);
  qa.port_num = (uint8_t)d->port;
  qa.qp_access_flags = (unsigned)access;
  int e = v->modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (e) {
    IB_WARN("NET/IB: %s:%d: QP %#x to INIT failed: %s (P_Key index %d)", d->name, d->port,
            qp->qp_num, strerror(e), qa.pkey_index);
    v->destroy_qp(qp);
    return ncclSystemError;
  }
  *out = qp;
  return ncclSuccess;
}

ncclResult_t net_ib_make_ah(const ib_dev* d, const ib_conn_info* remote, int traffic_class,
                            struct ibv_ah_attr* ah) {
  if ((int)remote->link_layer != d->link_layer) {
    IB_WARN("NET/IB: %s:%d: the peer's port is %s, ours %s: they cannot talk", d->name, d->port,
            remote->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
            d->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
    return ncclInvalidUsage;
  }
  memset(ah, 0, sizeof *ah);
  ah->port_num = (uint8_t)d->port;
  ah->sl = (uint8_t)param_int(WEFT_PARAM_IB_SL);
  /* A GRH on RoCE always; on InfiniBand only to reach another subnet (prefixes differ). */
  int global = d->link_layer == IBV_LINK_LAYER_ETHERNET || remote->lid == 0 ||
               memcmp(remote->gid, d->gid.raw, 8) != 0;
  if (global) {
    ah->is_global = 1;
    memcpy(ah->grh.dgid.raw, remote->gid, 16);
    ah->grh.sgid_index = (uint8_t)d->gid_index;
    ah->grh.hop_limit = 255;
    ah->grh.traffic_class = (uint8_t)traffic_class;
    ah->grh.flow_label = 0;
  } else {
    ah->dlid = (uint16_t)remote->lid;
  }
  return ncclSuccess;
}

ncclResult_t net_ib_qp_rtr(const ib_dev* d, struct ibv_qp* qp, uint32_t remote_qpn,
                           const struct ibv_ah_attr* ah, enum ibv_mtu mtu) {
  struct ibv_qp_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.qp_state = IBV_QPS_RTR;
  qa.path_mtu = mtu;
  qa.dest_qp_num = remote_qpn;
  qa.rq_psn = 0;
  qa.max_dest_rd_atomic = 1;
  qa.min_rnr_timer = IB_MIN_RNR_TIMER;
  qa.ah_attr = *ah;
  int e = net_ib_verbs()->modify_qp(qp, &qa,
                                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                        IBV_QP_MIN_RNR_TIMER);
  if (e) {
    IB_WARN("NET/IB: %s:%d: QP %#x to RTR (remote QP %#x, MTU code %d, SL %d) failed: %s",
            d->name, d->port, qp->qp_num, remote_qpn, (int)mtu, ah->sl, strerror(e));
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t net_ib_qp_rts(const ib_dev* d, struct ibv_qp* qp) {
  struct ibv_qp_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.qp_state = IBV_QPS_RTS;
  qa.timeout = (uint8_t)param_int(WEFT_PARAM_IB_TIMEOUT);
  qa.retry_cnt = (uint8_t)param_int(WEFT_PARAM_IB_RETRY_CNT);
  qa.rnr_retry = 7;
  qa.sq_psn = 0;
  qa.max_rd_atomic = 1;
  int e = net_ib_verbs()->modify_qp(qp, &qa,
                                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                        IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (e) {
    IB_WARN("NET/IB: %s:%d: QP %#x to RTS (timeout %d, retry count %d) failed: %s", d->name,
            d->port, qp->qp_num, qa.timeout, qa.retry_cnt, strerror(e));
    return ncclSystemError;
  }
  return ncclSuccess;
}
