/* Shared state of the InfiniBand/RoCE plugin's files: the verbs table, devices, the
 * per-communicator context, connections (RC QPs plus the TCP socket of the setup), requests and
 * the wire formats. Everything here is hidden; only plugin_exports.c (with plugins/common) exports
 * anything.
 *
 * Data path (see README.md): the receiver advertises each posted receive in a clear-to-send
 * (CTS) entry that it RDMA-writes, with immediate, into a FIFO of IB_MAX_REQUESTS entries in the
 * sender's memory; the sender matches isends to the oldest entry (by tag within it) and
 * RDMA-writes the payload with immediate straight into the receiver's buffer, cut into at most
 * one chunk per QP. Both sides learn of arrivals from receive completions only — never by
 * polling memory, which the verbs ordering rules do not allow.
 *
 * Naming: functions shared between files are net_ib_*; types and macros of this header are
 * ib_* / IB_* (they never reach a symbol table). */
#ifndef WEFT_NET_IB_INTERNAL_H
#define WEFT_NET_IB_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nccl_net.h"
#include "net_common.h"
#include "net_ib_verbs.h"
#include "profiler/net_ib_v1.h"
#include "profiler/profiler_types.h"
#include "util/socket.h"

#define IB_MAX_DEVS 32
#define IB_MAX_QPS 16
#define IB_MAX_RECVS WEFT_NET_MAX_RECVS
#define IB_MAX_REQUESTS NCCL_NET_MAX_REQUESTS
/* A send comm takes NCCL_NET_MAX_REQUESTS x maxRecvs requests, as the net ABI asks. */
#define IB_SEND_REQS (IB_MAX_REQUESTS * IB_MAX_RECVS)
/* A receive comm: IB_MAX_REQUESTS receives plus as many flushes. */
#define IB_RECV_REQS (2 * IB_MAX_REQUESTS)
/* Payloads below this per QP are not cut further (a chunk per QP at most). */
#define IB_STRIPE_MIN (128 * 1024)
/* Work requests per QP: every data chunk of a full window (one per QP per slot), plus CTS
 * writes, plus slack. Receive side the same for the immediates. */
#define IB_SQ_DEPTH (IB_SEND_REQS + IB_MAX_REQUESTS + 16)
#define IB_RQ_DEPTH (IB_SEND_REQS + 16)
#define IB_ACCEPT_CANDIDATES 8
#define IB_PROTO_VERSION 1u
#define IB_HANDLE_MAGIC 0x7765667449425f68ull /* "weftIB_h" */
#define IB_INFO_MAGIC 0x7765667449425f69ull   /* "weftIB_i" */

/* ---- logging: through the logger init received, weft_log until then ---- */
void net_ib_set_logger(ncclDebugLogger_t logger);
ncclDebugLogger_t net_ib_logger(void);
#define IB_WARN(...) net_ib_logger()(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)
#define IB_INFO(flags, ...) net_ib_logger()(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, __VA_ARGS__)

/* ---- NCCL_IB_HCA (net_ib_hca.c) ---- */
#define IB_HCA_MAX 32
typedef struct {
  int exclude; /* leading '^' */
  int exact;   /* leading '=' (after '^'): names match whole, not as prefixes */
  int n;
  struct {
    char name[64];
    int port; /* -1: any port */
  } item[IB_HCA_MAX];
} ib_hca_spec;
/* Grammar: [^][=]name[:port][,name[:port]…]. Empty: every device. */
void net_ib_hca_parse(const char* text, ib_hca_spec* spec);
/* 1 when (device, port) is selected by spec. */
int net_ib_hca_match(const ib_hca_spec* spec, const char* dev, int port);

/* ---- devices (net_ib_dev.c, net_ib_gid.c, net_ib_async.c) ---- */

/* One verbs device: its context, the protection domain every comm on it shares, the async
 * event thread. */
typedef struct {
  char name[64];
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_device_attr attr;
  int dmabuf; /* ibv_reg_dmabuf_mr is supported */
  pthread_t async_thread;
  int async_started;
  int stop_fd;       /* eventfd that stops the async thread */
  int fatal;         /* atomic: IBV_EVENT_DEVICE_FATAL seen */
} ib_hw;

/* One net device: an active port of a verbs device. */
typedef struct {
  char name[80];
  ib_hw* hw;
  int port;
  int link_layer; /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
  uint16_t lid;
  enum ibv_mtu mtu;
  uint32_t max_msg;
  int speed; /* Mb/s */
  uint64_t guid;
  char* pci_path;
  int gid_index;
  union ibv_gid gid;
  int roce_version; /* 1 or 2 on Ethernet, 0 on InfiniBand */
  int ptr_support;
  int port_down;    /* atomic: IBV_EVENT_PORT_ERR seen (cleared by PORT_ACTIVE) */
} ib_dev;

