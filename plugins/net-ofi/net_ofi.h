/* Shared state of the libfabric net plugin's files. Everything here is hidden; only
 * plugin_exports_*.c export anything.
 *
 * Model. A device is one (provider, domain) pair that fi_getinfo reported (net_ofi_dev.c). It
 * is opened lazily into a NIC: fabric, domain, one RDM endpoint, its address vector and one
 * completion queue (net_ofi_nic.c). Every comm of the process on that device (listen, send,
 * recv) shares the endpoint; a comm is a 30-bit id in the endpoint's tag space, not a libfabric
 * object. All calls on a NIC, and all state reachable from it, are serialised by nic->lock.
 *
 * Tags (64 bits, or what mem_tag_format leaves; see ofi_tag_*):
 *   | kind (2) | destination comm id (id_bits) | payload (32) |
 *   kind DATA: payload = the NCCL tag of the isend, so a grouped receive posts one fi_trecv per
 *              slot with that slot's tag, and matching per (comm, tag) is FIFO: libfabric
 *              matches same-tag receives in post order and we require FI_ORDER_SAS.
 *   kind CTRL: payload = OFI_CTRL_CONNECT (to a listen id), OFI_CTRL_ACCEPT (to a send comm) or
 *              OFI_CTRL_PROBE (to any connected comm, 0 bytes: a liveness check).
 * Naming: functions shared between files are net_ofi_*; types and macros ofi_* / OFI_*. */
#ifndef WEFT_NET_OFI_H
#define WEFT_NET_OFI_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "nccl_net.h"
#include "net_common.h"
#include "profiler/net_ofi_v1.h"

/* libfabric API version we ask for: FI_HMEM and fi_mr_attr.iface exist since 1.10. */
#define OFI_API_VERSION FI_VERSION(1, 11)

#define OFI_MAX_DEVS 16
#define OFI_MAX_RECVS WEFT_NET_MAX_RECVS
#define OFI_RECV_WINDOW NCCL_NET_MAX_REQUESTS
#define OFI_SEND_WINDOW (NCCL_NET_MAX_REQUESTS * OFI_MAX_RECVS)
#define OFI_LISTEN_BUFS 4
/* Endpoint addresses we can carry in a handle / a control message. */
#define OFI_ADDR_MAX 88
/* Slots of the provider's tx/rx queues kept free of data ops, for control messages and probes. */
#define OFI_QUEUE_RESERVE 32

/* ---- the libfabric calls the plugin makes, replaceable (fault injection in tests) ---- */
typedef struct {
  int (*getinfo)(uint32_t version, const char* node, const char* service, uint64_t flags,
                 const struct fi_info* hints, struct fi_info** info);
  void (*freeinfo)(struct fi_info* info);
  struct fi_info* (*dupinfo)(const struct fi_info* info);
  int (*fabric)(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context);
  int (*domain)(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain,
                void* context);
  int (*endpoint)(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                  void* context);
  int (*av_open)(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av,
                 void* context);
  int (*cq_open)(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq,
                 void* context);
  int (*ep_bind)(struct fid_ep* ep, struct fid* bfid, uint64_t flags);
  int (*enable)(struct fid_ep* ep);
  int (*getname)(fid_t fid, void* addr, size_t* addrlen);
  int (*av_insert)(struct fid_av* av, const void* addr, size_t count, fi_addr_t* fi_addr,
                   uint64_t flags, void* context);
  const char* (*av_straddr)(struct fid_av* av, const void* addr, char* buf, size_t* len);
  int (*mr_regattr)(struct fid_domain* domain, const struct fi_mr_attr* attr, uint64_t flags,
                    struct fid_mr** mr);
  int (*mr_bind)(struct fid_mr* mr, struct fid* bfid, uint64_t flags);
  int (*mr_enable)(struct fid_mr* mr);
  int (*close)(struct fid* fid);
  ssize_t (*tsend)(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
                   uint64_t tag, void* context);
  ssize_t (*trecv)(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src,
                   uint64_t tag, uint64_t ignore, void* context);
  ssize_t (*cancel)(fid_t fid, void* context);
  ssize_t (*cq_read)(struct fid_cq* cq, void* buf, size_t count);
  ssize_t (*cq_readerr)(struct fid_cq* cq, struct fi_cq_err_entry* buf, uint64_t flags);
  const char* (*cq_strerror)(struct fid_cq* cq, int prov_errno, const void* err_data, char* buf,
                             size_t len);
} ofi_fns;

