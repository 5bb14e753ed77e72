/* fakeverbs must enforce what an HCA enforces, or net-ib could pass its tests by cheating.
 * Each case (argv[1]) runs in its own process, on two RC QPs of one process connected to each
 * other through the fake fabric, and checks one rule: QP state transitions and their attribute
 * masks, R_Key/L_Key and bounds checks, a posted receive for WRITE_WITH_IMM, packets to a QP
 * that is not ready being lost (retries, then RETRY_EXC_ERR), RoCE GRH and GID-type rules,
 * queue limits, busy resources, dma-buf registration, and the injected faults. */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);   \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

typedef struct {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq *cqa, *cqb;
  struct ibv_qp *a, *b;
  int eth;
  struct ibv_port_attr port;
  union ibv_gid gid;
  int gid_index;
} pair_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct ibv_context* open_dev(const char* name) {
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  CHECK(list != NULL && n > 0);
  struct ibv_context* ctx = NULL;
  for (int i = 0; i < n; i++)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  CHECK(ctx != NULL);
  return ctx;
}

static struct ibv_qp* make_qp(pair_t* p, struct ibv_cq* cq, unsigned send_wr) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = send_wr;
  a.cap.max_recv_wr = 16;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.sq_sig_all = 1;
  struct ibv_qp* qp = ibv_create_qp(p->pd, &a);
  CHECK(qp != NULL);
  return qp;
}

static int to_init(struct ibv_qp* qp, unsigned access) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = access;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(pair_t* p, struct ibv_qp* qp, uint32_t remote, uint32_t rq_psn, int gid_index) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.port_num = 1;
  if (p->eth) {
    a.ah_attr.is_global = 1;
    CHECK(ibv_query_gid(p->ctx, 1, gid_index, &a.ah_attr.grh.dgid) == 0);
    a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
    a.ah_attr.grh.hop_limit = 1;
  } else {
    a.ah_attr.dlid = p->port.lid;
  }
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp* qp, int timeout, int retry, int rnr) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = (uint8_t)timeout;
  a.retry_cnt = (uint8_t)retry;
  a.rnr_retry = (uint8_t)rnr;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* a → b fully connected (b also RTS toward a). */
static void setup(pair_t* p, const char* dev, int rnr) {
  memset(p, 0, sizeof *p);
  p->ctx = open_dev(dev);
  CHECK(ibv_query_port(p->ctx, 1, &p->port) == 0);
  p->eth = p->port.link_layer == IBV_LINK_LAYER_ETHERNET;
  p->gid_index = p->eth ? 3 : 0;
  p->pd = ibv_alloc_pd(p->ctx);
  p->cqa = ibv_create_cq(p->ctx, 64, NULL, NULL, 0);
  p->cqb = ibv_create_cq(p->ctx, 64, NULL, NULL, 0);
  CHECK(p->pd && p->cqa && p->cqb);
  p->a = make_qp(p, p->cqa, 8);
  p->b = make_qp(p, p->cqb, 8);
  unsigned acc = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  CHECK(to_init(p->a, acc) == 0 && to_init(p->b, acc) == 0);
  CHECK(to_rtr(p, p->a, p->b->qp_num, 0, p->gid_index) == 0);
  CHECK(to_rtr(p, p->b, p->a->qp_num, 0, p->gid_index) == 0);
  CHECK(to_rts(p->a, 8, 2, rnr) == 0 && to_rts(p->b, 8, 2, rnr) == 0);
}

static enum ibv_qp_state qp_state(struct ibv_qp* qp) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr i;
  CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &i) == 0);
  return a.qp_state;
}

/* One completion within timeout_s (1), or none (0). */
static int wait_wc(struct ibv_cq* cq, struct ibv_wc* wc, double timeout_s) {
  double end = now_s() + timeout_s;
  while (now_s() < end) {
    int n = ibv_poll_cq(cq, 1, wc);
    CHECK(n >= 0);
    if (n == 1) return 1;
    usleep(200);
  }
  return 0;
}