/* Open the verbs devices and pick the ports (first init after none was live). Never fails:
 * with nothing usable the plugin has 0 devices and says why in one INFO line. */
void net_ib_devices_open(void);
/* Release what net_ib_devices_open took (the last finalize). */
void net_ib_devices_close(void);
int net_ib_ndevs(void);
ib_dev* net_ib_dev_get(int dev); /* NULL (and a WARN) when out of range */
ncclResult_t net_ib_devices(int* ndev);
ncclResult_t net_ib_get_properties(int dev, ncclNetProperties_v11_t* props);
/* QPs per connection (WEFT_IB_QPS_PER_CONN, else NCCL_IB_QPS_PER_CONNECTION). */
int net_ib_qps_per_conn(void);

/* net_ib_gid.c: the GID a port's QPs use: NCCL_IB_GID_INDEX, else index 0 on InfiniBand and on
 * RoCE the entry of the preferred version (NCCL_IB_ROCE_VERSION_NUM) and address family
 * (NCCL_IB_ADDR_FAMILY), global before link-local. */
ncclResult_t net_ib_gid_select(ib_dev* d, int gid_tbl_len);
const char* net_ib_gid_str(const union ibv_gid* gid, char* buf, size_t len);

/* net_ib_async.c: the thread draining a device's async events. */
ncclResult_t net_ib_async_start(ib_hw* hw);
void net_ib_async_stop(ib_hw* hw);

/* ---- per-communicator context (net_ib_plugin.c) ---- */
struct ib_pending_connect;
typedef struct {
  weft_net_ctx head;                  /* magic, comm id, traffic class, lock (guards pending) */
  struct ib_pending_connect* pending; /* connects not finished yet */
} ib_ctx;

ncclResult_t net_ib_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                         ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
ncclResult_t net_ib_finalize(void* ctx);
ib_ctx* net_ib_ctx_check(void* ctx, const char* fn);
ncclResult_t net_ib_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr);

/* ---- wire formats ---- */

/* The handle listen writes (≤ NCCL_NET_HANDLE_MAXSIZE). stage belongs to the connecting
 * process: connect keeps its unfinished state under that id (0: not started). */
typedef struct {
  uint64_t magic;
  uint64_t secret;
  weft_sockaddr addr;
  uint32_t version;
  uint64_t stage;
} ib_handle;

/* Exchanged over the setup socket: the sender's (connect) first, then the receiver's reply. */
typedef struct {
  uint64_t magic;
  uint64_t secret;
  uint32_t version;
  uint32_t nqps;
  uint32_t qpn[IB_MAX_QPS];
  uint8_t gid[16];
  uint32_t lid;
  uint32_t link_layer;
  uint32_t mtu;
  uint32_t roce_version;
  int32_t traffic_class;
  int32_t status; /* reply: ncclSuccess, or why the receiver could not set up */
  uint64_t fifo_addr;
  uint32_t fifo_rkey;
  uint32_t pad;
} ib_conn_info;

/* One clear-to-send entry: a posted receive, as the sender needs it. */
typedef struct {
  uint64_t addr;
  uint64_t size;
  uint32_t rkey;
  int32_t tag;
} ib_cts_slot;

typedef struct {
  uint32_t seq;
  uint16_t nslots;
  uint16_t any_tag; /* posted without tags: slots match in order */
  ib_cts_slot slot[IB_MAX_RECVS];
} ib_cts;

/* Immediate of a data write: receive sequence (low 8 bits), slot, chunk count, truncation. */
#define IB_IMM(seq, slot, nchunks, trunc)                                          \
  (((uint32_t)(seq)&0xffu) << 24 | ((uint32_t)(slot)&7u) << 21 |                   \
   ((uint32_t)((nchunks)-1) & 0x1fu) << 16 | ((trunc) ? 1u << 15 : 0u))
#define IB_IMM_SEQ(imm) ((imm) >> 24)
#define IB_IMM_SLOT(imm) (((imm) >> 21) & 7u)
#define IB_IMM_NCHUNKS(imm) ((((imm) >> 16) & 0x1fu) + 1)
#define IB_IMM_TRUNC(imm) (((imm) >> 15) & 1u)

/* Work request ids: kind, QP index, request index. */
enum { IB_WR_DATA = 1, IB_WR_DATA_RECV, IB_WR_CTS, IB_WR_CTS_RECV, IB_WR_FLUSH };
#define IB_WRID(kind, qp, idx) ((uint64_t)(kind) << 56 | (uint64_t)(qp) << 32 | (uint32_t)(idx))
#define IB_WRID_KIND(id) ((int)((id) >> 56))
#define IB_WRID_QP(id) ((int)(((id) >> 32) & 0xffffff))
#define IB_WRID_IDX(id) ((int)((id)&0xffffffffu))

