/* P2P connections (device mode): the receiver's GPU memory holds the control block and the
 * slots; the sender's GPU stores slots, sizes and tail there over NVLink/PCIe and polls head
 * there. The receiver allocates and zeroes the FIFO in cuMem memory (transport_vmem.c: what
 * ncclCommSuspend releases) and sends either its descriptor (other process: the sender copies
 * it with pidfd_getfd and maps it, or, where the sender's process cannot, is handed it by
 * SCM_RIGHTS once the batch's setup messages are all out: vmem_fdx_*) or the device address
 * itself (same process; the receiver granted the sender's device access). Where cuMem is
 * unavailable (NCCL_CUMEM_ENABLE=0, an old driver) the FIFO is cudaMalloc memory shared by CUDA
 * IPC handle, and suspend is refused.
 *
 * The choice (p2p_usable) is a pure function of what both ranks published at init, so the two
 * ends of a pair never disagree:
 *  - both in device mode, on one host, neither has NCCL_P2P_DISABLE=1 nor NCCL_P2P_LEVEL=LOC;
 *  - the same GPU (same UUID: two MIG instances of one board are not the same GPU), or each
 *    GPU reports cudaDeviceCanAccessPeer towards the other (only GPUs visible to a process can
 *    be asked about: a peer GPU hidden by CUDA_VISIBLE_DEVICES means shm);
 *  - NCCL_P2P_LEVEL=NVL (or NVB) on either side also requires an NVLink-class link both ways,
 *    which without NVML we take to be cudaDevP2PAttrAccessSupported plus
 *    cudaDevP2PAttrNativeAtomicSupported (PCIe peer links report no native atomics; the
 *    performance rank alone does not tell PCIe from NVLink). Every other level (PIX, PXB, PXN,
 *    PHB, SYS, legacy integers ≥ 1) allows whatever cudaDeviceCanAccessPeer allows: weft has no
 *    PCIe topology yet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "comm/comm.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/random.h"
#include "util/param.h"

/* Whether a's GPU may write b's GPU, and over what kind of link. */
static int reaches(const weft_p2p_rank_info* a, uint64_t bus, int* nvl) {
  int n = a->npeers < WEFT_P2P_MAX_GPUS ? a->npeers : WEFT_P2P_MAX_GPUS;
  for (int i = 0; i < n; i++)
    if (a->peer_bus[i] == bus) {
      *nvl = a->peer_nvl[i];
      return 1;
    }
  return 0;
}

int p2p_usable(const struct ncclComm* comm, int peer) {
  return p2p_pair_usable(comm, comm->rank, peer);
}

int p2p_pair_usable(const struct ncclComm* comm, int ra, int rb) {
  const weft_rank_info* me = &comm->peers[ra];
  const weft_rank_info* p = &comm->peers[rb];
  if (me->mode != WEFT_MODE_DEVICE || p->mode != WEFT_MODE_DEVICE || !comm_same_host(me, p))
    return 0;
  const weft_p2p_rank_info *a = &me->p2p, *b = &p->p2p;
  if (a->p2p_disable || b->p2p_disable) return 0;
  if (a->p2p_level == WEFT_P2P_LEVEL_LOC || b->p2p_level == WEFT_P2P_LEVEL_LOC) return 0;
  if (memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0) return 1; /* one GPU: its own memory */
  int nvl_ab = 0, nvl_ba = 0;
  if (!reaches(a, b->bus, &nvl_ab) || !reaches(b, a->bus, &nvl_ba)) return 0;
  if ((a->p2p_level == WEFT_P2P_LEVEL_NVL || b->p2p_level == WEFT_P2P_LEVEL_NVL) &&
      !(nvl_ab && nvl_ba))
    return 0;
  return 1;
}

int transport_all_p2p(const struct ncclComm* comm) {
  for (int r = 0; r < comm->nranks; r++)
    if (r != comm->rank && !p2p_usable(comm, r)) return 0;
  return comm->mode == WEFT_MODE_DEVICE;
}

