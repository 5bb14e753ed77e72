/* Registered buffers (ncclCommRegister, device mode): this rank's buffer as every peer's
 * kernels can reach it, so that the direct algorithms' receivers read it in place (zero copy).
 *
 * Registration is local, as in NCCL: no peer takes part in the call, and peers may register
 * other buffers, at other times, or none. So each rank makes its own buffer reachable:
 *  - a peer in this process reads the address itself;
 *  - a peer in another process of this host is asked, through its registration service
 *    (transport_regsrv.c, started with the transport), to map the buffer's allocation (CUDA
 *    IPC handle and offset for cudaMalloc memory, the cuMem descriptor for ncclMemAlloc
 *    memory) and answers with the buffer's address there.
 * The answers form a table of nranks addresses in GPU memory (0: that peer could not map it);
 * a sender's kernel posts the entry of its receiver with every step instead of copying
 * (device/, conn.h's weft_fifo_ctrl.zc_post), and copies through the FIFO where it is 0, so
 * a peer that cannot map a buffer costs that pair the copy, nothing more. Deregistration
 * asks each peer to release its mapping; a peer's mappings of a destroyed communicator go
 * when the connection to its service closes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "transport/transport.h"
#include "transport/transport_internal.h"
#include "transport/transport_regsrv.h"
#include "util/check.h"
#include "util/param.h"

#define REGVIEW_IMPORT_MS 30000 /* the longest a peer's service may take to map a buffer */

struct weft_reg_views {
  int nranks;
  uint64_t* addr;  /* per rank: the buffer as mapped in that rank's process (0: not there) */
  uint64_t* ids;   /* per rank: the import at that rank's service (0: none) */
  char* const* dev; /* addr, in GPU memory */
};

char* const* transport_reg_views_table(const weft_reg_views* v) { return v->dev; }

int transport_reg_zero_copy(const struct ncclComm* comm) {
  return comm->mode == WEFT_MODE_DEVICE && param_int(WEFT_PARAM_ZERO_COPY) != 0 &&
         comm->nranks >= 2 && comm->nranks <= WEFT_WINDOW_MAX_RANKS && transport_all_p2p(comm);
}

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

/* ---- this rank's buffer, shared ---- */

/* Have peer q map d (fd for cuMem memory); 1 with *addr and *id, 0 with why set. */
static int share_with(struct ncclComm* comm, int q, const weft_regsrv_desc* d, int fd,
                      uint64_t* addr, uint64_t* id, char* why, size_t whylen) {
  struct weft_transport* t = comm->transport;
  /* Bounded well below the op timeout: a peer that cannot answer costs that pair the copy. */
  int timeout = (int)param_int(WEFT_PARAM_TIMEOUT_MS);
  if (timeout > REGVIEW_IMPORT_MS) timeout = REGVIEW_IMPORT_MS;
  if (!t->reg_conns) {
    snprintf(why, whylen, "this rank serves no peer in another process");
    return 0;
  }
  pthread_mutex_lock(&t->reg_lock);
  if (t->reg_conns[q] < 0) {
    char name[WEFT_REGSRV_NAME_MAX];
    size_t len;
    regsrv_name(name, &len, comm->peers[q].p2p.proc_id, comm->comm_hash, q);
    t->reg_conns[q] = regsrv_connect(name, len, timeout, why, whylen);
  }
  int ok = t->reg_conns[q] >= 0 &&
           regsrv_import(t->reg_conns[q], comm->comm_hash, d, fd, timeout, addr, id, why, whylen);
  pthread_mutex_unlock(&t->reg_lock);
  return ok;
}

static void views_unshare(struct ncclComm* comm, weft_reg_views* v) {
  struct weft_transport* t = comm->transport;
  for (int q = 0; q < v->nranks; q++) {
    if (!v->ids[q]) continue;
    char why[160] = "";
    pthread_mutex_lock(&t->reg_lock);
    /* Not waited for: the peer's cudaIpcCloseMemHandle may wait for its kernels, which may
     * be waiting for this rank's next operation. */
    int ok = t->reg_conns && t->reg_conns[q] >= 0 &&
             regsrv_release(t->reg_conns[q], comm->comm_hash, v->ids[q], 0, why, sizeof why);
    pthread_mutex_unlock(&t->reg_lock);
    if (!ok) /* it keeps the mapping until this communicator ends */
      INFO(NCCL_REG, "rank %d: peer %d did not release its mapping of a buffer: %s", comm->rank,
           q, why);
  }
}

static void views_free(struct ncclComm* comm, weft_reg_views* v) {
  if (!v) return;
  devmem_free(comm, (void*)v->dev, "a registration's table");
  free(v->addr);
  free(v->ids);
  free(v);
}

