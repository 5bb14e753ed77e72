/* GdrSim, the test net plugin that behaves like a GPUDirect RDMA NIC on top of weft's socket net
 * (see README.md): what net_gdrsim.c (table, registration, comms, summary), net_gdrsim_req.c
 * (isend, irecv, iflush, test and the landed-but-not-flushed list), net_gdrsim_cuda.c (the
 * CUDA calls) and net_gdrsim_fault.c (failures injected on request) share. Everything here is
 * hidden; the .so exports ncclNetPlugin_v11 only.
 *
 * Threads: a comm, its requests and its landed list are used by one thread at a time (the proxy
 * thread of its communicator; regMr/deregMr/close on the application's thread when the proxy is
 * not using the comm), but several comms run on several threads at once, so the counters are
 * atomics and nothing else is shared. */
#ifndef WEFT_TESTS_GPU_NET_GDRSIM_H
#define WEFT_TESTS_GPU_NET_GDRSIM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "nccl_net.h"

#define GS_HIDDEN __attribute__((visibility("hidden")))

#define GS_MAX_RECVS 8   /* receives one irecv may group (the socket net's maxRecvs) */
#define GS_MAX_LANDED 64 /* landed-unflushed receives one recv comm may hold */

#define GS_COMM_MAGIC 0x67647273436f6d6dull /* "gdrsComm" */
#define GS_MR_MAGIC 0x6764727344724d72ull   /* "gdrsDrMr" */
#define GS_REQ_MAGIC 0x6764727352657121ull  /* "gdrsReq!" */

enum { GS_SEND = 1, GS_RECV = 2 };
enum { GS_REQ_SEND = 1, GS_REQ_RECV, GS_REQ_FLUSH };

struct gs_comm;

/* A registration. CUDA: [base, base+size) is device memory of `device`; the NIC side of it is
 * `shadow` (host, same size) registered with the socket net as `inner`; copies between the two
 * run on `stream` (non-blocking, on `device`). Host: base/size as given, the socket's handle. */
typedef struct gs_mr {
  uint64_t magic;
  int type; /* NCCL_PTR_HOST or NCCL_PTR_CUDA (also for dma-buf registrations) */
  struct gs_comm* comm;
  char* base;
  size_t size;
  int device;
  char* shadow;
  void* inner;
  cudaStream_t stream;
  struct gs_mr* next; /* on its comm's retired list (gs_comm.retired) */
} gs_mr;

/* A receive that completed into a shadow and is not on the GPU yet. flush: 0 while no iflush
 * has claimed it, else the sequence number of the flush request that will copy it. */
typedef struct {
  char* dst;
  const char* src;
  size_t size;
  gs_mr* mr;
  uint64_t flush;
} gs_landed;

typedef struct gs_comm {
  uint64_t magic;
  int kind; /* GS_SEND or GS_RECV */
  void* inner;
  /* Socket-net requests posted on this comm that its test has not ended (done or failed); one
   * abandoned by an injected failure is never ended. Atomic. */
  int inflight;
  /* CUDA registrations deregistered while inflight > 0: a request still posted (weft deregisters
   * before it closes, and after a failure or an abort receives are left posted) may have the
   * socket net's helper threads reading or writing the shadow until the socket comm is closed,
   * so the shadow is freed only then. */
  gs_mr* retired;
  /* recv comms only */
  int nlanded;
  uint64_t flush_seq;
  gs_landed landed[GS_MAX_LANDED];
} gs_comm;

/* One request handed to weft: a send, a receive (with where each CUDA part must go once
 * flushed), or a flush (which copies the entries it claimed when tested). */
typedef struct {
  uint64_t magic;
  int kind;
  int n;
  gs_comm* comm;
  void* inner;    /* the socket net's request (send/recv) */
  uint64_t flush; /* flush: the sequence number it claimed */
  struct {
    char* dst; /* CUDA part: device address; NULL for a host part */
    char* src; /* CUDA part: where it lands in the shadow */
    gs_mr* mr;
  } part[GS_MAX_RECVS];
} gs_req;

