/* Shared state of the socket plugin's files: devices, the per-communicator context, connections
 * (one control socket plus nsocks data sockets driven by nthreads helper threads), requests and
 * the wire format. Everything here is hidden; only plugin_exports.c (with plugins/common)
 * exports anything.
 *
 * Wire format, per connection (sender → receiver only; nothing flows back):
 *  - each socket opens with a 32-byte hello {magic, listen secret, connection id, version,
 *    socket index (0 = control), data socket count}, checked by accept;
 *  - each isend puts a 16-byte header {size, tag, flags} on the control socket, followed there by
 *    the payload when flags has NS_HDR_INLINE (small messages, or no data sockets); otherwise the
 *    payload is cut into at most nsocks chunks (net_socket_chunk_size) that go round-robin over
 *    the data sockets, from a socket index both sides advance alike. Integers are big-endian.
 * Every socket carries its bytes in message order, so matching is FIFO per connection.
 * Naming: functions shared between files are net_socket_*; types and macros of this header are
 * ns_* / NS_* (they never reach a symbol table). */
#ifndef WEFT_NET_SOCKET_INTERNAL_H
#define WEFT_NET_SOCKET_INTERNAL_H

#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl_net.h"
#include "profiler/net_socket_v1.h"
#include "profiler/profiler_types.h"
#include "net_common.h"
#include "util/socket.h"

#define NS_MAX_DEVS 16
#define NS_MAX_THREADS 16
#define NS_MAX_SOCKS 64
#define NS_MAX_RECVS WEFT_NET_MAX_RECVS
/* Requests in flight per comm: a receive comm holds NCCL_NET_MAX_REQUESTS (each up to
 * NS_MAX_RECVS grouped receives); a send comm NCCL_NET_MAX_REQUESTS × NS_MAX_RECVS, as the net
 * ABI asks, so every slot of a full receive window can have its send posted. */
#define NS_RECV_WINDOW NCCL_NET_MAX_REQUESTS
#define NS_SEND_WINDOW (NCCL_NET_MAX_REQUESTS * NS_MAX_RECVS)
/* Chunk tasks one data socket may queue: at most one per message in flight. */
#define NS_TASK_RING NS_SEND_WINDOW

/* Payloads up to this size travel on the control socket; larger ones are striped. */
#define NS_INLINE_MAX (64 * 1024)
/* Smallest chunk a striped payload is cut into (part of the wire protocol: both sides use it). */
#define NS_MIN_CHUNK (64 * 1024)
#define NS_SCRATCH_BYTES (64 * 1024)

#define NS_PROTO_VERSION 1u
#define NS_HANDLE_MAGIC 0x77656674536f636bull /* "weftSock" */
#define NS_HELLO_MAGIC 0x77656674486c6f21ull  /* "weftHlo!" */
#define NS_HDR_INLINE 0x1u

/* NetPlugin events (net_common.h): one per socket task — a chunk on a data socket, or an inline
 * payload on the control socket — from when its bytes begin moving to when they are all moved
 * or the socket fails (stopped at close when still open). Descriptor:
 * ncclProfilerNetSockDescr_v1_t {ncclProfileSocket, fd, op (NCCL's codes: 0 send, 1 receive),
 * length: the task's bytes}. */
#define NS_PROF_ID ((int64_t)(NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER))
enum { NS_PROF_OP_SEND = 0, NS_PROF_OP_RECV = 1 };

/* Defaults when NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD are unset (see README.md). */
#define NS_DEFAULT_NTHREADS 2
#define NS_DEFAULT_NSOCKS_PERTHREAD 1

/* ---- logging: through the logger init received, weft_log until then ---- */
void net_socket_set_logger(ncclDebugLogger_t logger);
ncclDebugLogger_t net_socket_logger(void);
#define NS_WARN(...) net_socket_logger()(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)
#define NS_INFO(flags, ...) \
  net_socket_logger()(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, __VA_ARGS__)

