/* GdrSim: a test net plugin (ncclNetPlugin_v11, name "GdrSim") that behaves like a GPUDirect RDMA
 * NIC on top of weft's socket net, so that weft's GDR path can be tested on a machine without an
 * RDMA NIC. It advertises NCCL_PTR_CUDA (and NCCL_PTR_DMABUF with WEFT_GDRSIM_DMABUF=1) and
 * accepts device pointers; a CUDA registration gets a host "shadow" of the same size that the
 * socket net really sends from and receives into.
 *  - send: the bytes are copied GPU -> shadow when isend is called (the NIC reads GPU memory);
 *  - receive: a completed receive stays in the shadow ("landed", like NIC writes that PCIe has
 *    not made visible yet) until weft calls iflush on that comm and tests the flush request;
 *    only then are the bytes copied to the GPU. A missing flush therefore leaves stale bytes in
 *    GPU memory (wrong results), and the plugin fails loudly when weft re-posts a receive over a
 *    landed buffer, lets more than GS_MAX_LANDED pile up, or closes with some left.
 * At the last finalize it prints one summary line to stderr and, with WEFT_GDRSIM_EXPECT, a
 * "gdrsim: FAILED: …" line that ctest matches (tests/gpu/gpu.cmake, README.md). With
 * WEFT_GDRSIM_FAIL_SEND/_RECV it fails one isend or one receive on purpose
 * (net_gdrsim_fault.c); receives left unflushed are then expected, so they are not WARNed and
 * WEFT_GDRSIM_EXPECT is not judged.
 *
 * CUDA rules (net_gdrsim_cuda.c): the plugin's CUDA calls run on the caller's thread (the
 * application's for regMr, the proxy's for the data path), so each leaves that thread's current
 * context as it found it; copies go on the registration's own non-blocking stream and wait for
 * that stream only — never the legacy default stream or a device-wide sync, which would wait for
 * weft's kernels that spin until the proxy moves data.
 *
 * This file: the table, init/finalize and the summary, properties, comms and registration. The
 * data path is net_gdrsim_req.c, the CUDA calls net_gdrsim_cuda.c, the injected failures
 * net_gdrsim_fault.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_gdrsim.h"
#include "net_socket.h"

#define GS_CTX_MAGIC 0x6764727343747821ull /* "gdrsCtx!" */

typedef struct {
  uint64_t magic;
  void* inner; /* the socket net's context */
} gs_ctx;

gs_counters gs_stats;
static ncclDebugLogger_t gs_logger;
static int gs_live_ctx; /* contexts init made that finalize has not ended (atomic) */

/* ---- logging, environment ---- */

void gs_log(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
            const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ncclDebugLogger_t l = __atomic_load_n(&gs_logger, __ATOMIC_ACQUIRE);
  if (l)
    l(level, flags, file, line, "%s", msg);
  else if (level == NCCL_LOG_WARN)
    fprintf(stderr, "gdrsim: %s\n", msg);
}

static int gs_dmabuf_on(void) {
  const char* v = getenv("WEFT_GDRSIM_DMABUF");
  return v && strcmp(v, "1") == 0;
}

/* ---- the summary line ---- */

static void append(char* buf, size_t len, const char* why) {
  size_t used = strlen(buf);
  snprintf(buf + used, len - used, "%s%s", used ? "; " : "", why);
}

/* One line of counters, then the verdict WEFT_GDRSIM_EXPECT asks for. unflushed > 0 fails under
 * every expectation: it is always weft's bug, except in a run with an injected failure, which
 * leaves receives unflushed by design: there no verdict is given. */
