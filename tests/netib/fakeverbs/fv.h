/* fakeverbs: a test-only libibverbs stand-in that emulates RDMA devices between processes on
 * one host, so net-ib can be tested without an HCA. It exports the verbs entry points net-ib
 * resolves (ibv_get_device_list … ibv_get_async_event) and fills ibv_context.ops with
 * post_send/post_recv/poll_cq, as a provider does.
 *
 * The emulated fabric: every QP binds an abstract Unix socket named by (uid, device, port, QPN).
 * A requester QP in RTS connects to the responder named by its RTR address (LID or GID → device
 * and port through the shared device table, plus dest_qp_num) and streams request packets; the
 * responder's "NIC" (a thread per QP) checks them as an HCA would — QP state, source QP and
 * address, PSN, access flags, R_Key and bounds, a posted receive for SEND and WRITE_WITH_IMM —
 * places the data with a copy into its own process's registered memory, writes the completions
 * and answers ACK, NAK(status) or, for a packet an HCA would silently discard, DROP (the
 * requester then retransmits after the QP's ack timeout, go-back-N, up to retry_cnt times, and
 * fails the WR with IBV_WC_RETRY_EXC_ERR). Receiver-not-ready stalls the stream (rnr_retry 7) or
 * NAKs after the RNR budget.
 *
 * Configuration and injected faults come from the environment (see fv_config.c):
 * FAKEVERBS_DEVICES, FAKEVERBS_DOWN_PORTS, FAKEVERBS_FAIL_CREATE_QP, FAKEVERBS_FAIL_REG_MR,
 * FAKEVERBS_WC_ERROR, FAKEVERBS_PORT_DOWN, FAKEVERBS_NO_DMABUF, FAKEVERBS_TRACE.
 *
 * Never installed; tests load it through WEFT_IB_VERBS_LIB. */
#ifndef FAKEVERBS_FV_H
#define FAKEVERBS_FV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* verbs.h turns these names into inline wrappers; the library defines the real symbols. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define FV_EXPORT __attribute__((visibility("default")))

#define FV_MAX_DEVS 8
#define FV_MAX_PORTS 2
#define FV_GID_TBL 16
#define FV_MAX_SGE 4
#define FV_MAX_INLINE 256
#define FV_MAX_QP_WR 16384
#define FV_MAX_CQE (1 << 20)
#define FV_MAX_MSG (1u << 30)
#define FV_MAX_EVENTS 256

/* ---- devices (fv_config.c, fv_device.c) ---- */

typedef struct {
  enum ibv_port_state state;
  enum ibv_mtu mtu;
  uint16_t lid;
  int ngid;
  union ibv_gid gid[FV_GID_TBL];
  uint32_t gid_type[FV_GID_TBL]; /* IBV_GID_TYPE_* */
  int fault_down;                /* atomic: brought down by FAKEVERBS_PORT_DOWN */
} fv_port;

typedef struct {
  struct ibv_device dev; /* handed out by ibv_get_device_list */
  int index;
  int eth; /* link layer Ethernet (RoCE) rather than InfiniBand */
  int nports;
  uint64_t guid; /* host order */
  fv_port port[FV_MAX_PORTS + 1]; /* 1-based */
} fv_device;

typedef struct fv_qp fv_qp;
typedef struct fv_cq fv_cq;

typedef struct fv_context {
  struct ibv_context ctx; /* first: the pointer the user holds */
  fv_device* dev;
  pthread_mutex_t lock; /* events */
  int pipe_w;           /* one byte per queued event; ctx.async_fd is the read end */
  struct ibv_async_event events[FV_MAX_EVENTS];
  unsigned ev_head, ev_tail;
  struct fv_context* next; /* open contexts (fv_device.c) */
} fv_context;

/* Parses the environment once; never fails (bad entries are reported on stderr and skipped). */
void fv_config_load(void);
int fv_ndevs(void);
fv_device* fv_dev(int i);
/* The port whose GID table holds gid, or whose LID is lid (lid != 0). */
int fv_find_port_by_gid(const union ibv_gid* gid, int* dev, int* port);
int fv_find_port_by_lid(uint16_t lid, int* dev, int* port);
int fv_port_is_up(const fv_device* d, int port);

/* Queue an async event on every open context of dev (element as given). */
void fv_async_post_device(fv_device* dev, struct ibv_async_event ev);
/* Queue an async event on one context. Returns 0, or -1 when the queue is full. */
int fv_async_post(fv_context* c, struct ibv_async_event ev);