int transport_all_nvlink(const struct ncclComm* comm) {
  for (int r = 0; r < comm->nranks; r++)
    for (int q = 0; q < comm->nranks; q++) {
      const weft_rank_info *a = &comm->peers[r], *b = &comm->peers[q];
      if (q == r || !comm_same_host(a, b)) continue;
      if (a->mode != WEFT_MODE_DEVICE || memcmp(a->p2p.uuid, b->p2p.uuid, 16) == 0) continue;
      int nvl = 0;
      if (!reaches(&a->p2p, b->p2p.bus, &nvl) || !nvl) return 0;
    }
  return comm->mode == WEFT_MODE_DEVICE;
}

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

_Static_assert(sizeof(cudaIpcMemHandle_t) == WEFT_IPC_HANDLE_BYTES, "IPC handle fits conn_info");

/* One process: a device address of one rank is valid in the other (after peer access). */
int p2p_same_process(const struct ncclComm* comm, int peer) {
  const weft_rank_info* me = &comm->peers[comm->rank];
  const weft_rank_info* p = &comm->peers[peer];
  return comm_same_host(me, p) && me->pid == p->pid && me->p2p.proc_id == p->p2p.proc_id;
}

/* NCCL_P2P_LEVEL: NCCL's path names, or its legacy integers (0 = LOC, larger = farther). */
static int parse_level(void) {
  const char* s = param_str(WEFT_PARAM_P2P_LEVEL);
  if (!*s) return WEFT_P2P_LEVEL_ANY;
  if (!strcasecmp(s, "LOC")) return WEFT_P2P_LEVEL_LOC;
  if (!strcasecmp(s, "NVL") || !strcasecmp(s, "NVB")) return WEFT_P2P_LEVEL_NVL;
  static const char* farther[] = {"PIX", "PXB", "PXN", "PHB", "SYS"};
  for (size_t i = 0; i < sizeof farther / sizeof farther[0]; i++)
    if (!strcasecmp(s, farther[i])) return WEFT_P2P_LEVEL_ANY;
  /* Otherwise an integer: param_str checked the value against its choices (params.def). */
  int64_t v;
  if (param_parse_int(s, &v) && v == 0) return WEFT_P2P_LEVEL_LOC;
  return WEFT_P2P_LEVEL_ANY;
}

static uint64_t proc_id_value;
static pthread_once_t proc_id_once = PTHREAD_ONCE_INIT;

static void proc_id_init(void) {
  proc_id_value = weft_random64() | 1; /* never 0: zero means "host mode, nothing published" */
}

static cudaError_t bus_of(int dev, uint64_t* bus) {
  int dom = 0, b = 0, d = 0;
  cudaError_t e = cudaDeviceGetAttribute(&dom, cudaDevAttrPciDomainId, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&b, cudaDevAttrPciBusId, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d, cudaDevAttrPciDeviceId, dev);
  if (e == cudaSuccess) *bus = ((uint64_t)(uint32_t)dom << 16) | ((uint64_t)(b & 0xff) << 8) |
                               (uint64_t)(d & 0xff);
  return e;
}

static ncclResult_t gather_peers(struct ncclComm* comm, weft_p2p_rank_info* out) {
  int me = comm->cuda_dev, ndev = 0;
  cudaError_t e = bus_of(me, &out->bus);
  if (e != cudaSuccess) return devmem_cuda_fail(comm, NULL, "reading the GPU's PCI address", e);
  struct cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, me);
  if (e != cudaSuccess) return devmem_cuda_fail(comm, NULL, "cudaGetDeviceProperties", e);
  _Static_assert(sizeof prop.uuid == sizeof out->uuid, "a CUDA UUID is 16 bytes");
  memcpy(out->uuid, &prop.uuid, sizeof out->uuid);
  e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess) return devmem_cuda_fail(comm, NULL, "cudaGetDeviceCount", e);
  for (int d = 0; d < ndev && out->npeers < WEFT_P2P_MAX_GPUS; d++) {
    if (d == me) continue;
    int ok = 0, access = 0, atomics = 0;
    e = cudaDeviceCanAccessPeer(&ok, me, d);
    if (e != cudaSuccess) return devmem_cuda_fail(comm, NULL, "cudaDeviceCanAccessPeer", e);
    if (!ok) continue;
    uint64_t bus;
    e = bus_of(d, &bus);
    if (e == cudaSuccess)
      e = cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, me, d);
    if (e == cudaSuccess)
      e = cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, me, d);
    if (e != cudaSuccess) return devmem_cuda_fail(comm, NULL, "reading a peer GPU's attributes", e);
    out->peer_bus[out->npeers] = bus;
    out->peer_nvl[out->npeers] = (uint8_t)(access && atomics);
    out->npeers++;
  }
  return ncclSuccess;
}