/* Process-wide counters (atomic adds), printed by the summary line. cuda_regs counts every
 * registration of CUDA memory, dma-buf ones included (dmabuf_regs counts those alone). */
typedef struct {
  unsigned long long cuda_regs, dmabuf_regs, host_regs, cuda_sends, cuda_recvs, flushes,
      unflushed;
} gs_counters;
extern GS_HIDDEN gs_counters gs_stats;
#define GS_COUNT(field, n) __atomic_add_fetch(&gs_stats.field, (unsigned long long)(n), \
                                              __ATOMIC_RELAXED)

/* Logging through the logger weft gave init (stderr before that). */
GS_HIDDEN void gs_log(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                      const char* fmt, ...) __attribute__((format(printf, 5, 6)));
#define GS_WARN(...) gs_log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)
#define GS_INFO(...) gs_log(NCCL_LOG_INFO, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)

/* The network underneath: weft's socket net (plugins/net-socket). */
#define GS_INNER (&weft_net_socket_v11)

/* NULL (and a WARN naming fn) when p is not a live object of that kind. */
GS_HIDDEN gs_comm* gs_comm_check(void* p, int kind, const char* fn);
GS_HIDDEN gs_mr* gs_mr_check(void* p, const char* fn);

/* net_gdrsim_cuda.c. Every call leaves the calling thread's current CUDA context (or the lack
 * of one) as it found it. gs_cuda_init: 1 when the driver entry points it needs were found
 * (once per process). gs_copy: size bytes between a shadow and its GPU memory on mr's stream,
 * waited for; ncclUnhandledCudaError (WARNed) on failure. gs_stream_create: a non-blocking
 * stream on dev. gs_stream_destroy returns at once. gs_mem_type: what p is (Unregistered also
 * when the driver cannot say) and, for device or managed memory, its device (else -1). */
GS_HIDDEN int gs_cuda_init(void);
GS_HIDDEN ncclResult_t gs_copy(gs_mr* mr, void* dst, const void* src, size_t size,
                               enum cudaMemcpyKind kind, const char* what);
GS_HIDDEN cudaError_t gs_stream_create(cudaStream_t* stream, int dev);
GS_HIDDEN void gs_stream_destroy(cudaStream_t stream, int dev);
GS_HIDDEN enum cudaMemoryType gs_mem_type(const void* p, int* device);
GS_HIDDEN const char* gs_mem_type_name(enum cudaMemoryType t);

/* net_gdrsim_fault.c: WEFT_GDRSIM_FAIL_SEND / WEFT_GDRSIM_FAIL_RECV. gs_fault_init: parses
 * them (once per process); ncclInvalidArgument (WARNed) when one is set but not an integer
 * >= 1. gs_fault_armed: 1 when either asks for a failure. gs_fault_hit(kind): counts one call of
 * that kind; 1 (and a WARN) when it is the one that must fail. gs_fault_injected: how many
 * failures were injected so far. */
enum { GS_FAULT_SEND, GS_FAULT_RECV, GS_FAULT_NUM };
GS_HIDDEN ncclResult_t gs_fault_init(void);
GS_HIDDEN int gs_fault_armed(void);
GS_HIDDEN int gs_fault_hit(int kind);
GS_HIDDEN unsigned long long gs_fault_injected(void);

/* net_gdrsim_req.c: the data path entries of the table, and dropping the landed entries of a
 * recv comm (mr NULL: all of them; else those of mr), each counted as unflushed. */
GS_HIDDEN ncclResult_t gs_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                                void* phandle, void** request);
GS_HIDDEN ncclResult_t gs_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                                void** mhandles, void** phandles, void** request);
GS_HIDDEN ncclResult_t gs_iflush(void* recv_comm, int n, void** data, int* sizes,
                                 void** mhandles, void** request);
GS_HIDDEN ncclResult_t gs_test(void* request, int* done, int* sizes);
GS_HIDDEN int gs_landed_drop(gs_comm* comm, const gs_mr* mr);

#endif