/* ---- connections ---- */
enum { IB_SEND = 1, IB_RECV = 2 };
enum { IB_REQ_FREE = 0, IB_REQ_SEND, IB_REQ_RECV, IB_REQ_FLUSH };

struct ib_comm;
typedef struct {
  struct ib_comm* comm;
  int kind;
  int idx;
  ncclResult_t error; /* request-level failure (truncation), reported when done */
  int pending;        /* completions still to come: data writes, the CTS write, the flush read */
  size_t size;        /* send: bytes sent (after matching: at most the receive's size) */
  char* data;         /* send: the buffer, until matched */
  const void* mh;     /* send: its registration */
  int tag;            /* send: its tag */
  int posted;         /* send: matched to a receive and its writes posted */
  int n;              /* receive: slots */
  uint32_t seq;       /* receive: CTS sequence */
  int slots_left;     /* receive: slots whose data has not fully arrived */
  size_t got[IB_MAX_RECVS];
  uint8_t seen[IB_MAX_RECVS];
  void* phandle;         /* send: the core's profiler parent (NULL: no NetPlugin events) */
  void* ev[IB_MAX_QPS];  /* open NetPlugin events: send: the data write on QP q; receive: slot */
} ib_req;
_Static_assert(IB_MAX_RECVS <= IB_MAX_QPS, "ib_req.ev holds a receive's slots");

typedef struct ib_comm {
  uint64_t magic;
  int kind;
  int dev_index;
  ib_dev* dev;
  int fd; /* setup socket, kept open: its end tells that the peer went away */
  char peer[WEFT_SOCKADDR_STRLEN];
  int nqps;
  struct ibv_qp* qps[IB_MAX_QPS];
  struct ibv_cq* cq;
  int cq_size;
  ncclResult_t error; /* first failure of the connection (sticky) */
  ncclProfilerCallback_t prof; /* the context's profFn (NULL: none) */
  int async_event;    /* atomic: an async event on one of our QPs/CQ (-1: none); their context */
  uint64_t next_live_check_ns;
  int next_qp;
  /* requests */
  int nreqs;
  ib_req* reqs;
  int* free_ids;
  int nfree;
  /* send side: the FIFO the receiver writes, and what arrived in it */
  ib_cts* fifo;
  struct ibv_mr* fifo_mr;
  ib_cts cts[IB_MAX_REQUESTS];
  uint8_t cts_valid[IB_MAX_REQUESTS];
  uint8_t cts_matched[IB_MAX_REQUESTS][IB_MAX_RECVS];
  uint32_t send_seq;
  int* queue; /* sends not matched yet, in post order (ring of nreqs) */
  unsigned q_head, q_tail;
  /* receive side */
  ib_cts* staging; /* one CTS entry per request */
  struct ibv_mr* staging_mr;
  uint64_t remote_fifo;
  uint32_t remote_fifo_rkey;
  uint32_t recv_seq;
  int recvs_posted; /* receive requests in flight (≤ IB_MAX_REQUESTS) */
  ib_req* by_seq[256];
  struct ibv_qp* flush_qp;
  char* flush_buf;
  struct ibv_mr* flush_mr;
} ib_comm;

/* net_ib_comm.c: resources of a comm (CQ, QPs in INIT, FIFO or staging, flush QP), the
 * transitions to RTR/RTS once the peer's info is known, teardown, checks. */
ncclResult_t net_ib_comm_create(int kind, int dev, int nqps, ib_comm** out);
/* Fill the local part of an info message. */
void net_ib_comm_info(const ib_comm* c, ib_conn_info* info);
/* Bring every QP to RTS toward the peer's QPs; receiver side also posts its receives. */
ncclResult_t net_ib_comm_connect_qps(ib_comm* c, const ib_conn_info* remote, int traffic_class);
void net_ib_comm_destroy(ib_comm* c);
ib_comm* net_ib_comm_check(void* comm, int kind, const char* fn);

/* NetPlugin events (net_common.h), one per work request, NCCL's descriptor
 * (ncclProfilerNetIbDescr_v1_t): send: each data write (IBV_WR_RDMA_WRITE_WITH_IMM, its wr_id,
 * QP and chunk length) from its post to its completion; receive: each slot, from the post of the
 * clear-to-send write that offers it (its wr_id and QP, opcode IBV_WC_RECV_RDMA_WITH_IMM, length
 * the slot's size) to the completion of the slot's last chunk, with the length then updated to
 * the bytes that arrived. Open events end when the connection fails or closes. */
#define IB_PROF_ID ((int64_t)(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER))