static struct ibv_mr* reg(pair_t* p, void* buf, size_t len) {
  struct ibv_mr* mr = ibv_reg_mr(p->pd, buf, len,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  CHECK(mr != NULL);
  return mr;
}

static int post_write(struct ibv_qp* qp, void* buf, uint32_t len, uint32_t lkey, uint64_t raddr,
                      uint32_t rkey, int imm, uint32_t immval) {
  struct ibv_sge sge = {(uintptr_t)buf, len, lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = 7;
  wr.sg_list = &sge;
  wr.num_sge = len ? 1 : 0;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.imm_data = htobe32(immval);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return ibv_post_send(qp, &wr, &bad);
}

static int post_recv0(struct ibv_qp* qp, uint64_t id) {
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = id;
  return ibv_post_recv(qp, &wr, &bad);
}

/* ---- cases ---- */

static int qp_transitions_are_validated(void) {
  pair_t p;
  memset(&p, 0, sizeof p);
  p.ctx = open_dev("fake_roce0");
  p.eth = 1;
  p.pd = ibv_alloc_pd(p.ctx);
  p.cqa = ibv_create_cq(p.ctx, 16, NULL, NULL, 0);
  struct ibv_qp* q = make_qp(&p, p.cqa, 4);
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE) == EINVAL); /* RESET → RTR */
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT) == EINVAL); /* missing attributes */
  a.port_num = 9;
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == EINVAL);
  a.port_num = 1;
  a.pkey_index = 3; /* one P_Key per port */
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == EINVAL);
  CHECK(to_init(q, IBV_ACCESS_REMOTE_WRITE) == 0);
  CHECK(q->state == IBV_QPS_INIT);
  /* RTR on RoCE without a GRH, with a path MTU above the port's, with an empty GID index */
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = q->qp_num;
  a.ah_attr.port_num = 1;
  a.ah_attr.dlid = 5;
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  CHECK(ibv_modify_qp(q, &a, mask) == EINVAL);
  a.ah_attr.is_global = 1;
  CHECK(ibv_query_gid(p.ctx, 1, 3, &a.ah_attr.grh.dgid) == 0);
  a.ah_attr.grh.sgid_index = 3;
  a.path_mtu = IBV_MTU_4096; /* the RoCE port runs 1024 */
  CHECK(ibv_modify_qp(q, &a, mask) == EINVAL);
  a.path_mtu = IBV_MTU_1024;
  a.ah_attr.grh.sgid_index = 12;
  CHECK(ibv_modify_qp(q, &a, mask) == EINVAL);
  a.ah_attr.grh.sgid_index = 3;
  CHECK(ibv_modify_qp(q, &a, mask | IBV_QP_SQ_PSN) == EINVAL); /* not allowed for INIT → RTR */
  CHECK(ibv_modify_qp(q, &a, mask) == 0);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.retry_cnt = 7;
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_RETRY_CNT) == EINVAL); /* missing timeout… */
  a.retry_cnt = 8;
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL);
  CHECK(to_rts(q, 14, 7, 7) == 0);
  CHECK(q->state == IBV_QPS_RTS);
  a.qp_state = IBV_QPS_INIT;
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE) == EINVAL); /* RTS → INIT */
  a.qp_state = IBV_QPS_RESET;
  CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE) == 0);
  CHECK(ibv_destroy_qp(q) == 0);
  CHECK(ibv_destroy_cq(p.cqa) == 0 && ibv_dealloc_pd(p.pd) == 0 && ibv_close_device(p.ctx) == 0);
  return 0;
}

static int post_send_needs_rts(void) {
  pair_t p;
  memset(&p, 0, sizeof p);
  p.ctx = open_dev("fake_ib0");
  p.pd = ibv_alloc_pd(p.ctx);
  p.cqa = ibv_create_cq(p.ctx, 16, NULL, NULL, 0);
  struct ibv_qp* q = make_qp(&p, p.cqa, 4);
  char buf[64];
  CHECK(post_write(q, buf, 0, 0, 0, 0, 0, 0) == EINVAL); /* RESET */
  CHECK(post_recv0(q, 1) == EINVAL);                      /* RESET */
  CHECK(to_init(q, 0) == 0);
  CHECK(post_write(q, buf, 0, 0, 0, 0, 0, 0) == EINVAL); /* INIT */
  CHECK(post_recv0(q, 1) == 0);                           /* receives are allowed from INIT */
  return 0;
}

