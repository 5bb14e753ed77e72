/* GPUDirect RDMA for net connections (device mode). When the communicator's net plugin takes
 * GPU memory (ptrSupport NCCL_PTR_CUDA or NCCL_PTR_DMABUF) and the GPU-NIC path is within
 * NCCL_NET_GDR_LEVEL (default PXB), a Simple connection's slots live in GPU memory: the plugin
 * receives straight into them and sends straight from them, so no byte crosses host memory.
 * After each receive the proxy calls the plugin's iflush (unless NCCL_GDR_FLUSH_DISABLE=1;
 * always when the plugin sets forceFlush) before it publishes tail, so the NIC's writes are
 * visible to the kernel that reads them. The control block (tail, head, sizes) stays in pinned
 * host memory, where the proxy reads and writes it.
 *
 * LL connections stay in host memory: the kernel polls their flags line by line, and a NIC
 * does not promise to write 8-byte words in order. Sends use GPU memory only where GPU reads
 * by the NIC are wanted (NCCL_NET_GDR_READ; by default on compute capability 8.0 and later).
 * Each side decides alone: the wire format does not depend on where the slots live. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "plugin/net.h"
#include "transport/transport.h"
#include "topo/cuda_entry.h"
#include "topo/pci_path.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/param.h"
#include "util/names.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

static int gdr_level(void) {
  const char* s = param_str(WEFT_PARAM_NET_GDR_LEVEL);
  int level = WEFT_PATH_PXB;
  /* param_str checked the value against its choices (params.def): a bad one reads as PXB. */
  if (*s && !pci_path_parse_level(s, &level)) level = WEFT_PATH_PXB;
  return level;
}

static int gdr_read_default(struct ncclComm* comm) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, comm->cuda_dev) !=
      cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return major >= 8;
}

/* Whether c should use GPU memory, how its receives flush and the plugin's ptrSupport for c's
 * device. Decided from the plugin's properties, the PCI path and the environment; every "no"
 * is logged at INFO. */
static int gdr_wanted(struct ncclComm* comm, const tconn* c, int* flush, int* ptr_support) {
  *flush = WEFT_NET_FLUSH_NONE;
  if (c->key.proto != NCCL_PROTO_SIMPLE) return 0;
  ncclNetProperties_v12_t props;
  memset(&props, 0, sizeof props);
  if (comm->net->api->getProperties(c->dev, &props) != ncclSuccess) return 0;
  if (!(props.ptrSupport & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF))) return 0;
  uint64_t bus = comm->peers[comm->rank].p2p.bus;
  char busid[16];
  snprintf(busid, sizeof busid, "%04x:%02x:%02x.0", (unsigned)(bus >> 16) & 0xffff,
           (unsigned)(bus >> 8) & 0xff, (unsigned)bus & 0xff);
  int cls = bus ? pci_path_class("/sys", busid, props.pciPath) : WEFT_PATH_SYS;
  int level = gdr_level();
  if (cls > level) {
    INFO(NCCL_NET, "rank %d: net %s device %d: no GPUDirect for rank %d: GPU %s to NIC is %s, "
         "beyond NCCL_NET_GDR_LEVEL (%s)", comm->rank, comm->net->name, c->dev, c->key.peer,
         busid, pci_path_name(cls), pci_path_name(level));
    return 0;
  }
  if (c->conn.is_send) {
    int64_t read = param_int(WEFT_PARAM_NET_GDR_READ);
    if (read < 0) read = gdr_read_default(comm);
    if (!read) {
      INFO(NCCL_NET, "rank %d: net %s: sends to rank %d staged in host memory "
           "(NCCL_NET_GDR_READ off)", comm->rank, comm->net->name, c->key.peer);
      return 0;
    }
  } else if (props.forceFlush) {
    *flush = WEFT_NET_FLUSH_ALWAYS;
  } else if (!param_int(WEFT_PARAM_GDR_FLUSH_DISABLE)) {
    *flush = WEFT_NET_FLUSH_DATA;
  }
  *ptr_support = props.ptrSupport;
  return 1;
}