/* The table every call goes through. Tests replace entries (and put them back) while no NIC is
 * being used; the plugin never writes it. */
extern ofi_fns net_ofi_fi;
/* The libfabric functions themselves, for a test wrapper to forward to. */
extern const ofi_fns net_ofi_fi_default;

/* ---- logging: through the logger init received, weft_log until then ---- */
void net_ofi_set_logger(ncclDebugLogger_t logger);
ncclDebugLogger_t net_ofi_logger(void);
#define OFI_WARN(...) net_ofi_logger()(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)
#define OFI_INFO(flags, ...) \
  net_ofi_logger()(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, __VA_ARGS__)

/* Text of a libfabric return code (negative or positive errno). */
const char* net_ofi_strerror(int rc);
/* The result a failed libfabric call or completion maps to: ncclRemoteError when the peer is
 * gone or unreachable, ncclSystemError otherwise. */
ncclResult_t net_ofi_result(int err);

/* ---- settings (params.def, section plugins/net-ofi) ---- */
typedef struct {
  int probe_ms;        /* WEFT_OFI_PROBE_MS */
  int peer_timeout_ms; /* WEFT_OFI_PEER_TIMEOUT_MS */
  int mr_strict;       /* WEFT_OFI_MR_STRICT */
  int mr_cache;        /* WEFT_OFI_MR_CACHE */
  int pid_check;       /* WEFT_OFI_PEER_PID_CHECK */
} ofi_settings;
extern ofi_settings net_ofi_cfg;

/* ---- same-host peer identity (net_ofi_peer.c) ---- */
typedef struct {
  uint64_t host;  /* hash of boot id and pid namespace: equal = same host and namespace */
  uint64_t start; /* process start time, clock ticks since boot */
  int32_t pid;
  uint32_t pad;
} ofi_ident;

void net_ofi_ident_self(ofi_ident* id);
/* 1 when id names a process on this host that no longer runs, 0 when it runs or lives
 * elsewhere. */
int net_ofi_ident_gone(const ofi_ident* id);

/* ---- devices (net_ofi_dev.c) ---- */
struct ofi_nic;

typedef struct {
  struct fi_info* info; /* one entry of the chosen provider, for this domain */
  char name[64];        /* domain name (an interface for tcp/udp/verbs, "shm", …) */
  char pci_path[PATH_MAX];
  int has_pci;
  int speed;            /* Mb/s */
  int hmem;             /* FI_HMEM with CUDA */
  int tag_bits;         /* usable tag bits */
  int loopback;
  int pid;              /* process info belongs to (see net_ofi_dev_refresh) */
  struct ofi_nic* nic;  /* opened state */
} ofi_dev;

/* Discover once per process (serialised). ncclSystemError when no provider fits. */
ncclResult_t net_ofi_devices_init(void);
int net_ofi_ndevs(void);
ofi_dev* net_ofi_dev_get(int dev, const char* fn); /* NULL (and a WARN) when out of range */
/* With the global lock held: re-read the device's fi_info in a process forked since discovery. */
ncclResult_t net_ofi_dev_refresh(ofi_dev* d);
const char* net_ofi_provider(void);                /* name of the chosen provider */
ncclResult_t net_ofi_devices(int* ndev);
ncclResult_t net_ofi_get_properties(int dev, ncclNetProperties_v11_t* props);

/* ---- the opened device (net_ofi_nic.c) ---- */
struct ofi_comm;
struct ofi_mr_entry;

typedef struct {
  uint8_t addr[OFI_ADDR_MAX];
  size_t len;
  fi_addr_t fi;
} ofi_av_entry;

typedef struct ofi_nic {
  int dev;
  int pid; /* the process that opened it */
  ofi_dev* d;
  pthread_mutex_t lock;
  int refs; /* comms using the NIC (under the plugin's global lock) */
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  uint8_t addr[OFI_ADDR_MAX];
  size_t addrlen;
  uint64_t mr_mode;     /* what the provider requires, plus the strict emulation */
  uint64_t mr_access;   /* access flags of every registration */
  int tag_bits, id_bits;
  uint32_t next_id;
  int id_wrapped;
  uint64_t next_key;    /* requested keys, without FI_MR_PROV_KEY */
  ofi_av_entry* avs;
  int nav, avcap;
  struct ofi_mr_entry* mrs; /* registration cache */
  struct ofi_comm* comms;   /* every comm of the NIC, closing ones included */
  int tx_posted, rx_posted, tx_limit, rx_limit;
  int cq_error;             /* a failed fi_cq_read (not a completion error) */
} ofi_nic;