static int write_with_imm_lands_and_completes(void) {
  pair_t p;
  setup(&p, "fake_ib0", 7);
  enum { N = 100000 };
  char* src = malloc(N);
  char* dst = calloc(1, N + 16);
  for (int i = 0; i < N; i++) src[i] = (char)(i * 7 + 1);
  struct ibv_mr* ms = reg(&p, src, N);
  struct ibv_mr* md = reg(&p, dst, N + 16);
  CHECK(post_recv0(p.b, 42) == 0);
  CHECK(post_write(p.a, src, N, ms->lkey, (uintptr_t)dst + 8, md->rkey, 1, 0xabcd) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqb, &wc, 5));
  CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.wr_id == 42);
  CHECK(wc.byte_len == N && (wc.wc_flags & IBV_WC_WITH_IMM) && be32toh(wc.imm_data) == 0xabcd);
  CHECK(memcmp(dst + 8, src, N) == 0 && dst[7] == 0 && dst[N + 8] == 0);
  CHECK(wait_wc(p.cqa, &wc, 5));
  CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 7);
  /* A plain RDMA write needs no receive and makes no receive completion. */
  CHECK(post_write(p.a, src, 100, ms->lkey, (uintptr_t)dst, md->rkey, 0, 0) == 0);
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_SUCCESS);
  CHECK(!wait_wc(p.cqb, &wc, 0.05));
  return 0;
}

static void expect_remote_access_error(uint64_t off, uint32_t len, int bad_key) {
  pair_t p;
  setup(&p, "fake_ib0", 7);
  char* src = calloc(1, 8192);
  char* dst = calloc(1, 4096);
  struct ibv_mr* ms = reg(&p, src, 8192);
  struct ibv_mr* md = reg(&p, dst, 4096);
  CHECK(post_recv0(p.b, 1) == 0);
  CHECK(post_write(p.a, src, len, ms->lkey, (uintptr_t)dst + off, md->rkey + (bad_key ? 0x100 : 0), 1, 0) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5));
  CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 7);
  /* The responder's QP errors too: its receive is flushed and an async event is raised. */
  CHECK(wait_wc(p.cqb, &wc, 5) && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 1);
  struct ibv_async_event ev;
  CHECK(ibv_get_async_event(p.ctx, &ev) == 0);
  CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR && ev.element.qp == p.b);
  ibv_ack_async_event(&ev);
  for (int i = 0; i < 4096; i++) CHECK(dst[i] == 0);
}

static int write_with_bad_rkey_is_remote_access_error(void) {
  expect_remote_access_error(0, 100, 1);
  return 0;
}

static int write_out_of_bounds_is_remote_access_error(void) {
  expect_remote_access_error(4000, 200, 0);
  return 0;
}

static int write_with_imm_waits_for_posted_receive(void) {
  pair_t p;
  setup(&p, "fake_ib0", 7);
  char src[64] = "hello", dst[64] = {0};
  struct ibv_mr* ms = reg(&p, src, sizeof src);
  struct ibv_mr* md = reg(&p, dst, sizeof dst);
  CHECK(post_write(p.a, src, 6, ms->lkey, (uintptr_t)dst, md->rkey, 1, 5) == 0);
  struct ibv_wc wc;
  CHECK(!wait_wc(p.cqa, &wc, 0.2)); /* receiver not ready: RNR, retried forever (rnr_retry 7) */
  CHECK(dst[0] == 0);
  CHECK(post_recv0(p.b, 9) == 0);
  CHECK(wait_wc(p.cqb, &wc, 5) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 9);
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_SUCCESS);
  CHECK(strcmp(dst, "hello") == 0);
  return 0;
}