static void gs_summary(void) {
  gs_counters s;
#define LOAD(f) s.f = __atomic_load_n(&gs_stats.f, __ATOMIC_RELAXED)
  LOAD(cuda_regs);
  LOAD(dmabuf_regs);
  LOAD(host_regs);
  LOAD(cuda_sends);
  LOAD(cuda_recvs);
  LOAD(flushes);
  LOAD(unflushed);
#undef LOAD
  fprintf(stderr,
          "gdrsim: pid %d cuda_regs=%llu dmabuf_regs=%llu host_regs=%llu cuda_sends=%llu "
          "cuda_recvs=%llu flushes=%llu unflushed=%llu injected=%llu\n",
          (int)getpid(), s.cuda_regs, s.dmabuf_regs, s.host_regs, s.cuda_sends, s.cuda_recvs,
          s.flushes, s.unflushed, gs_fault_injected());
  const char* expect = getenv("WEFT_GDRSIM_EXPECT");
  if (expect == NULL || expect[0] == '\0') return;
  if (gs_fault_armed()) {
    fprintf(stderr, "gdrsim: WEFT_GDRSIM_EXPECT=%s not judged: WEFT_GDRSIM_FAIL_SEND/_RECV "
            "injects a failure\n", expect);
    fflush(stderr);
    return;
  }
  char why[512] = "";
  if (strcmp(expect, "cuda") == 0) {
    if (s.cuda_regs == 0) append(why, sizeof why, "no CUDA memory was registered");
    if (s.cuda_sends == 0) append(why, sizeof why, "no send from CUDA memory");
    if (s.cuda_recvs == 0) append(why, sizeof why, "no receive into CUDA memory");
  } else if (strcmp(expect, "host") == 0) {
    if (s.cuda_regs > 0) append(why, sizeof why, "CUDA memory was registered");
    if (s.host_regs == 0) append(why, sizeof why, "no host memory was registered either");
  } else if (strcmp(expect, "dmabuf") == 0) {
    if (s.dmabuf_regs == 0) append(why, sizeof why, "no dma-buf registration");
  } else {
    append(why, sizeof why, "unknown WEFT_GDRSIM_EXPECT value (cuda, host or dmabuf)");
  }
  if (s.unflushed > 0) append(why, sizeof why, "receives into CUDA memory were never flushed");
  if (why[0]) fprintf(stderr, "gdrsim: FAILED: %s (WEFT_GDRSIM_EXPECT=%s)\n", why, expect);
  fflush(stderr);
}

/* Fallback for a process that never finalized a context (finalize prints otherwise). Forked
 * ranks that end with _exit run no destructor: they must finalize. */
__attribute__((destructor)) static void gs_unload(void) {
  if (__atomic_load_n(&gs_live_ctx, __ATOMIC_ACQUIRE) > 0) gs_summary();
}

/* ---- objects ---- */

static gs_ctx* ctx_check(void* ctx, const char* fn) {
  gs_ctx* c = ctx;
  if (c == NULL || c->magic != GS_CTX_MAGIC) {
    GS_WARN("NET/GdrSim: %s: invalid context %p", fn, ctx);
    return NULL;
  }
  return c;
}

gs_comm* gs_comm_check(void* p, int kind, const char* fn) {
  gs_comm* c = p;
  if (c == NULL || c->magic != GS_COMM_MAGIC || (kind && c->kind != kind)) {
    GS_WARN("NET/GdrSim: %s: %p is not a %s comm of this plugin", fn, p,
            kind == GS_SEND ? "send" : kind == GS_RECV ? "receive" : "send or receive");
    return NULL;
  }
  return c;
}

gs_mr* gs_mr_check(void* p, const char* fn) {
  gs_mr* mr = p;
  if (mr == NULL || mr->magic != GS_MR_MAGIC) {
    GS_WARN("NET/GdrSim: %s: %p is not a registration of this plugin", fn, p);
    return NULL;
  }
  return mr;
}

/* Takes inner (a connected socket comm): on failure it is closed. */
static ncclResult_t comm_wrap(int kind, void* inner, void** out) {
  gs_comm* c = calloc(1, sizeof *c);
  if (c == NULL) {
    GS_WARN("NET/GdrSim: out of memory wrapping a comm");
    if (kind == GS_SEND)
      (void)GS_INNER->closeSend(inner);
    else
      (void)GS_INNER->closeRecv(inner);
    return ncclSystemError;
  }
  c->magic = GS_COMM_MAGIC;
  c->kind = kind;
  c->inner = inner;
  *out = c;
  return ncclSuccess;
}

/* ---- the table ---- */

static ncclResult_t gs_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                            ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  if (logger) __atomic_store_n(&gs_logger, logger, __ATOMIC_RELEASE);
  if (ctx == NULL) {
    GS_WARN("NET/GdrSim: init: ctx is NULL");
    return ncclInternalError;
  }
  ncclResult_t res = gs_fault_init();
  if (res != ncclSuccess) return res;
  if (!gs_cuda_init()) {
    GS_WARN("NET/GdrSim: the CUDA driver has no cuCtxGetCurrent/cuCtxSetCurrent/"
            "cuPointerGetAttributes (no driver?): GdrSim needs them");
    return ncclSystemError;
  }
  gs_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) {
    GS_WARN("NET/GdrSim: out of memory allocating a context");
    return ncclSystemError;
  }
  res = GS_INNER->init(&c->inner, comm_id, config, logger, prof);
  if (res != ncclSuccess) {
    free(c);
    return res;
  }
  c->magic = GS_CTX_MAGIC;
  __atomic_add_fetch(&gs_live_ctx, 1, __ATOMIC_ACQ_REL);
  GS_INFO("NET/GdrSim: emulating a GPUDirect RDMA NIC over the socket net (CUDA%s%s)",
          gs_dmabuf_on() ? ", dma-buf" : "", gs_fault_armed() ? ", failure injection armed" : "");
  *ctx = c;
  return ncclSuccess;
}

