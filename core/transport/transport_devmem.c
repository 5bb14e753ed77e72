/* Device-mode plumbing shared by the transports: the communicator's device made current around
 * every CUDA call, CUDA errors turned into one WARN, host memory (shm segments, net buffers)
 * pinned and mapped into the GPU, and the table of weft_dev_conn the kernels read.
 *
 * Nothing here may wait on the whole device or on the legacy default stream: user kernels may
 * be spinning on other streams (another communicator's, waiting for this rank's peers), so a
 * cudaMemcpy / cudaDeviceSynchronize here could deadlock. Copies go through a private
 * cudaStreamNonBlocking stream and only that stream is synchronized. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "topo/cuda_entry.h"
#include "transport/transport_internal.h"
#include "util/check.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

void devmem_persist(struct ncclComm* comm, const void* dev, int sign) {
  uintptr_t base = 0;
  size_t bytes = 0;
  if (!dev || !comm->transport || !cuda_alloc_range(dev, &base, &bytes)) return;
  if (sign > 0)
    comm->transport->persist_bytes += bytes;
  else if (comm->transport->persist_bytes >= bytes)
    comm->transport->persist_bytes -= bytes;
  else
    comm->transport->persist_bytes = 0;
}

ncclResult_t devmem_cuda_fail(struct ncclComm* comm, const tconn* c, const char* what, int err) {
  const char* text =
      err == IPCMAP_CLOSING ? ipcmap_acquire_error(err) : cudaGetErrorString((cudaError_t)err);
  cudaGetLastError(); /* not sticky: clear it so a later launch check does not see it */
  if (c)
    WARN("rank %d: %s for the %s connection %s rank %d (channel %d) on CUDA device %d failed: "
         "%s (CUDA error %d)",
         comm->rank, what, c->key.proto == NCCL_PROTO_LL ? "LL" : "Simple",
         c->conn.is_send ? "to" : "from", c->key.peer, c->key.channel, comm->cuda_dev, text,
         err);
  else
    WARN("rank %d: %s on CUDA device %d failed: %s (CUDA error %d)", comm->rank, what,
         comm->cuda_dev, text, err);
  return ncclUnhandledCudaError;
}

ncclResult_t devmem_enter(struct ncclComm* comm, int* saved_dev) {
  int cur = -1;
  cudaError_t e = cudaGetDevice(&cur);
  if (e != cudaSuccess) return devmem_cuda_fail(comm, NULL, "cudaGetDevice", e);
  if (cur != comm->cuda_dev) {
    e = cudaSetDevice(comm->cuda_dev);
    if (e != cudaSuccess) return devmem_cuda_fail(comm, NULL, "cudaSetDevice", e);
  }
  *saved_dev = cur;
  return ncclSuccess;
}

void devmem_thread_device(int cuda_dev) {
  if (cuda_dev >= 0) (void)cudaSetDevice(cuda_dev);
}

void devmem_leave(struct ncclComm* comm, int saved_dev) {
  if (saved_dev == comm->cuda_dev || saved_dev < 0) return;
  cudaError_t e = cudaSetDevice(saved_dev);
  if (e != cudaSuccess) devmem_cuda_fail(comm, NULL, "restoring the caller's device", e);
}

ncclResult_t devmem_stream(struct ncclComm* comm, void** stream) {
  struct weft_transport* t = comm->transport;
  if (t->stream == NULL) {
    cudaStream_t s;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess)
      return devmem_cuda_fail(comm, NULL, "cudaStreamCreateWithFlags(NonBlocking)", e);
    t->stream = s;
  }
  *stream = t->stream;
  return ncclSuccess;
}