static int write_with_imm_without_receive_fails_rnr(void) {
  pair_t p;
  setup(&p, "fake_ib0", 0);
  char src[64] = "x", dst[64] = {0};
  struct ibv_mr* ms = reg(&p, src, sizeof src);
  struct ibv_mr* md = reg(&p, dst, sizeof dst);
  CHECK(post_write(p.a, src, 2, ms->lkey, (uintptr_t)dst, md->rkey, 1, 5) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_RNR_RETRY_EXC_ERR);
  return 0;
}

/* The responder never reaches RTR: every packet is lost, the requester retries retry_cnt times
 * (timeout 8: ~1 ms each) and fails. */
static int write_to_qp_not_ready_exhausts_retries(void) {
  pair_t p;
  memset(&p, 0, sizeof p);
  p.ctx = open_dev("fake_ib0");
  CHECK(ibv_query_port(p.ctx, 1, &p.port) == 0);
  p.pd = ibv_alloc_pd(p.ctx);
  p.cqa = ibv_create_cq(p.ctx, 16, NULL, NULL, 0);
  p.a = make_qp(&p, p.cqa, 4);
  p.b = make_qp(&p, p.cqa, 4);
  CHECK(to_init(p.a, 0) == 0 && to_init(p.b, IBV_ACCESS_REMOTE_WRITE) == 0);
  CHECK(to_rtr(&p, p.a, p.b->qp_num, 0, 0) == 0 && to_rts(p.a, 8, 3, 7) == 0);
  char src[8] = "x", dst[8] = {0};
  struct ibv_mr* ms = reg(&p, src, 8);
  struct ibv_mr* md = reg(&p, dst, 8);
  double t0 = now_s();
  CHECK(post_write(p.a, src, 1, ms->lkey, (uintptr_t)dst, md->rkey, 0, 0) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_RETRY_EXC_ERR);
  CHECK(now_s() - t0 > 3 * 0.001); /* (retry_cnt) ack timeouts went by */
  CHECK(dst[0] == 0);
  CHECK(qp_state(p.a) == IBV_QPS_ERR);
  return 0;
}

static int psn_mismatch_exhausts_retries(void) {
  pair_t p;
  memset(&p, 0, sizeof p);
  p.ctx = open_dev("fake_ib0");
  CHECK(ibv_query_port(p.ctx, 1, &p.port) == 0);
  p.pd = ibv_alloc_pd(p.ctx);
  p.cqa = ibv_create_cq(p.ctx, 16, NULL, NULL, 0);
  p.a = make_qp(&p, p.cqa, 4);
  p.b = make_qp(&p, p.cqa, 4);
  CHECK(to_init(p.a, 0) == 0 && to_init(p.b, IBV_ACCESS_REMOTE_WRITE) == 0);
  CHECK(to_rtr(&p, p.a, p.b->qp_num, 0, 0) == 0 && to_rts(p.a, 8, 1, 7) == 0);
  CHECK(to_rtr(&p, p.b, p.a->qp_num, 77, 0) == 0); /* expects PSN 77, a starts at 0 */
  char src[8] = "x", dst[8] = {0};
  struct ibv_mr* ms = reg(&p, src, 8);
  struct ibv_mr* md = reg(&p, dst, 8);
  CHECK(post_write(p.a, src, 1, ms->lkey, (uintptr_t)dst, md->rkey, 0, 0) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_RETRY_EXC_ERR && dst[0] == 0);
  return 0;
}