static ncclResult_t gs_finalize(void* ctx) {
  gs_ctx* c = ctx_check(ctx, "finalize");
  if (c == NULL) return ncclInternalError;
  ncclResult_t res = GS_INNER->finalize(c->inner);
  c->magic = 0;
  free(c);
  if (__atomic_sub_fetch(&gs_live_ctx, 1, __ATOMIC_ACQ_REL) == 0) gs_summary();
  return res;
}

static ncclResult_t gs_devices(int* ndev) { return GS_INNER->devices(ndev); }

static char gs_name[] = "GdrSim";

static ncclResult_t gs_get_properties(int dev, ncclNetProperties_v11_t* props) {
  ncclResult_t res = GS_INNER->getProperties(dev, props);
  if (res != ncclSuccess) return res;
  props->name = gs_name;
  props->ptrSupport |= NCCL_PTR_CUDA | (gs_dmabuf_on() ? NCCL_PTR_DMABUF : 0);
  props->forceFlush = 0; /* weft must flush on its own after each receive into CUDA memory */
  if (props->maxRecvs > GS_MAX_RECVS) props->maxRecvs = GS_MAX_RECVS;
  return ncclSuccess;
}

/* Listen comms are the socket net's own: accept wraps what it returns. */
static ncclResult_t gs_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  gs_ctx* c = ctx_check(ctx, "listen");
  return c ? GS_INNER->listen(c->inner, dev, handle, listen_comm) : ncclInternalError;
}

static ncclResult_t gs_close_listen(void* listen_comm) {
  return GS_INNER->closeListen(listen_comm);
}

static ncclResult_t gs_connect(void* ctx, int dev, void* handle, void** send_comm,
                               ncclNetDeviceHandle_v11_t** dev_comm) {
  gs_ctx* c = ctx_check(ctx, "connect");
  if (c == NULL || send_comm == NULL) return ncclInternalError;
  void* inner = NULL;
  ncclResult_t res = GS_INNER->connect(c->inner, dev, handle, &inner, dev_comm);
  if (res != ncclSuccess) return res;
  if (inner == NULL) { /* not connected yet: call again */
    *send_comm = NULL;
    return ncclSuccess;
  }
  return comm_wrap(GS_SEND, inner, send_comm);
}

static ncclResult_t gs_accept(void* listen_comm, void** recv_comm,
                              ncclNetDeviceHandle_v11_t** dev_comm) {
  if (recv_comm == NULL) return ncclInternalError;
  void* inner = NULL;
  ncclResult_t res = GS_INNER->accept(listen_comm, &inner, dev_comm);
  if (res != ncclSuccess) return res;
  if (inner == NULL) {
    *recv_comm = NULL;
    return ncclSuccess;
  }
  return comm_wrap(GS_RECV, inner, recv_comm);
}

/* A CUDA registration (regMr or regMrDmaBuf, named by fn): [data, data+size) must be device
 * memory of one GPU. The shadow is plain malloc'd memory: freeing pinned memory could wait for
 * the whole device, and weft deregisters while other communicators' kernels may be running. */
static ncclResult_t reg_cuda(gs_comm* c, void* data, size_t size, const char* fn,
                             void** mhandle) {
  int d0 = -1, d1 = -1;
  enum cudaMemoryType t0 = cudaMemoryTypeUnregistered, t1 = cudaMemoryTypeUnregistered;
  if (data != NULL && size > 0) {
    t0 = gs_mem_type(data, &d0);
    t1 = gs_mem_type((char*)data + size - 1, &d1);
  }
  if (t0 != cudaMemoryTypeDevice || t1 != cudaMemoryTypeDevice || d0 != d1) {
    GS_WARN("NET/GdrSim: %s of %p (%zu bytes) as NCCL_PTR_CUDA: not device memory of one GPU "
            "(first byte: %s memory, device %d; last byte: %s memory, device %d)",
            fn, data, size, gs_mem_type_name(t0), d0, gs_mem_type_name(t1), d1);
    return ncclInvalidArgument;
  }
  ncclResult_t res = ncclSystemError;
  cudaError_t e;
  gs_mr* mr = calloc(1, sizeof *mr);
  char* shadow = malloc(size);
  if (mr == NULL || shadow == NULL) {
    GS_WARN("NET/GdrSim: %s: out of memory for a %zu-byte shadow", fn, size);
    goto fail_free;
  }
  e = gs_stream_create(&mr->stream, d0);
  if (e != cudaSuccess) {
    GS_WARN("NET/GdrSim: %s: cannot create a stream on GPU %d: %s", fn, d0,
            cudaGetErrorString(e));
    res = ncclUnhandledCudaError;
    goto fail_free;
  }
  res = GS_INNER->regMr(c->inner, shadow, size, NCCL_PTR_HOST, &mr->inner);
  if (res != ncclSuccess) goto fail_stream;
  mr->magic = GS_MR_MAGIC;
  mr->type = NCCL_PTR_CUDA;
  mr->comm = c;
  mr->base = data;
  mr->size = size;
  mr->device = d0;
  mr->shadow = shadow;
  GS_COUNT(cuda_regs, 1);
  GS_INFO("NET/GdrSim: %s %p (%zu bytes) on GPU %d, shadow %p", fn, data, size, d0,
          (void*)shadow);
  *mhandle = mr;
  return ncclSuccess;

fail_stream:
  gs_stream_destroy(mr->stream, d0);
fail_free:
  free(shadow);
  free(mr);
  return res;
}