ncclResult_t devmem_register_host(struct ncclComm* comm, tconn* c, void* mem, size_t bytes) {
  /* Portable: the registration is valid in every context of the process (several comms of one
   * process on different GPUs may share nothing, but a split child reuses this device). */
  cudaError_t e = cudaHostRegister(mem, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
  if (e != cudaSuccess) return devmem_cuda_fail(comm, c, "cudaHostRegister of the FIFO", e);
  c->host_reg = mem;
  void* d = NULL;
  e = cudaHostGetDevicePointer(&d, mem, 0);
  if (e != cudaSuccess) {
    ncclResult_t res = devmem_cuda_fail(comm, c, "cudaHostGetDevicePointer of the FIFO", e);
    devmem_unregister_host(comm, c);
    return res;
  }
  c->dev_ctrl = d;
  c->dev_buff = (char*)d + WEFT_FIFO_CTRL_BYTES;
  return ncclSuccess;
}

void devmem_unregister_host(struct ncclComm* comm, tconn* c) {
  if (c->host_reg == NULL) return;
  cudaError_t e = cudaHostUnregister(c->host_reg);
  if (e != cudaSuccess) devmem_cuda_fail(comm, c, "cudaHostUnregister of the FIFO", e);
  c->host_reg = NULL;
  c->dev_ctrl = NULL;
  c->dev_buff = NULL;
}

/* The table holds a slot for every possible key, so a descriptor's address is fixed from the
 * start and work items built before a reconnect stay valid. Allocated on first use: an init
 * costs no device memory. */
static ncclResult_t dev_table(struct ncclComm* comm, cudaStream_t s) {
  struct weft_transport* t = comm->transport;
  if (t->dev_table) return ncclSuccess;
  size_t bytes = t->ntable * sizeof(weft_dev_conn);
  void* d = NULL;
  cudaError_t e = cudaMalloc(&d, bytes);
  if (e != cudaSuccess)
    return devmem_cuda_fail(comm, NULL, "cudaMalloc of the connection table", e);
  e = cudaMemsetAsync(d, 0, bytes, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    ncclResult_t res = devmem_cuda_fail(comm, NULL, "clearing the connection table", e);
    cudaFree(d);
    return res;
  }
  t->dev_table = d;
  devmem_persist(comm, d, 1);
  INFO(NCCL_INIT | NCCL_ALLOC, "rank %d: device connection table of %zu entries (%zu bytes)",
       comm->rank, t->ntable, bytes);
  return ncclSuccess;
}

ncclResult_t devmem_fill(struct ncclComm* comm, tconn* const* cs, int m) {
  struct weft_transport* t = comm->transport;
  void* sp;
  if (m == 0) return ncclSuccess;
  WEFT_CHECK(devmem_stream(comm, &sp));
  cudaStream_t s = sp;
  WEFT_CHECK(dev_table(comm, s));
  /* Pageable staging is fine: the stream is synchronized before the array is freed. */
  weft_dev_conn* h = calloc((size_t)m, sizeof *h);
  if (!h) {
    WARN("rank %d: out of memory filling %d device connection descriptors", comm->rank, m);
    return ncclSystemError;
  }
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < m; i++) {
    const tconn* c = cs[i];
    size_t idx = c->slot;
    h[i].ctrl = c->dev_ctrl;
    h[i].buff = c->dev_buff;
    h[i].step_bytes = c->conn.step_bytes;
    h[i].step = 0;
    h[i].proto = c->conn.proto;
    h[i].flags = c->conn.flags;
    h[i].is_send = c->conn.is_send;
    h[i].host_mem = c->transport != WEFT_TRANSPORT_P2P;
    cudaError_t e = cudaMemcpyAsync(t->dev_table + idx, &h[i], sizeof h[i],
                                    cudaMemcpyHostToDevice, s);
    if (e != cudaSuccess) {
      res = devmem_cuda_fail(comm, c, "cudaMemcpyAsync of the device descriptor", e);
      goto out;
    }
  }
out:;
  /* Wait even after a failure: the copies already queued read h. */
  cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess && res == ncclSuccess)
    res = devmem_cuda_fail(comm, NULL, "cudaStreamSynchronize of the descriptor copies", e);
  free(h);
  return res;
}