/* ---- devices (net_socket_dev.c) ---- */
typedef struct {
  char name[IF_NAMESIZE];
  weft_sockaddr addr;
  int speed; /* Mb/s */
  char pci_path[PATH_MAX]; /* realpath of /sys/class/net/<name>/device (as NCCL's socket
                           * net); "" for a virtual interface (reported as NULL). In the table,
                           * not the heap: the plugin may be unloaded. */
} ns_dev;

/* Finds the interfaces once per process. ncclSystemError when there are none. */
ncclResult_t net_socket_devices_init(void);
int net_socket_ndevs(void);
const ns_dev* net_socket_dev_get(int dev); /* NULL when dev is out of range (logs a WARN) */
ncclResult_t net_socket_devices(int* ndev);
ncclResult_t net_socket_get_properties(int dev, ncclNetProperties_v11_t* props);

/* ---- per-communicator context (net_socket_plugin.c) ---- */
struct ns_pending_connect;
typedef struct {
  weft_net_ctx head;                  /* magic, comm id, traffic class, lock (guards pending) */
  struct ns_pending_connect* pending; /* connects not finished yet */
} ns_ctx;

ncclResult_t net_socket_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                             ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
ncclResult_t net_socket_finalize(void* ctx);
ns_ctx* net_socket_ctx_check(void* ctx, const char* fn); /* NULL (and a WARN) when not a live ctx */

/* ---- connections ---- */
enum { NS_SEND = 1, NS_RECV = 2 };

/* The opaque handle listen writes (≤ NCCL_NET_HANDLE_MAXSIZE). stage is local to the connecting
 * process: connect keeps its unfinished state under that id (0: not started). */
typedef struct {
  uint64_t magic;
  uint64_t secret;
  weft_sockaddr addr;
  uint16_t nsocks;
  uint16_t nthreads;
  uint32_t version;
  uint64_t stage;
} ns_handle;

typedef struct {
  uint64_t magic;
  uint64_t secret;
  uint64_t conn_id;
  uint32_t version;
  uint16_t index;
  uint16_t nsocks;
} ns_hello;
#define NS_HELLO_BYTES 32

struct ns_comm;
struct ns_req;

/* One chunk of one message on one data socket. The first deliver bytes go to ptr, the rest of
 * total is read into scratch and dropped (a truncated receive). phandle: the slot's profiler
 * parent until the task's NetPlugin event starts (then NULL); ev: that event while open. */
typedef struct {
  char* ptr;
  size_t deliver;
  size_t total;
  size_t done;
  struct ns_req* req;
  void* phandle;
  void* ev;
} ns_task;

/* A data socket and its task queue: single producer (the caller's thread), single consumer (its
 * helper thread, or the caller's thread again when the comm has no helpers). */
typedef struct {
  int fd;
  ns_task ring[NS_TASK_RING];
  unsigned head; /* consumer */
  unsigned tail; /* producer */
} ns_sock;

typedef struct {
  struct ns_comm* comm;
  int idx;
  pthread_t tid;
  int started;
  int efd;     /* eventfd: wakes the thread for new tasks, errors and stop */
  int waiting; /* set while the thread sleeps; producers then write efd */
  int parked;  /* set once the thread has seen comm->error and stopped touching buffers */
  char* scratch;
} ns_thread;

typedef struct {
  char* data;
  size_t size; /* send: bytes; receive: posted capacity */
  size_t got;  /* receive: bytes the sender sent */
  int tag;
  int matched;
  void* phandle; /* the core's profiler parent of this slot (NULL: no NetPlugin events) */
} ns_slot;

enum { NS_REQ_FREE = 0, NS_REQ_SEND, NS_REQ_RECV, NS_REQ_FLUSH };

typedef struct ns_req {
  struct ns_comm* comm;
  int kind;
  int n;
  int any_tag;        /* receive posted without tags: slots match in order */
  int matched;        /* receive: slots whose header has arrived */
  int ctrl_done;      /* header(s) and inline payloads moved */
  int pending;        /* chunk tasks still queued (atomic: helpers decrement) */
  ncclResult_t error; /* request-level failure (truncation), reported when done */
  ns_slot slot[NS_MAX_RECVS];
} ns_req;

/* Control-socket progress of the request at the head of the FIFO. */
enum { NS_CTRL_HDR = 0, NS_CTRL_DATA };