static ncclResult_t gs_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  gs_comm* c = gs_comm_check(comm, 0, "regMr");
  if (c == NULL || mhandle == NULL) return ncclInternalError;
  if (type == NCCL_PTR_CUDA) return reg_cuda(c, data, size, "regMr", mhandle);
  if (type != NCCL_PTR_HOST) {
    GS_WARN("NET/GdrSim: regMr of %p: unknown memory type %d", data, type);
    return ncclInvalidArgument;
  }
  int d0 = -1, d1 = -1;
  enum cudaMemoryType t0 = data ? gs_mem_type(data, &d0) : cudaMemoryTypeUnregistered;
  enum cudaMemoryType t1 =
      data && size > 0 ? gs_mem_type((char*)data + size - 1, &d1) : cudaMemoryTypeUnregistered;
  if (t0 == cudaMemoryTypeDevice || t1 == cudaMemoryTypeDevice) {
    GS_WARN("NET/GdrSim: regMr of %p (%zu bytes) as NCCL_PTR_HOST: it is device memory of GPU "
            "%d", data, size, t0 == cudaMemoryTypeDevice ? d0 : d1);
    return ncclInvalidArgument;
  }
  gs_mr* mr = calloc(1, sizeof *mr);
  if (mr == NULL) {
    GS_WARN("NET/GdrSim: regMr: out of memory");
    return ncclSystemError;
  }
  ncclResult_t res = GS_INNER->regMr(c->inner, data, size, NCCL_PTR_HOST, &mr->inner);
  if (res != ncclSuccess) {
    free(mr);
    return res;
  }
  mr->magic = GS_MR_MAGIC;
  mr->type = NCCL_PTR_HOST;
  mr->comm = c;
  mr->base = data;
  mr->size = size;
  mr->device = -1;
  GS_COUNT(host_regs, 1);
  *mhandle = mr;
  return ncclSuccess;
}

/* weft owns fd (it closes it after this call); the plugin only checks what it is. */
static ncclResult_t gs_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                     uint64_t offset, int fd, void** mhandle) {
  gs_comm* c = gs_comm_check(comm, 0, "regMrDmaBuf");
  if (c == NULL || mhandle == NULL) return ncclInternalError;
  if (!gs_dmabuf_on()) {
    GS_WARN("NET/GdrSim: regMrDmaBuf of %p (fd %d): dma-buf is not advertised (ptrSupport "
            "without NCCL_PTR_DMABUF; WEFT_GDRSIM_DMABUF=1 turns it on)", data, fd);
    return ncclInvalidUsage;
  }
  if (type != NCCL_PTR_CUDA) {
    GS_WARN("NET/GdrSim: regMrDmaBuf of %p: memory type %d, expected NCCL_PTR_CUDA", data, type);
    return ncclInvalidArgument;
  }
  char path[64], target[256] = "";
  ssize_t k = -1;
  if (fd >= 0) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    k = readlink(path, target, sizeof target - 1);
    if (k >= 0) target[k] = '\0';
  }
  if (k < 0 || strstr(target, "dmabuf") == NULL) {
    GS_WARN("NET/GdrSim: regMrDmaBuf of %p (%zu bytes, offset %llu): fd %d is not a dma-buf "
            "(%s)", data, size, (unsigned long long)offset, fd,
            fd < 0 ? "negative" : k < 0 ? strerror(errno) : target);
    return ncclInvalidArgument;
  }
  ncclResult_t res = reg_cuda(c, data, size, "regMrDmaBuf", mhandle);
  if (res == ncclSuccess) GS_COUNT(dmabuf_regs, 1);
  return res;
}