ncclResult_t transport_p2p_rank_info(const struct ncclComm* ccomm, weft_p2p_rank_info* out) {
  memset(out, 0, sizeof *out);
  if (ccomm->mode != WEFT_MODE_DEVICE) return ncclSuccess; /* host mode: no CUDA call at all */
  struct ncclComm* comm = (struct ncclComm*)ccomm;       /* only read below */
  pthread_once(&proc_id_once, proc_id_init);
  weft_p2p_rank_info info;
  memset(&info, 0, sizeof info);
  info.proc_id = proc_id_value;
  info.p2p_disable = (int32_t)param_int(WEFT_PARAM_P2P_DISABLE);
  info.p2p_level = parse_level();
  char why[160];
  /* Probed once per communicator (the kernel is asked each time: a process's rights can
   * change); p2p FIFOs and LSA windows read this published fact, the peers' included. */
  info.take_fd = ipcmap_can_take_fds(why, sizeof why);
  if (!info.take_fd)
    INFO(NCCL_INIT | NCCL_P2P, "rank %d: cannot copy another process's cuMem descriptors (%s): "
         "peers in other processes hand theirs over by SCM_RIGHTS", comm->rank, why);
  int saved;
  WEFT_CHECK(devmem_enter(comm, &saved));
  ncclResult_t res = gather_peers(comm, &info);
  devmem_leave(comm, saved);
  WEFT_CHECK(res);
  INFO(NCCL_INIT | NCCL_P2P, "rank %d: GPU %d at %04llx:%02llx:%02llx reaches %d peer GPU(s)%s%s",
       comm->rank, comm->cuda_dev, (unsigned long long)(info.bus >> 16),
       (unsigned long long)((info.bus >> 8) & 0xff), (unsigned long long)(info.bus & 0xff),
       info.npeers, info.p2p_disable ? ", NCCL_P2P_DISABLE=1" : "",
       info.p2p_level == WEFT_P2P_LEVEL_LOC ? ", NCCL_P2P_LEVEL=LOC" : "");
  *out = info;
  return ncclSuccess;
}

/* Peer access from this device to dev, enabled once per process and pair of devices. */
#define P2P_MAX_DEVS 64
static unsigned char peer_enabled[P2P_MAX_DEVS][P2P_MAX_DEVS];

static ncclResult_t enable_peer_access(struct ncclComm* comm, tconn* c, int dev) {
  int me = comm->cuda_dev;
  int cached = me < P2P_MAX_DEVS && dev < P2P_MAX_DEVS;
  if (cached && __atomic_load_n(&peer_enabled[me][dev], __ATOMIC_ACQUIRE)) return ncclSuccess;
  cudaError_t e = cudaDeviceEnablePeerAccess(dev, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError(); /* expected (another comm or the application did it): clear it */
  } else if (e != cudaSuccess) {
    char what[64];
    snprintf(what, sizeof what, "cudaDeviceEnablePeerAccess(%d)", dev);
    return devmem_cuda_fail(comm, c, what, e);
  }
  if (cached) __atomic_store_n(&peer_enabled[me][dev], 1, __ATOMIC_RELEASE);
  return ncclSuccess;
}

ncclResult_t p2p_enable_peer_access(struct ncclComm* comm, int dev) {
  return enable_peer_access(comm, NULL, dev);
}

static void set_fifo(tconn* c, void* mem) {
  c->conn.ctrl = mem; /* device addresses: the host executor never runs in device mode */
  c->conn.buff = (char*)mem + WEFT_FIFO_CTRL_BYTES;
  c->dev_ctrl = mem;
  c->dev_buff = (char*)mem + WEFT_FIFO_CTRL_BYTES;
}

/* The FIFO in cudaMalloc memory, where cuMem is not available (why): works, but suspend
 * cannot release it. */