typedef struct ns_comm {
  uint64_t magic;
  int kind;
  int dev;
  int ctrl_fd;
  int nsocks;
  int nthreads;
  char peer[WEFT_SOCKADDR_STRLEN];
  ns_sock* socks;
  ns_thread threads[NS_MAX_THREADS];
  int next_sock;
  ncclProfilerCallback_t prof; /* the context's profFn (NULL: none) */
  void* ctrl_ev;               /* NetPlugin event of the inline payload on the control socket */
  int error; /* ncclResult_t, atomic: first failure of the connection */
  int stop;  /* atomic: helpers exit */
  /* requests */
  int window;
  ns_req* reqs;
  int* free_ids;
  int nfree;
  ns_req** fifo; /* posted order, control part not finished */
  unsigned fifo_head, fifo_tail;
  /* control socket state for fifo[head] */
  int phase;
  int started; /* send: header of fifo[head] encoded */
  unsigned char hdr[16];
  size_t hdr_done;
  char* cur_ptr;
  size_t cur_deliver, cur_total, cur_done;
  char* scratch;
} ns_comm;

/* net_socket_comm.c: build a comm from connected sockets (takes the fds, also on failure) and
 * tear it down (stops and joins helpers, stops the NetPlugin events still open, closes every
 * fd). prof: the context's profFn. */
ncclResult_t net_socket_comm_create(int kind, int dev, int ctrl_fd, const int* data_fds, int nsocks,
                                    int nthreads, const char* peer, ncclProfilerCallback_t prof,
                                    ns_comm** out);
void net_socket_comm_destroy(ns_comm* comm);
ns_comm* net_socket_comm_check(void* comm, int kind, const char* fn);
/* Record the connection's first failure (later ones are ignored) and wake the helpers.
 * Returns 1 when this call recorded it (the caller then WARNs), 0 when one was recorded. */
int net_socket_comm_fail(ns_comm* comm, ncclResult_t res);
/* After a failure: wait (bounded) until every helper has stopped touching user buffers. */
void net_socket_comm_quiesce(ns_comm* comm);

/* net_socket_thread.c */
ncclResult_t net_socket_threads_start(ns_comm* comm);
void net_socket_threads_stop(ns_comm* comm);
/* Queue a chunk on data socket s (the ring never overflows: see NS_TASK_RING). */
void net_socket_task_push(ns_comm* comm, int s, const ns_task* task);
/* Chunk size of a striped payload of total bytes: ≥ NS_MIN_CHUNK, at most nsocks chunks. */
size_t net_socket_chunk_size(size_t total, int nsocks);
/* NetPlugin events of the comm's socket tasks (fd, op from the comm's kind, length bytes):
 * start consumes *phandle; stop is a no-op on a NULL *ev. */
void net_socket_prof_start(ns_comm* comm, int fd, size_t length, void** phandle, void** ev);
void net_socket_prof_stop(ns_comm* comm, void** ev);

/* net_socket_connect.c */
ncclResult_t net_socket_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t net_socket_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                                   ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class);
ncclResult_t net_socket_connect(void* ctx, int dev, void* handle, void** send_comm,
                                ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t net_socket_accept(void* listen_comm, void** recv_comm,
                               ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t net_socket_close_listen(void* listen_comm);
/* Frees the unfinished connects of a ctx (finalize). */
void net_socket_pending_free_all(ns_ctx* ctx);

/* net_socket_progress.c */
ncclResult_t net_socket_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                              void* phandle, void** request);
ncclResult_t net_socket_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                              void** mhandles, void** phandles, void** request);
ncclResult_t net_socket_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                               void** request);
ncclResult_t net_socket_test(void* request, int* done, int* sizes);
ncclResult_t net_socket_close_send(void* send_comm);
ncclResult_t net_socket_close_recv(void* recv_comm);

/* net_socket_mr.c */
ncclResult_t net_socket_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t net_socket_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                      uint64_t offset, int fd, void** mhandle);
ncclResult_t net_socket_dereg_mr(void* comm, void* mhandle);

/* net_socket_plugin.c */
ncclResult_t net_socket_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr);

#endif