static int send_recv_and_length_error(void) {
  pair_t p;
  setup(&p, "fake_ib0", 7);
  char src[256], dst[64];
  memset(src, 'a', sizeof src);
  memset(dst, 0, sizeof dst);
  struct ibv_mr* ms = reg(&p, src, sizeof src);
  struct ibv_mr* md = reg(&p, dst, sizeof dst);
  struct ibv_sge rs = {(uintptr_t)dst, sizeof dst, md->lkey};
  struct ibv_recv_wr rw, *rbad;
  memset(&rw, 0, sizeof rw);
  rw.wr_id = 3;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  CHECK(ibv_post_recv(p.b, &rw, &rbad) == 0);
  struct ibv_sge ss = {(uintptr_t)src, 40, ms->lkey};
  struct ibv_send_wr sw, *sbad;
  memset(&sw, 0, sizeof sw);
  sw.sg_list = &ss;
  sw.num_sge = 1;
  sw.opcode = IBV_WR_SEND;
  CHECK(ibv_post_send(p.a, &sw, &sbad) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqb, &wc, 5) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
  CHECK(wc.byte_len == 40 && dst[39] == 'a' && dst[40] == 0);
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND);
  /* 100 bytes into a 64-byte receive */
  CHECK(ibv_post_recv(p.b, &rw, &rbad) == 0);
  ss.length = 100;
  CHECK(ibv_post_send(p.a, &sw, &sbad) == 0);
  CHECK(wait_wc(p.cqb, &wc, 5) && wc.status == IBV_WC_LOC_LEN_ERR);
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_REM_INV_REQ_ERR);
  return 0;
}

static int rdma_read_returns_remote_data(void) {
  pair_t p;
  setup(&p, "fake_roce0", 7);
  char remote[32] = "remote bytes", local[32] = {0};
  struct ibv_mr* mr = reg(&p, remote, sizeof remote);
  struct ibv_mr* ml = reg(&p, local, sizeof local);
  struct ibv_sge s = {(uintptr_t)local, 13, ml->lkey};
  struct ibv_send_wr w, *bad;
  memset(&w, 0, sizeof w);
  w.wr_id = 11;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_READ;
  w.wr.rdma.remote_addr = (uintptr_t)remote;
  w.wr.rdma.rkey = mr->rkey;
  CHECK(ibv_post_send(p.a, &w, &bad) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ);
  CHECK(wc.byte_len == 13 && strcmp(local, "remote bytes") == 0);
  return 0;
}

static int bad_lkey_is_local_protection_error(void) {
  pair_t p;
  setup(&p, "fake_ib0", 7);
  char src[64], dst[64];
  struct ibv_mr* ms = reg(&p, src, sizeof src);
  struct ibv_mr* md = reg(&p, dst, sizeof dst);
  CHECK(post_write(p.a, src, 128, ms->lkey, (uintptr_t)dst, md->rkey, 0, 0) == 0); /* past the MR */
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_LOC_PROT_ERR);
  CHECK(qp_state(p.a) == IBV_QPS_ERR);
  /* Further work on a QP in error is flushed. */
  CHECK(post_write(p.a, src, 1, ms->lkey, (uintptr_t)dst, md->rkey, 0, 0) == 0);
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_WR_FLUSH_ERR);
  return 0;
}

static int registration_rules(void) {
  struct ibv_context* ctx = open_dev("fake_ib0");
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  char buf[64];
  CHECK(ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EINVAL);
  CHECK(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE) == NULL && errno == EINVAL);
  long pg = sysconf(_SC_PAGESIZE);
  char* m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED);
  munmap(m + pg, (size_t)pg);
  CHECK(ibv_reg_mr(pd, m, (size_t)pg * 2, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EFAULT);
  struct ibv_mr* mr = ibv_reg_mr(pd, m, (size_t)pg, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr != NULL);
  CHECK(ibv_dealloc_pd(pd) == EBUSY); /* an MR still lives on it */
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
  return 0;
}