/* ---- faults (fv_config.c) ---- */
typedef struct {
  long fail_create_qp; /* the n-th create_qp and later fail (0: never) */
  long fail_reg_mr;    /* the n-th reg_mr and later fail */
  long wc_error_at;    /* the n-th posted send WR completes with wc_error_status */
  int wc_error_status;
  long port_down_at;   /* after n posted send WRs, the port of that QP goes down */
  int no_dmabuf;
  int trace;
} fv_faults;
extern fv_faults fv_fault;
/* Counters (atomic). */
long fv_count_create_qp(void);
long fv_count_reg_mr(void);
long fv_count_send_wr(void);
void fv_trace(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- PD and MR (fv_mr.c) ---- */
typedef struct {
  struct ibv_pd pd;
  int nobjs; /* MRs and QPs on this PD (atomic) */
} fv_pd;

enum { FV_LOCAL = 0, FV_REMOTE = 1 };
/* Resolve [addr, addr+len) of the MR named by key in pd for an access (IBV_ACCESS_* bits needed;
 * remote: key is an R_Key, checked against remote rights). Returns the host pointer, or NULL
 * (bad key, wrong PD, missing right, out of bounds). len 0 always resolves (to NULL-safe dummy)
 * without a key check, as zero-length operations carry no key. */
char* fv_mr_resolve(fv_pd* pd, uint32_t key, uint64_t addr, size_t len, int access, int remote);

/* ---- CQ (fv_cq.c) ---- */
struct fv_cq {
  struct ibv_cq cq;
  fv_context* ctx;
  pthread_mutex_t lock;
  struct ibv_wc* ring;
  int cap, head, count;
  int overrun;
  int nqps; /* QPs using it (atomic) */
};
/* Append a completion. On overrun the CQ turns to error and IBV_EVENT_CQ_ERR is raised. */
void fv_cq_push(fv_cq* cq, const struct ibv_wc* wc);
int fv_poll_cq(struct ibv_cq* cq, int n, struct ibv_wc* wc);

/* ---- QP (fv_qp.c, fv_post.c; its NIC threads: fv_wire.c, fv_responder.c, fv_requester.c) ---- */
typedef struct {
  uint64_t wr_id;
  enum ibv_wr_opcode opcode;
  unsigned flags;
  uint32_t imm; /* as given (network order) */
  uint64_t raddr;
  uint32_t rkey;
  int nsge;
  struct ibv_sge sge[FV_MAX_SGE];
  int is_inline;
  unsigned char inl[FV_MAX_INLINE];
  uint64_t len;
  uint32_t psn;
  int retries;
  int fault_status; /* injected completion status (0: none) */
  int signaled;
} fv_swr;

typedef struct {
  uint64_t wr_id;
  int nsge;
  struct ibv_sge sge[FV_MAX_SGE];
} fv_rwr;

struct fv_qp {
  struct ibv_qp qp; /* first */
  fv_context* ctx;
  fv_pd* pd;
  fv_cq *scq, *rcq;
  int sq_sig_all;
  struct ibv_qp_cap cap;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  /* attributes */
  enum ibv_qp_state state;
  int port;
  uint16_t pkey_index;
  unsigned access;
  enum ibv_mtu path_mtu;
  uint32_t dest_qpn;
  uint32_t rq_psn, sq_psn;
  struct ibv_ah_attr ah;
  uint8_t min_rnr_timer, timeout, retry_cnt, rnr_retry;
  int remote_dev, remote_port; /* from the RTR address; -1 when it names no port */
  /* send queue: [sq_free, sq_head) completed but not yet freed by a signaled completion,
   * [sq_head, sq_sent) on the wire, [sq_sent, sq_tail) waiting */
  fv_swr* sq;
  uint64_t sq_free, sq_head, sq_sent, sq_tail;
  uint32_t next_psn;
  uint32_t gen;             /* transmission generation: bumped at every go-back-N */
  uint64_t retransmit_at_ns;
  fv_rwr* rq;
  uint64_t rq_head, rq_tail;
  uint32_t expect_psn; /* responder */
  /* wire */
  int listen_fd, in_fd, out_fd, wake_fd;
  int out_broken;
  uint64_t out_epoch; /* bumped when out_fd is replaced */
  int stop;
  pthread_t rx_thread, tx_thread, ack_thread;
  int rx_started, tx_started;
  uint64_t tx_busy; /* 1 + index of the WR the tx thread is streaming (0: none) */
  int events_unacked;
};

int fv_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad);
int fv_post_recv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad);

/* Under qp->lock: move to ERR, flushing every outstanding WR with IBV_WC_WR_FLUSH_ERR. */
void fv_qp_to_error_locked(fv_qp* q);
/* Under qp->lock: complete the WR at sq_head with status (and the QP then errors unless
 * status is success). */
void fv_qp_complete_head_locked(fv_qp* q, enum ibv_wc_status status, uint32_t byte_len);
/* Under qp->lock: the WR at index idx fails with status; every other outstanding WR is flushed
 * and the QP is in ERR. */
void fv_qp_fail_at_locked(fv_qp* q, uint64_t idx, enum ibv_wc_status status);
/* Under qp->lock: the packet at sq_head was lost (DROP, connection loss): retransmit after the
 * ack timeout, or fail with RETRY_EXC_ERR when retries are used up. */
void fv_qp_lost_locked(fv_qp* q);
uint64_t fv_now_ns(void);
/* 4.096 us * 2^timeout (timeout 0: infinite, reported as a long wait). */
uint64_t fv_ack_timeout_ns(uint8_t timeout);
uint64_t fv_rnr_timer_ns(uint8_t code);

/* fv_wire.c: the listening socket of a QP, and starting/stopping its NIC threads. */
int fv_wire_listen(fv_qp* q);
int fv_wire_start_rx(fv_qp* q);
int fv_wire_start_tx(fv_qp* q);
void fv_wire_stop(fv_qp* q);

#endif