/* Take / release a comm's reference on a device's NIC (opened if needed). Both take the plugin's
 * global lock; release closes the NIC when nothing uses it (no comm, no live context). */
ncclResult_t net_ofi_nic_acquire(int dev, ofi_nic** out);
void net_ofi_nic_release(ofi_nic* nic);
/* Open every device's NIC (init: the cost stays out of listen/connect). */
ncclResult_t net_ofi_nics_open(void);
/* Close every NIC nobody uses (the last context went). */
void net_ofi_nics_idle_close(void);
/* Called with nic->lock held: read the CQ and dispatch completions. */
ncclResult_t net_ofi_progress(ofi_nic* nic);
/* With nic->lock held: the fi_addr for an endpoint address (inserted once per NIC). */
ncclResult_t net_ofi_av_lookup(ofi_nic* nic, const void* addr, size_t len, fi_addr_t* out);
/* With nic->lock held: a comm id not in use on the NIC. */
uint32_t net_ofi_nic_new_id(ofi_nic* nic);

/* Tag helpers. */
enum { OFI_KIND_DATA = 0, OFI_KIND_CTRL = 1 };
enum { OFI_CTRL_CONNECT = 1, OFI_CTRL_ACCEPT = 2, OFI_CTRL_PROBE = 3 };
static inline uint64_t ofi_tag(const ofi_nic* nic, int kind, uint32_t id, uint32_t payload) {
  return ((uint64_t)kind << (nic->tag_bits - 2)) | ((uint64_t)id << 32) | payload;
}

/* ---- memory registration (net_ofi_mr.c) ---- */
typedef struct ofi_mr_entry {
  struct ofi_mr_entry* next;
  uintptr_t base;
  size_t len;
  int type; /* NCCL_PTR_HOST / NCCL_PTR_CUDA */
  int cuda_dev;
  int refs;
  struct fid_mr* mr;
} ofi_mr_entry;

typedef struct {
  uint32_t magic;
  ofi_nic* nic;
  ofi_mr_entry* entry; /* NULL when the provider needs no registration for this buffer */
} ofi_mr_handle;

/* With nic->lock held. */
ncclResult_t net_ofi_mr_get(ofi_nic* nic, void* data, size_t size, int type, ofi_mr_handle** out);
void net_ofi_mr_put(ofi_nic* nic, ofi_mr_handle* h);
/* Closes every cached registration (NIC close); free_entries also frees the cache. */
void net_ofi_mr_close_all(ofi_nic* nic, int free_entries);
static inline void* ofi_mr_desc(const ofi_mr_handle* h) {
  return h && h->entry && h->entry->mr ? fi_mr_desc(h->entry->mr) : NULL;
}
ncclResult_t net_ofi_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t net_ofi_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                   uint64_t offset, int fd, void** mhandle);
ncclResult_t net_ofi_dereg_mr(void* comm, void* mhandle);
/* CUDA through libcuda (dlopen'd): device count (0 without CUDA) and a pointer's device. */
int net_ofi_cuda_devices(void);
int net_ofi_cuda_ptr_device(const void* ptr, int* dev);
int net_ofi_cuda_trial_alloc(size_t len, void** ptr);
void net_ofi_cuda_trial_free(void* ptr);
/* With nic->lock held or before the NIC is shared: register a little CUDA memory once; a
 * provider that offers FI_HMEM but cannot do it loses NCCL_PTR_CUDA. */
void net_ofi_mr_hmem_check(ofi_nic* nic);

/* ---- comms and operations (net_ofi_comm.c) ---- */
enum { OFI_LISTEN = 1, OFI_SEND = 2, OFI_RECV = 3 };
enum {
  OFI_OP_SEND = 1, /* data */
  OFI_OP_RECV,     /* data */
  OFI_OP_CONNECT_RECV, /* a listen comm's connect-request buffer */
  OFI_OP_ACCEPT_RECV,  /* a send comm's accept buffer */
  OFI_OP_CTRL_SEND,    /* connect request or accept reply */
  OFI_OP_PROBE_RECV,
  OFI_OP_PROBE_SEND
};

struct ofi_req;

/* One posted (or to-be-posted) libfabric operation. fctx is libfabric's scratch space for
 * FI_CONTEXT/FI_CONTEXT2 providers and the completion's op_context. */