static int send_queue_full_is_enomem(void) {
  pair_t p;
  memset(&p, 0, sizeof p);
  p.ctx = open_dev("fake_ib0");
  CHECK(ibv_query_port(p.ctx, 1, &p.port) == 0);
  p.pd = ibv_alloc_pd(p.ctx);
  p.cqa = ibv_create_cq(p.ctx, 64, NULL, NULL, 0);
  p.a = make_qp(&p, p.cqa, 2);
  p.b = make_qp(&p, p.cqa, 2);
  CHECK(to_init(p.a, 0) == 0 && to_init(p.b, 0) == 0);
  CHECK(to_rtr(&p, p.a, p.b->qp_num, 0, 0) == 0);
  CHECK(to_rts(p.a, 20, 7, 7) == 0); /* b stays in INIT: nothing is acknowledged for a while */
  char b[16];
  struct ibv_mr* mr = reg(&p, b, 16);
  CHECK(post_write(p.a, b, 1, mr->lkey, (uintptr_t)b + 8, mr->rkey, 0, 0) == 0);
  CHECK(post_write(p.a, b, 1, mr->lkey, (uintptr_t)b + 8, mr->rkey, 0, 0) == 0);
  CHECK(post_write(p.a, b, 1, mr->lkey, (uintptr_t)b + 8, mr->rkey, 0, 0) == ENOMEM);
  CHECK(ibv_destroy_cq(p.cqa) == EBUSY); /* QPs still use it */
  CHECK(ibv_destroy_qp(p.a) == 0 && ibv_destroy_qp(p.b) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_destroy_cq(p.cqa) == 0);
  CHECK(ibv_dealloc_pd(p.pd) == 0 && ibv_close_device(p.ctx) == 0);
  return 0;
}

static int dmabuf_memfd_registration(void) {
  pair_t p;
  setup(&p, "fake_ib0", 7);
  CHECK(ibv_reg_dmabuf_mr(p.pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EBADF);
  int fd = memfd_create("fv-dmabuf", 0);
  CHECK(fd >= 0 && ftruncate(fd, 3 * 4096) == 0);
  uint64_t iova = 0x7000000000ull;
  struct ibv_mr* md = ibv_reg_dmabuf_mr(p.pd, 4096, 8192, iova, fd,
                                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  CHECK(md != NULL && (uint64_t)(uintptr_t)md->addr == iova);
  char src[100];
  memset(src, 'z', sizeof src);
  struct ibv_mr* ms = reg(&p, src, sizeof src);
  CHECK(post_write(p.a, src, 100, ms->lkey, iova + 50, md->rkey, 0, 0) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_SUCCESS);
  char* view = mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(view != MAP_FAILED);
  CHECK(view[4096 + 50] == 'z' && view[4096 + 149] == 'z' && view[4096 + 49] == 0 && view[4096 + 150] == 0);
  return 0;
}

/* RoCE: both ends must use GIDs of the same RoCE version (v1 and v2 packets differ). */
static int roce_gid_type_mismatch_loses_packets(void) {
  pair_t p;
  memset(&p, 0, sizeof p);
  p.ctx = open_dev("fake_roce0");
  p.eth = 1;
  p.pd = ibv_alloc_pd(p.ctx);
  p.cqa = ibv_create_cq(p.ctx, 16, NULL, NULL, 0);
  p.a = make_qp(&p, p.cqa, 4);
  p.b = make_qp(&p, p.cqa, 4);
  CHECK(to_init(p.a, 0) == 0 && to_init(p.b, IBV_ACCESS_REMOTE_WRITE) == 0);
  CHECK(to_rtr(&p, p.a, p.b->qp_num, 0, 3) == 0 && to_rts(p.a, 8, 1, 7) == 0); /* v2 */
  CHECK(to_rtr(&p, p.b, p.a->qp_num, 0, 2) == 0);                             /* v1 */
  char src[8] = "x", dst[8] = {0};
  struct ibv_mr* ms = reg(&p, src, 8);
  struct ibv_mr* md = reg(&p, dst, 8);
  CHECK(post_write(p.a, src, 1, ms->lkey, (uintptr_t)dst, md->rkey, 0, 0) == 0);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_RETRY_EXC_ERR && dst[0] == 0);
  return 0;
}

static int injected_wc_error(void) {
  setenv("FAKEVERBS_WC_ERROR", "REM_OP_ERR@2", 1);
  pair_t p;
  setup(&p, "fake_ib0", 7);
  char b[16];
  struct ibv_mr* mr = reg(&p, b, 16);
  struct ibv_wc wc;
  CHECK(post_write(p.a, b, 1, mr->lkey, (uintptr_t)b + 8, mr->rkey, 0, 0) == 0);
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_SUCCESS);
  CHECK(post_write(p.a, b, 1, mr->lkey, (uintptr_t)b + 8, mr->rkey, 0, 0) == 0);
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_REM_OP_ERR);
  return 0;
}