static ncclResult_t recv_setup_cudamalloc(struct ncclComm* comm, tconn* c, conn_info* info,
                                          size_t bytes, const char* why) {
  struct weft_transport* t = comm->transport;
  void* sp;
  WEFT_CHECK(devmem_stream(comm, &sp));
  void* mem = NULL;
  cudaError_t e = cudaMalloc(&mem, bytes);
  if (e != cudaSuccess) return devmem_cuda_fail(comm, c, "cudaMalloc of the p2p FIFO", e);
  c->p2p_mem = mem; /* p2p_close frees it from here on */
  t->persist_bytes += bytes;
  if (!t->no_suspend[0]) {
    snprintf(t->no_suspend, sizeof t->no_suspend, "its p2p FIFOs are in cudaMalloc memory: %.110s",
             why);
    INFO(NCCL_INIT | NCCL_ALLOC, "rank %d: p2p FIFOs in cudaMalloc memory (%s); "
         "ncclCommSuspend cannot release them", comm->rank, why);
  }
  /* Zero: counters start at 0 and an LL flag of 0 is never valid. On the private stream, since
   * a plain cudaMemset would queue behind (blocking) user streams. */
  e = cudaMemsetAsync(mem, 0, bytes, (cudaStream_t)sp);
  if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)sp);
  if (e != cudaSuccess) return devmem_cuda_fail(comm, c, "clearing the p2p FIFO", e);
  if (p2p_same_process(comm, c->key.peer)) {
    info->p2p_how = P2P_VIA_PTR;
    info->p2p_ptr = (uint64_t)(uintptr_t)mem;
  } else {
    cudaIpcMemHandle_t h;
    e = cudaIpcGetMemHandle(&h, mem);
    if (e != cudaSuccess) return devmem_cuda_fail(comm, c, "cudaIpcGetMemHandle of the FIFO", e);
    info->p2p_how = P2P_VIA_IPC;
    memcpy(info->p2p_handle, &h, sizeof h);
  }
  set_fifo(c, mem);
  return ncclSuccess;
}

ncclResult_t p2p_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info) {
  size_t bytes = conn_mem_bytes(c->conn.step_bytes);
  info->p2p_bytes = bytes;
  info->p2p_dev = comm->cuda_dev;
  info->p2p_fd = -1;
  char why[160];
  int same = p2p_same_process(comm, c->key.peer);
  weft_vmem* v = NULL;
  int cumem = vmem_usable(comm, why, sizeof why);
  /* cuMem (transport_vmem.c): suspend can give it back. A peer of this process uses the
   * address, so its device gets access too. */
  if (cumem) {
    ncclResult_t r = vmem_alloc(comm, c, bytes, same ? comm->peers[c->key.peer].cuda_dev : -1,
                                &v, why, sizeof why);
    if (r != ncclSuccess && r != ncclSystemError) return r;
    cumem = r == ncclSuccess;
  }
  if (!cumem) {
    WEFT_CHECK(recv_setup_cudamalloc(comm, c, info, bytes, why));
    c->p2p_how = info->p2p_how;
    return ncclSuccess;
  }
  c->p2p_vmem = v; /* p2p_close frees it from here on */
  info->p2p_bytes = vmem_bytes(v);
  if (same) {
    info->p2p_how = P2P_VIA_PTR;
    info->p2p_ptr = (uint64_t)(uintptr_t)vmem_ptr(v);
  } else {
    info->p2p_how = P2P_VIA_FD;
    info->p2p_fd = vmem_fd(v);
    /* A sender that cannot copy it is handed it (vmem_fdx_finish, after the batch's sends). */
    info->p2p_by_fdx = !comm->peers[c->key.peer].p2p.take_fd;
    if (info->p2p_by_fdx) WEFT_CHECK(vmem_fdx_offer(comm, c, &info->p2p_token));
  }
  c->p2p_how = info->p2p_how;
  set_fifo(c, vmem_ptr(v));
  return ncclSuccess;
}