/* How peers in other processes reach buff: 1 with d (and *fd for cuMem memory), 0 with why. */
static int describe(void* buff, size_t size, weft_regsrv_desc* d, int* fd, char* why,
                    size_t whylen) {
  memset(d, 0, sizeof *d);
  d->size = size;
  _Static_assert(sizeof d->handle == WEFT_IPC_HANDLE_BYTES, "an IPC handle fits a request");
  int how = ipcmap_describe(buff, d->handle, &d->offset, fd, &d->alloc, why, whylen);
  d->how = how == IPCMAP_IPC ? WEFT_REGSRV_IPC : WEFT_REGSRV_FD;
  return how != 0;
}

static ncclResult_t build(struct ncclComm* comm, void* buff, size_t size, weft_reg_views** out) {
  int n = comm->nranks, r = comm->rank;
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, buff) != cudaSuccess || a.type != cudaMemoryTypeDevice) {
    cudaGetLastError();
    INFO(NCCL_REG, "rank %d: registered %p is not GPU memory: peers get it through the FIFOs", r,
         buff);
    return ncclSuccess;
  }
  weft_reg_views* v = calloc(1, sizeof *v);
  if (v) {
    v->nranks = n;
    v->addr = calloc((size_t)n, sizeof *v->addr);
    v->ids = calloc((size_t)n, sizeof *v->ids);
  }
  if (!v || !v->addr || !v->ids) {
    views_free(comm, v);
    WARN("rank %d: out of memory for a registration's table", r);
    return ncclSystemError;
  }
  weft_regsrv_desc d;
  int fd = -1, described = -1, shared = 0; /* described: -1 not yet asked */
  char why[160] = "";
  for (int q = 0; q < n; q++) {
    if (q == r) continue;
    if (p2p_same_process(comm, q)) {
      v->addr[q] = (uint64_t)(uintptr_t)buff; /* the P2P connections enabled peer access */
      shared++;
      continue;
    }
    if (described < 0) described = describe(buff, size, &d, &fd, why, sizeof why);
    if (described && share_with(comm, q, &d, fd, &v->addr[q], &v->ids[q], why, sizeof why)) {
      shared++;
      continue;
    }
    if (strstr(why, WEFT_REGSRV_STILL_MAPPED)) /* CUDA's limit, not a failure */
      INFO(NCCL_REG,
           "rank %d: registered %p (%zu bytes) goes through the FIFOs to peer %d this time: %s; "
           "the peer unmaps the earlier buffer once its kernels are done",
           r, buff, size, q, why);
    else
      INFO(NCCL_REG, "rank %d: registered %p (%zu bytes) is copied to peer %d: %s", r, buff,
           size, q, why);
  }
  if (fd >= 0) close(fd); /* every peer that wanted it has its own copy by now */
  v->addr[r] = (uint64_t)(uintptr_t)buff;
  if (shared == 0) {
    views_free(comm, v);
    return ncclSuccess;
  }
  void* dv = NULL;
  ncclResult_t res = devmem_upload(comm, v->addr, (size_t)n * sizeof(uint64_t), &dv,
                                   "a registration's table");
  v->dev = dv;
  if (res != ncclSuccess) {
    views_unshare(comm, v);
    views_free(comm, v);
    return res;
  }
  INFO(NCCL_REG, "rank %d: registered %p (%zu bytes) is read in place by %d of %d peers", r, buff,
       size, shared, n - 1);
  *out = v;
  return ncclSuccess;
}

ncclResult_t transport_reg_views(struct ncclComm* comm, void* buff, size_t size,
                                 weft_reg_views** out) {
  *out = NULL;
  if (!transport_reg_zero_copy(comm) || !comm->transport) return ncclSuccess;
  int saved;
  WEFT_CHECK(devmem_enter(comm, &saved));
  ncclResult_t res = build(comm, buff, size, out);
  devmem_leave(comm, saved);
  return res;
}

void transport_reg_views_free(struct ncclComm* comm, weft_reg_views* v, int release) {
  if (!v) return;
  int saved;
  if (devmem_enter(comm, &saved) != ncclSuccess) saved = -1;
  if (release) views_unshare(comm, v);
  views_free(comm, v);
  devmem_leave(comm, saved);
}

#else /* !WEFT_HAVE_CUDA: no device mode, nothing to share */

ncclResult_t transport_reg_views(struct ncclComm* comm, void* buff, size_t size,
                                 weft_reg_views** out) {
  (void)comm, (void)buff, (void)size;
  *out = NULL;
  return ncclSuccess;
}
void transport_reg_views_free(struct ncclComm* comm, weft_reg_views* v, int release) {
  (void)comm, (void)v, (void)release;
}

#endif