/* A dma-buf fd for [mem, mem+bytes), or -1 where the driver cannot export one. */
static int dmabuf_fd(void* mem, size_t bytes) {
  const weft_cuda_drv* d = cuda_drv();
  long page = sysconf(_SC_PAGESIZE);
  if (!d->range_handle || page <= 0 || (uintptr_t)mem % (uintptr_t)page || bytes % (size_t)page) return -1;
  int fd = -1;
  if (d->range_handle(&fd, (CUdeviceptr)(uintptr_t)mem, bytes,
                      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) != CUDA_SUCCESS)
    return -1;
  return fd;
}

/* Register the GPU slots: a dma-buf where both the plugin and the driver can, else regMr. */
static ncclResult_t gdr_register(struct ncclComm* comm, tconn* c, int ptr_support, void* mem,
                                 size_t bytes) {
  const ncclNet_v12_t* api = comm->net->api;
  ncclResult_t res = ncclInternalError;
  if (ptr_support & NCCL_PTR_DMABUF) {
    int fd = dmabuf_fd(mem, bytes);
    if (fd >= 0) {
      res = api->regMrDmaBuf(c->net_comm, mem, bytes, NCCL_PTR_CUDA, 0, fd, &c->mhandle);
      close(fd); /* the registration holds its own reference */
      if (res == ncclSuccess) {
        c->gdr_dmabuf = 1;
        return ncclSuccess;
      }
      INFO(NCCL_NET, "rank %d: net %s: regMrDmaBuf of %zu GPU bytes for rank %d failed (%s); "
           "trying regMr", comm->rank, comm->net->name, bytes, c->key.peer,
           weft_result_str(res));
    }
  }
  if (ptr_support & NCCL_PTR_CUDA)
    res = api->regMr(c->net_comm, mem, bytes, NCCL_PTR_CUDA, &c->mhandle);
  if (res != ncclSuccess) c->mhandle = NULL;
  return res;
}

int gdr_setup(struct ncclComm* comm, tconn* c, size_t bytes) {
  int flush, ptr_support = 0;
  if (!gdr_wanted(comm, c, &flush, &ptr_support)) return 0;
  void* mem = NULL;
  cudaError_t e = cudaMalloc(&mem, bytes);
  if (e != cudaSuccess) {
    devmem_cuda_fail(comm, c, "cudaMalloc of GPUDirect slots (staging in host memory instead)", e);
    return 0;
  }
  ncclResult_t res = gdr_register(comm, c, ptr_support, mem, bytes);
  if (res != ncclSuccess) {
    /* The plugin advertised GPU memory and refused it: say so, and stage through the host. */
    WARN("rank %d: net %s advertises GPU memory (ptrSupport 0x%x) but registering %zu bytes "
         "of it for rank %d failed (%s); this connection stages through host memory",
         comm->rank, comm->net->name, ptr_support, bytes, c->key.peer,
         weft_result_str(res));
    cudaFree(mem);
    return 0;
  }
  c->gdr_mem = mem;
  devmem_persist(comm, mem, 1);
  c->gdr_flush = flush;
  return 1;
}

void gdr_free(struct ncclComm* comm, tconn* c) {
  if (!c->gdr_mem) return;
  devmem_persist(comm, c->gdr_mem, -1);
  cudaError_t e = cudaFree(c->gdr_mem);
  if (e != cudaSuccess) devmem_cuda_fail(comm, c, "cudaFree of GPUDirect slots", e);
  c->gdr_mem = NULL;
}

#else /* !WEFT_HAVE_CUDA: host mode only, never GPU memory. */

int gdr_setup(struct ncclComm* comm, tconn* c, size_t bytes) {
  (void)comm;
  (void)c;
  (void)bytes;
  return 0;
}
void gdr_free(struct ncclComm* comm, tconn* c) {
  (void)comm;
  (void)c;
}

#endif