/* lost receives into CUDA memory completed and were never flushed, found by fn (at base, or
 * anywhere on the comm): weft's bug, WARNed; but expected once a failure was injected (weft
 * stops driving a failed communicator), so only INFO then. Counted as unflushed either way. */
static void unflushed_report(int lost, const char* fn, const void* base) {
  char where[48] = "";
  if (base != NULL) snprintf(where, sizeof where, " of %p", base);
  if (gs_fault_armed())
    GS_INFO("NET/GdrSim: %s%s: %d receive(s) into CUDA memory were never flushed (a failure is "
            "injected in this run)", fn, where, lost);
  else
    GS_WARN("NET/GdrSim: %s%s: %d receive(s) into CUDA memory completed and were never flushed",
            fn, where, lost);
}

static ncclResult_t gs_dereg_mr(void* comm, void* mhandle) {
  gs_comm* c = gs_comm_check(comm, 0, "deregMr");
  if (c == NULL) return ncclInternalError;
  if (mhandle == NULL) return ncclSuccess;
  gs_mr* mr = gs_mr_check(mhandle, "deregMr");
  if (mr == NULL) return ncclInternalError;
  if (mr->comm != c) {
    GS_WARN("NET/GdrSim: deregMr of %p on comm %p: it was registered on comm %p", mhandle,
            comm, (void*)mr->comm);
    return ncclInternalError;
  }
  /* The shadow goes away: what landed in it can never reach the GPU. */
  int lost = c->kind == GS_RECV ? gs_landed_drop(c, mr) : 0;
  if (lost) unflushed_report(lost, "deregMr", mr->base);
  ncclResult_t res = GS_INNER->deregMr(c->inner, mr->inner);
  mr->magic = 0;
  if (mr->type == NCCL_PTR_CUDA) {
    gs_stream_destroy(mr->stream, mr->device);
    if (__atomic_load_n(&c->inflight, __ATOMIC_RELAXED) > 0) {
      /* Requests may still move bytes through the shadow: it stays until the comm closes. */
      mr->next = c->retired;
      c->retired = mr;
      return res;
    }
    free(mr->shadow);
  }
  free(mr);
  return res;
}

/* Frees the shadows of c's deregistered CUDA registrations: the socket comm under c is closed,
 * so nothing reads or writes them any more. */
static void retired_free(gs_comm* c) {
  while (c->retired != NULL) {
    gs_mr* mr = c->retired;
    c->retired = mr->next;
    free(mr->shadow);
    free(mr);
  }
}

static ncclResult_t gs_close_send(void* send_comm) {
  gs_comm* c = gs_comm_check(send_comm, GS_SEND, "closeSend");
  if (c == NULL) return ncclInternalError;
  ncclResult_t res = GS_INNER->closeSend(c->inner);
  retired_free(c);
  c->magic = 0;
  free(c);
  return res;
}

static ncclResult_t gs_close_recv(void* recv_comm) {
  gs_comm* c = gs_comm_check(recv_comm, GS_RECV, "closeRecv");
  if (c == NULL) return ncclInternalError;
  int lost = gs_landed_drop(c, NULL);
  if (lost) unflushed_report(lost, "closeRecv", NULL);
  ncclResult_t res = GS_INNER->closeRecv(c->inner);
  retired_free(c);
  c->magic = 0;
  free(c);
  return res;
}

static ncclResult_t gs_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr) {
  gs_ctx* c = ctx_check(ctx, "setNetAttr");
  return c ? GS_INNER->setNetAttr(c->inner, attr) : ncclInternalError;
}

__attribute__((visibility("default"))) ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "GdrSim",
    .init = gs_init,
    .devices = gs_devices,
    .getProperties = gs_get_properties,
    .listen = gs_listen,
    .connect = gs_connect,
    .accept = gs_accept,
    .regMr = gs_reg_mr,
    .regMrDmaBuf = gs_reg_mr_dmabuf,
    .deregMr = gs_dereg_mr,
    .isend = gs_isend,
    .irecv = gs_irecv,
    .iflush = gs_iflush,
    .test = gs_test,
    .closeSend = gs_close_send,
    .closeRecv = gs_close_recv,
    .closeListen = gs_close_listen,
    .getDeviceMr = NULL,   /* no device offload */
    .irecvConsumed = NULL, /* no device offload */
    .makeVDevice = NULL,   /* no NIC fusion */
    .finalize = gs_finalize,
    .setNetAttr = gs_set_net_attr,
};