typedef struct ofi_op {
  struct fi_context2 fctx;
  uint8_t kind;
  uint8_t posted; /* inside the provider */
  uint8_t queued; /* waiting in the comm's post queue */
  uint8_t slot;
  struct ofi_comm* comm;
  struct ofi_req* req;
  void* buf;
  size_t len;
  void* desc;
  uint64_t tag, ignore;
  fi_addr_t addr;
  void* phandle; /* data ops: the core's profiler parent until the event starts (then NULL) */
  void* ev;      /* its open NetPlugin event */
} ofi_op;

enum { OFI_REQ_FREE = 0, OFI_REQ_ACTIVE, OFI_REQ_ZOMBIE };

typedef struct ofi_req {
  uint32_t magic;
  int state;
  int kind;   /* OFI_SEND, OFI_RECV, or 0 for an iflush */
  int n;      /* operations */
  int ndone;
  int nposted;
  ncclResult_t error;
  struct ofi_comm* comm;
  int sizes[OFI_MAX_RECVS];
  ofi_op op[]; /* n of them; the comm's pool has a fixed stride */
} ofi_req;

/* Wire format of connect requests and accept replies (host byte order; the magic catches a
 * foreign peer). */
typedef struct {
  uint32_t magic;
  uint16_t version;
  uint16_t type;
  uint32_t src_id;
  uint32_t dst_id;
  uint64_t secret;
  ofi_ident ident;
  uint32_t addrlen;
  uint32_t pad;
  uint8_t addr[OFI_ADDR_MAX];
} ofi_ctrl_msg;

/* Control buffers of one comm: registered as one region when the provider wants local MRs. */
typedef struct {
  ofi_ctrl_msg msg[OFI_LISTEN_BUFS]; /* listen: connect requests; send: [0] tx [1] rx; recv: [0] tx */
  uint8_t probe_rx[8];
  uint8_t probe_tx[8];
} ofi_ctrl_region;

typedef struct ofi_comm {
  uint32_t magic;
  int kind;
  ofi_nic* nic;
  struct ofi_comm* next; /* nic->comms */
  uint32_t id;           /* ours: tags addressed to this comm carry it */
  uint32_t peer_id;      /* the other side's comm (send: its receiver) */
  fi_addr_t peer;
  char peer_str[64];
  ofi_ident peer_ident;
  ncclResult_t error; /* first failure of the connection */
  ncclProfilerCallback_t prof; /* the context's profFn (NULL: none); accept passes the listen's */
  int closing;
  int close_done;     /* close returned while the provider still held operations */
  int outstanding;    /* ops inside the provider */
  /* control */
  ofi_ctrl_region* ctrl;
  ofi_mr_handle* ctrl_mh;
  ofi_op ctrl_op[OFI_LISTEN_BUFS]; /* listen: connect buffers; send: [0] tx [1] rx; recv: [0] tx */
  ofi_op probe_rx_op, probe_tx_op;
  /* connection state */
  int connected;        /* send: accept reply arrived */
  uint64_t secret;      /* listen: the secret handed out in the handle */
  int arrived[OFI_LISTEN_BUFS]; /* listen: buffers holding a request, in arrival order */
  int narrived;
  /* requests */
  int window;
  size_t req_stride;
  char* reqs;
  int* free_ids;
  int nfree;
  /* post queue: ops not accepted by the provider yet, in post order */
  ofi_op** q;
  unsigned qhead, qtail, qcap;
  /* liveness */
  uint64_t last_activity_ns;
  int probe_inflight;
  uint64_t probe_refused_since_ns; /* first EAGAIN of the current probe, 0 when none */
} ofi_comm;

/* NetPlugin events (net_common.h; abi/profiler/net_ofi_v1.h, weft's own type): one per data
 * operation — an fi_tsend, or the fi_trecv of one receive slot — from when the provider takes
 * it to its completion, a receive's length then updated to the bytes that arrived. Open events
 * end when the comm fails or closes. With nic->lock held. */
#define OFI_PROF_ID ((int64_t)(WEFT_PROFILER_NET_TYPE_OFI | WEFT_PROFILER_NET_OFI_VER))
void net_ofi_prof_start(ofi_op* op);
/* len: a receive's bytes; ignored for sends. */
void net_ofi_prof_stop(ofi_op* op, size_t len);

/* Comm lifecycle: create with its request pool and control region (registered), linked into
 * nic->comms. With nic->lock held. */
