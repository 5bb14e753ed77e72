/* The example net plugin's internals: one TCP connection per send/recv comm, every call
 * non-blocking, progress made by whichever call comes next (isend, irecv, test). Written against
 * ncclNet_v11_t, the table it exports itself; weft::net_export (libweft-net-export.a) adapts that
 * table into ncclNetPlugin_v10 … _v6, so stock NCCL 2.18+ and weft load the one library.
 *
 * Replace the socket calls in example_connect.c and example_data.c with your NIC's API; keep
 * the rules (docs/plugins.md in weft): nothing waits for the peer, requests complete in post
 * order, a dead peer is an error, not a hang. */
#ifndef EXAMPLE_NET_H
#define EXAMPLE_NET_H

#include <limits.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include <nccl_net.h>

#define EX_NAME "Example"
#define EX_MAX_DEVS 4
/* Requests one comm keeps: the window the core may fill (maxRecvs is 1, so sends need no more). */
#define EX_MAX_REQS NCCL_NET_MAX_REQUESTS
#define EX_HANDLE_MAGIC 0x6578616d706c6521ull /* "example!" */

/* Logging through the logger init was given (never printf: the host decides where logs go). */
void ex_log(ncclDebugLogLevel level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define EX_WARN(...) ex_log(NCCL_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define EX_INFO(...) ex_log(NCCL_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)

/* ---- example_device.c: devices, properties, init/finalize, the logger ---- */
struct ex_device {
  char name[64];
  struct sockaddr_in addr; /* the interface's address; listen binds it */
  char pci_path[PATH_MAX]; /* realpath of /sys/class/net/<name>/device; "" when virtual
                            * (kept here, not on the heap: the plugin may be unloaded) */
};
const struct ex_device* ex_device_get(int dev); /* NULL (and a WARN) when dev is out of range */
ncclResult_t ex_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                     ncclDebugLogger_t logger, ncclProfilerCallback_t profiler);
ncclResult_t ex_finalize(void* ctx);
ncclResult_t ex_devices(int* ndev);
ncclResult_t ex_get_properties(int dev, ncclNetProperties_v11_t* props);
ncclResult_t ex_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr);
void ex_set_logger(ncclDebugLogger_t logger);
ncclDebugLogger_t ex_logger(void);

/* ---- example_connect.c: listen, connect, accept, close ---- */
/* What listen writes into the caller's 128-byte handle. The peer receives a byte copy, so it
 * holds no pointer the peer would follow; `stage` is used only in the connecting side's own
 * copy, between calls of one connect. */
struct ex_handle {
  uint64_t magic;
  uint64_t secret; /* the first bytes a connection sends; accept drops sockets without it */
  struct sockaddr_in addr;
  void* stage;
};
_Static_assert(sizeof(struct ex_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");

ncclResult_t ex_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t ex_connect(void* ctx, int dev, void* handle, void** send_comm,
                        ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t ex_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                           ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class);
ncclResult_t ex_accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** dev_comm);
ncclResult_t ex_close_send(void* send_comm);
ncclResult_t ex_close_recv(void* recv_comm);
ncclResult_t ex_close_listen(void* listen_comm);

/* ---- example_data.c: registration, requests, progress ---- */
/* On the wire, before each message's payload. */
struct ex_wire_header {
  uint64_t size;
  int32_t tag;
  uint32_t magic; /* EX_WIRE_MAGIC: catches a stream that lost its framing */
};
#define EX_WIRE_MAGIC 0x65786d31u

struct ex_comm;
struct ex_request {
  struct ex_comm* comm;
  int used, done;
  char* data;
  size_t size;  /* send: payload bytes; receive: buffer size */
  size_t moved; /* header and payload bytes sent or received so far */
  struct ex_wire_header header;
};

/* A send or receive comm: a socket and its requests, oldest first in `queue`. */
struct ex_comm {
  int fd;
  int is_recv;
  ncclResult_t error; /* sticky: once the connection failed, every later call says so */
  struct ex_request pool[EX_MAX_REQS];
  struct ex_request* queue[EX_MAX_REQS]; /* posted, not yet complete, in post order */
  int head, count;
};

struct ex_comm* ex_comm_new(int fd, int is_recv);
void ex_comm_free(struct ex_comm* comm);

ncclResult_t ex_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t ex_reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
ncclResult_t ex_dereg_mr(void* comm, void* mhandle);
ncclResult_t ex_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                      void* phandle, void** request);
ncclResult_t ex_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                      void** mhandles, void** phandles, void** request);
ncclResult_t ex_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                       void** request);
ncclResult_t ex_test(void* request, int* done, int* sizes);

#endif