ncclResult_t p2p_send_connect(struct ncclComm* comm, tconn* c, const conn_info* info) {
  size_t bytes = conn_mem_bytes(c->conn.step_bytes);
  int same = p2p_same_process(comm, c->key.peer);
  /* The receiver rounds a cuMem FIFO up to its granularity; the other process chose IPC or a
   * descriptor (NCCL_CUMEM_ENABLE, its driver). */
  int how_ok = same ? info->p2p_how == P2P_VIA_PTR
                    : info->p2p_how == P2P_VIA_IPC || info->p2p_how == P2P_VIA_FD;
  int bytes_ok = info->p2p_how == P2P_VIA_IPC ? info->p2p_bytes == bytes
                                              : info->p2p_bytes >= bytes;
  if (!how_ok || !bytes_ok) {
    WARN("rank %d: rank %d offered a p2p FIFO of %llu bytes via %s, expected %zu bytes via %s "
         "(channel %d)",
         comm->rank, c->key.peer, (unsigned long long)info->p2p_bytes,
         info->p2p_how == P2P_VIA_PTR  ? "pointer"
         : info->p2p_how == P2P_VIA_FD ? "descriptor"
                                       : "IPC",
         bytes, same ? "pointer" : "IPC or descriptor", c->key.channel);
    return ncclInternalError;
  }
  if (same) {
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess) return devmem_cuda_fail(comm, c, "cudaGetDeviceCount", e);
    if (info->p2p_dev < 0 || info->p2p_dev >= ndev || info->p2p_ptr == 0) {
      WARN("rank %d: rank %d (same process) offered device %d of %d, address 0x%llx", comm->rank,
           c->key.peer, info->p2p_dev, ndev, (unsigned long long)info->p2p_ptr);
      return ncclInternalError;
    }
    if (info->p2p_dev != comm->cuda_dev)
      WEFT_CHECK(enable_peer_access(comm, c, info->p2p_dev));
    c->p2p_how = P2P_VIA_PTR;
    set_fifo(c, (void*)(uintptr_t)info->p2p_ptr);
    return ncclSuccess;
  }
  if (info->p2p_how == P2P_VIA_FD) {
    weft_vmem* v;
    if (info->p2p_by_fdx) /* mapped by vmem_fdx_finish once every rank has sent its offers */
      WEFT_CHECK(vmem_reserve(comm, c, info->p2p_bytes, &v));
    else
      WEFT_CHECK(vmem_import(comm, c, info->pid, info->p2p_fd, info->p2p_bytes, &v));
    c->p2p_vmem = v; /* p2p_close frees it from here on */
    c->p2p_how = P2P_VIA_FD;
    set_fifo(c, vmem_ptr(v));
    if (info->p2p_by_fdx) WEFT_CHECK(vmem_fdx_fetch(comm, c, info->pid, info->p2p_token));
    return ncclSuccess;
  }
  void* mem = NULL;
  int e = regserve_acquire(comm, info->p2p_handle, &mem);
  if (e != cudaSuccess)
    return devmem_cuda_fail(comm, c, "cudaIpcOpenMemHandle of the peer's FIFO", e);
  c->p2p_ipc = mem;
  c->p2p_how = P2P_VIA_IPC;
  set_fifo(c, mem);
  return ncclSuccess;
}

void p2p_close(struct ncclComm* comm, tconn* c) {
  if (c->p2p_ipc) ipcmap_release(comm, c, c->p2p_ipc);
  if (c->p2p_mem) {
    cudaError_t e = cudaFree(c->p2p_mem);
    if (e != cudaSuccess) devmem_cuda_fail(comm, c, "cudaFree of the p2p FIFO", e);
    comm->transport->persist_bytes -= conn_mem_bytes(c->conn.step_bytes);
  }
  vmem_fdx_drop(c);
  vmem_free(c->p2p_vmem);
  c->p2p_vmem = NULL;
  c->p2p_ipc = c->p2p_mem = NULL;
  c->conn.ctrl = NULL;
  c->conn.buff = NULL;
  c->dev_ctrl = NULL;
  c->dev_buff = NULL;
}

#else /* !WEFT_HAVE_CUDA: device mode is refused before anything here could run. */

ncclResult_t transport_p2p_rank_info(const struct ncclComm* comm, weft_p2p_rank_info* out) {
  (void)comm;
  memset(out, 0, sizeof *out);
  return ncclSuccess;
}

ncclResult_t p2p_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info) {
  (void)c;
  (void)info;
  WARN("rank %d: p2p needs a weft built with CUDA", comm->rank);
  return ncclInvalidUsage;
}

ncclResult_t p2p_send_connect(struct ncclComm* comm, tconn* c, const conn_info* info) {
  (void)c;
  (void)info;
  WARN("rank %d: p2p needs a weft built with CUDA", comm->rank);
  return ncclInvalidUsage;
}

void p2p_close(struct ncclComm* comm, tconn* c) {
  (void)comm;
  (void)c;
}

#endif