ncclResult_t net_ofi_comm_create(ofi_nic* nic, int kind, ofi_comm** out);
/* Check a comm pointer passed by the caller. */
ofi_comm* net_ofi_comm_check(void* comm, int kind, const char* fn);
/* Record the comm's first failure and log it once. Returns res. */
ncclResult_t net_ofi_comm_fail(ofi_comm* comm, ncclResult_t res, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Close: cancel what is posted, wait briefly for the cancellations, free (or leave to the NIC
 * close when the provider holds on to operations). Takes nic->lock itself; releases the NIC. */
void net_ofi_comm_close(ofi_comm* comm);
/* Free a closed comm whose operations the provider still held, once the endpoint is closed. */
void net_ofi_comm_free(ofi_comm* comm);

/* Operations. With nic->lock held. op fields (buf, len, desc, tag, ignore, addr) set by the
 * caller. Queue appends and tries to post everything queued, in order. */
void net_ofi_op_queue(ofi_comm* comm, ofi_op* op);
ncclResult_t net_ofi_post_queued(ofi_comm* comm);
/* Completion of an op (err 0) or its error entry. */
void net_ofi_op_complete(ofi_op* op, size_t len, const struct fi_cq_err_entry* err);
/* Liveness: probe the peer of a comm with requests pending and nothing heard for a while. */
void net_ofi_liveness(ofi_comm* comm);

/* Requests. With nic->lock held. */
ofi_req* net_ofi_req_get(ofi_comm* comm, int kind, int n);
void net_ofi_req_put(ofi_req* req);

/* ---- connections (net_ofi_connect.c) ---- */
typedef struct {
  uint32_t magic;
  uint16_t version;
  uint16_t addrlen;
  uint32_t listen_id;
  uint32_t prov_hash; /* provider name and address format: connect refuses a foreign handle */
  uint64_t secret;
  uint64_t stage;     /* the connecting process's pending-connect id; 0 before connect starts */
  uint8_t addr[NCCL_NET_HANDLE_MAXSIZE - 32];
} ofi_handle;

struct ofi_pending;
typedef struct {
  weft_net_ctx head;           /* magic, comm id, traffic class, lock (guards pending) */
  struct ofi_pending* pending; /* connects under way */
  uint64_t next_stage;
} ofi_ctx;

ncclResult_t net_ofi_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t net_ofi_connect(void* ctx, int dev, void* handle, void** send_comm,
                             ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t net_ofi_accept(void* listen_comm, void** recv_comm,
                            ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t net_ofi_close_listen(void* listen_comm);
/* Control message arrivals (from the completion dispatch). */
void net_ofi_connect_arrived(ofi_op* op);
void net_ofi_accept_arrived(ofi_op* op);
void net_ofi_pending_free_all(ofi_ctx* ctx);
uint32_t net_ofi_prov_hash(const ofi_nic* nic);

/* ---- data path (net_ofi_data.c) ---- */
ncclResult_t net_ofi_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                           void* phandle, void** request);
ncclResult_t net_ofi_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                           void** mhandles, void** phandles, void** request);
ncclResult_t net_ofi_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                            void** request);
ncclResult_t net_ofi_test(void* request, int* done, int* sizes);
ncclResult_t net_ofi_close_send(void* send_comm);
ncclResult_t net_ofi_close_recv(void* recv_comm);

/* ---- plugin (net_ofi_plugin.c) ---- */
ncclResult_t net_ofi_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                          ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
ncclResult_t net_ofi_finalize(void* ctx);
ncclResult_t net_ofi_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr);
ofi_ctx* net_ofi_ctx_check(void* ctx, const char* fn);
/* The plugin's global lock (devices, NIC open/close, live context count). */
void net_ofi_global_lock(void);
void net_ofi_global_unlock(void);
int net_ofi_live_contexts(void); /* with the global lock held */

/* The v11 table (also what the exports build on). */
extern const ncclNet_v11_t net_ofi_v11;

#define OFI_COMM_MAGIC 0x6f666963u   /* "ofic" */
#define OFI_REQ_MAGIC 0x6f666972u    /* "ofir" */
#define OFI_MR_MAGIC 0x6f66696du     /* "ofim" */
#define OFI_HANDLE_MAGIC 0x7746494fu /* "OIFw" */
#define OFI_CTRL_MAGIC 0x7746436du
#define OFI_PROTO_VERSION 1

#endif