void devmem_fini(struct ncclComm* comm) {
  struct weft_transport* t = comm->transport;
  if (t->dev_table) {
    devmem_persist(comm, t->dev_table, -1);
    cudaError_t e = cudaFree(t->dev_table);
    if (e != cudaSuccess) devmem_cuda_fail(comm, NULL, "cudaFree of the connection table", e);
    t->dev_table = NULL;
  }
  if (t->stream) {
    cudaError_t e = cudaStreamDestroy((cudaStream_t)t->stream);
    if (e != cudaSuccess) devmem_cuda_fail(comm, NULL, "cudaStreamDestroy", e);
    t->stream = NULL;
  }
}

/* A small table for the kernels: bytes from host into new GPU memory, on the private stream
 * (a plain copy would queue behind blocking user streams), waited for. */
ncclResult_t devmem_upload(struct ncclComm* comm, const void* host, size_t bytes, void** out,
                           const char* what) {
  *out = NULL;
  void *d = NULL, *sp = NULL;
  WEFT_CHECK(devmem_stream(comm, &sp));
  cudaError_t e = cudaMalloc(&d, bytes);
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, (cudaStream_t)sp);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)sp);
    if (e != cudaSuccess) cudaFree(d);
  }
  if (e != cudaSuccess) {
    char w[128];
    snprintf(w, sizeof w, "copying %s", what);
    return devmem_cuda_fail(comm, NULL, w, e);
  }
  *out = d;
  devmem_persist(comm, d, 1);
  return ncclSuccess;
}

void devmem_free(struct ncclComm* comm, void* dev, const char* what) {
  if (!dev) return;
  devmem_persist(comm, dev, -1);
  cudaError_t e = cudaFree(dev);
  if (e != cudaSuccess) {
    char w[128];
    snprintf(w, sizeof w, "cudaFree of %s", what);
    devmem_cuda_fail(comm, NULL, w, e);
  }
}

#else /* !WEFT_HAVE_CUDA: transport_init refuses device mode, so none of these runs. */

static ncclResult_t no_cuda(struct ncclComm* comm) {
  WARN("rank %d: this weft was built without CUDA; device-mode connections are unavailable",
       comm->rank);
  return ncclInvalidUsage;
}

ncclResult_t devmem_cuda_fail(struct ncclComm* comm, const tconn* c, const char* what, int err) {
  (void)c;
  WARN("rank %d: %s failed (error %d)", comm->rank, what, err);
  return ncclUnhandledCudaError;
}
ncclResult_t devmem_enter(struct ncclComm* comm, int* saved_dev) {
  (void)saved_dev;
  return no_cuda(comm);
}
void devmem_leave(struct ncclComm* comm, int saved_dev) {
  (void)comm;
  (void)saved_dev;
}
void devmem_thread_device(int cuda_dev) { (void)cuda_dev; }
ncclResult_t devmem_stream(struct ncclComm* comm, void** stream) {
  (void)stream;
  return no_cuda(comm);
}
ncclResult_t devmem_register_host(struct ncclComm* comm, tconn* c, void* mem, size_t bytes) {
  (void)c;
  (void)mem;
  (void)bytes;
  return no_cuda(comm);
}
void devmem_unregister_host(struct ncclComm* comm, tconn* c) {
  (void)comm;
  (void)c;
}
ncclResult_t devmem_fill(struct ncclComm* comm, tconn* const* cs, int m) {
  (void)cs;
  (void)m;
  return no_cuda(comm);
}
void devmem_fini(struct ncclComm* comm) { (void)comm; }
ncclResult_t devmem_upload(struct ncclComm* comm, const void* host, size_t bytes, void** out,
                           const char* what) {
  (void)host, (void)bytes, (void)what;
  *out = NULL;
  return no_cuda(comm);
}
void devmem_free(struct ncclComm* comm, void* dev, const char* what) {
  (void)comm, (void)dev, (void)what;
}

#endif