/* The descriptor of a work request on QP q of c. */
static inline void ib_prof_descr(const ib_comm* c, uint64_t wr_id, int opcode, int q,
                                 size_t length, ncclProfilerNetIbDescr_v1_t* d) {
  memset(d, 0, sizeof *d);
  d->type = ncclProfileQp;
  d->qp.device = c->dev_index;
  d->qp.wr_id = wr_id;
  d->qp.opcode = opcode;
  d->qp.qpNum = (int)c->qps[q]->qp_num;
  d->qp.length = length;
}
/* Stop every open event of the comm's requests (its failure, its close). */
void net_ib_prof_stop_all(ib_comm* c);

/* Record the connection's first failure (its open NetPlugin events end); 1 when this call
 * recorded it (the caller WARNs). */
int net_ib_comm_fail(ib_comm* c, ncclResult_t res);

/* net_ib_qp.c */
/* What a QP is created with: the int its async events go to (net_ib_async.c; -1 until one
 * comes), CQ (send and receive), queue depths, inline bytes. */
typedef struct {
  int* async_event;
  struct ibv_cq* cq;
  int send_wr, recv_wr;
  uint32_t inline_bytes;
} ib_qp_caps;
/* A QP of c in INIT (c's CQ, the net path's depths, no inline data). */
ncclResult_t net_ib_qp_create(ib_comm* c, int access, struct ibv_qp** out);
/* The same on port d with caps (the RMA group's QPs). */
ncclResult_t net_ib_qp_create_on(const ib_dev* d, const ib_qp_caps* caps, int access,
                                 struct ibv_qp** out);
ncclResult_t net_ib_qp_rtr(const ib_dev* d, struct ibv_qp* qp, uint32_t remote_qpn,
                           const struct ibv_ah_attr* ah, enum ibv_mtu mtu);
ncclResult_t net_ib_qp_rts(const ib_dev* d, struct ibv_qp* qp);
/* The address of the peer's port as the QPs of d see it. */
ncclResult_t net_ib_make_ah(const ib_dev* d, const ib_conn_info* remote, int traffic_class,
                            struct ibv_ah_attr* ah);

/* net_ib_connect.c */
ncclResult_t net_ib_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t net_ib_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                               ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class);
ncclResult_t net_ib_connect(void* ctx, int dev, void* handle, void** send_comm,
                            ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t net_ib_accept(void* listen_comm, void** recv_comm,
                           ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t net_ib_close_listen(void* listen_comm);
void net_ib_pending_free_all(ib_ctx* ctx);
/* The address connection setup uses (NCCL_SOCKET_IFNAME's first interface, chosen once). */
ncclResult_t net_ib_oob_interface(weft_sockaddr* addr);

/* net_ib_send.c / net_ib_recv.c / net_ib_progress.c */
ncclResult_t net_ib_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                          void* phandle, void** request);
ncclResult_t net_ib_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                          void** mhandles, void** phandles, void** request);
ncclResult_t net_ib_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                           void** request);
ncclResult_t net_ib_test(void* request, int* done, int* sizes);
ncclResult_t net_ib_close_send(void* send_comm);
ncclResult_t net_ib_close_recv(void* recv_comm);
/* Requests of a comm. */
ib_req* net_ib_req_alloc(ib_comm* c, int kind);
void net_ib_req_free(ib_req* r);
/* Drain the comm's CQ. ncclSuccess, or the connection's failure. */
ncclResult_t net_ib_poll(ib_comm* c);
/* Sender: match queued sends to arrived CTS entries and post their writes. */
ncclResult_t net_ib_send_progress(ib_comm* c);
/* Sender: an arrived CTS entry (from the completion of its write-with-immediate). */
ncclResult_t net_ib_send_cts_arrived(ib_comm* c, uint32_t seq, int qp);
/* Receiver: a data chunk arrived. */
ncclResult_t net_ib_recv_data_arrived(ib_comm* c, uint32_t imm, uint32_t len, int qp);
/* 1 for completion statuses that put the fault at the peer or the path (ncclRemoteError). */
int net_ib_status_is_remote(enum ibv_wc_status s);
/* Re-post one receive (for an immediate) on QP q of c. */
ncclResult_t net_ib_post_recv_wr(ib_comm* c, int q, int kind);

/* net_ib_mr.c */
typedef struct {
  uint64_t magic;
  struct ibv_mr* mr; /* NULL for a zero-length registration */
  int type;          /* NCCL_PTR_* */
} ib_mr;
ncclResult_t net_ib_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t net_ib_reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                  int fd, void** mhandle);
ncclResult_t net_ib_dereg_mr(void* comm, void* mhandle);
ib_mr* net_ib_mr_check(void* mhandle, const char* fn);
/* Register plugin-internal memory (FIFO, staging, flush buffer) on d's PD. */
ncclResult_t net_ib_reg_internal(ib_dev* d, void* buf, size_t len, int access, struct ibv_mr** out,
                                 const char* what);

#endif