static int injected_port_down_raises_async_event(void) {
  setenv("FAKEVERBS_PORT_DOWN", "1", 1);
  pair_t p;
  setup(&p, "fake_ib0", 7);
  char b[16];
  struct ibv_mr* mr = reg(&p, b, 16);
  CHECK(post_write(p.a, b, 1, mr->lkey, (uintptr_t)b + 8, mr->rkey, 0, 0) == 0);
  struct ibv_async_event ev;
  CHECK(ibv_get_async_event(p.ctx, &ev) == 0);
  CHECK(ev.event_type == IBV_EVENT_PORT_ERR && ev.element.port_num == 1);
  ibv_ack_async_event(&ev);
  struct ibv_wc wc;
  CHECK(wait_wc(p.cqa, &wc, 5) && wc.status == IBV_WC_RETRY_EXC_ERR);
  struct ibv_port_attr pa;
  CHECK(ibv_query_port(p.ctx, 1, &pa) == 0 && pa.state == IBV_PORT_DOWN);
  return 0;
}

static int injected_create_qp_failure(void) {
  setenv("FAKEVERBS_FAIL_CREATE_QP", "2", 1);
  pair_t p;
  memset(&p, 0, sizeof p);
  p.ctx = open_dev("fake_ib0");
  p.pd = ibv_alloc_pd(p.ctx);
  p.cqa = ibv_create_cq(p.ctx, 16, NULL, NULL, 0);
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = a.recv_cq = p.cqa;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 1;
  struct ibv_qp* q1 = ibv_create_qp(p.pd, &a);
  CHECK(q1 != NULL);
  CHECK(ibv_create_qp(p.pd, &a) == NULL && errno == ENOMEM);
  a.qp_type = IBV_QPT_UD;
  CHECK(ibv_create_qp(p.pd, &a) == NULL);
  return 0;
}

static const struct {
  const char* name;
  int (*fn)(void);
} cases[] = {
    {"qp_transitions_are_validated", qp_transitions_are_validated},
    {"post_send_needs_rts", post_send_needs_rts},
    {"write_with_imm_lands_and_completes", write_with_imm_lands_and_completes},
    {"write_with_bad_rkey_is_remote_access_error", write_with_bad_rkey_is_remote_access_error},
    {"write_out_of_bounds_is_remote_access_error", write_out_of_bounds_is_remote_access_error},
    {"write_with_imm_waits_for_posted_receive", write_with_imm_waits_for_posted_receive},
    {"write_with_imm_without_receive_fails_rnr", write_with_imm_without_receive_fails_rnr},
    {"write_to_qp_not_ready_exhausts_retries", write_to_qp_not_ready_exhausts_retries},
    {"psn_mismatch_exhausts_retries", psn_mismatch_exhausts_retries},
    {"send_recv_and_length_error", send_recv_and_length_error},
    {"rdma_read_returns_remote_data", rdma_read_returns_remote_data},
    {"bad_lkey_is_local_protection_error", bad_lkey_is_local_protection_error},
    {"registration_rules", registration_rules},
    {"send_queue_full_is_enomem", send_queue_full_is_enomem},
    {"dmabuf_memfd_registration", dmabuf_memfd_registration},
    {"roce_gid_type_mismatch_loses_packets", roce_gid_type_mismatch_loses_packets},
    {"injected_wc_error", injected_wc_error},
    {"injected_port_down_raises_async_event", injected_port_down_raises_async_event},
    {"injected_create_qp_failure", injected_create_qp_failure},
};

int main(int argc, char** argv) {
  int n = (int)(sizeof cases / sizeof cases[0]);
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (int i = 0; i < n; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: %s CASE | --list\n", argv[0]);
    return 2;
  }
  for (int i = 0; i < n; i++)
    if (strcmp(argv[1], cases[i].name) == 0) return cases[i].fn();
  fprintf(stderr, "no case %s\n", argv[1]);
  return 2;
}
