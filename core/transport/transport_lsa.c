/* The LSA flat mapping of a symmetric window (device mode), the address layout NCCL's device
 * API computes with: every LSA peer's buffer at  flat + peer * stride + offset,  where flat is
 * one virtual-address reservation per window and stride a multiple of 4 GiB. Each rank maps,
 * in its own process, the physical memory of every LSA peer's allocation (cuMemMap +
 * cuMemSetAccess) at that peer's slot; its own allocation too, so a kernel reaches itself the
 * same way. Built collectively at registration:
 *
 *  1. each rank offers its buffer's cuMem allocation: its address (peers of this process take
 *     a handle from it), a file descriptor of it (peers of other processes take a copy with
 *     pidfd_getfd, as transport_window.c does), its bytes and the buffer's offset in it. A
 *     cudaMalloc buffer has no cuMem handle: the window is not LSA mapped (NCCL requires cuMem
 *     memory for symmetric windows; weft keeps the window for collectives and says why);
 *  2. the offers are gathered; the stride is the largest allocation rounded up to 4 GiB; every
 *     rank reserves nranks strides and maps every offer (the buffers' offsets must agree, since
 *     one offset serves all peers);
 *  3. a second gather says whether every rank mapped every peer; only then is the window LSA
 *     mapped on all of them, otherwise each unmaps and NCCL_DEBUG_SUBSYS=REG says why.
 * The LSA team is the whole communicator when every rank runs on this host and reaches every
 * other peer to peer (ranks sharing a GPU included), else the rank alone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "transport/transport.h"
#include "transport/transport_fdx.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/param.h"

#define LSA_STRIDE_UNIT (1ull << 32)

/* Decided from every rank's published facts, pair by pair, so every rank decides alike (the
 * flat mapping is collective only for a several-rank team). */
void transport_lsa_team(const struct ncclComm* comm, int* size, int* rank) {
  *size = 1;
  *rank = 0;
  if (comm->mode != WEFT_MODE_DEVICE || comm->nranks < 2) return;
  for (int a = 0; a < comm->nranks; a++)
    for (int b = a + 1; b < comm->nranks; b++)
      if (!p2p_pair_usable(comm, a, b)) return; /* same host, device mode, peer to peer */
  *size = comm->nranks;
  *rank = comm->rank;
}

struct weft_window_lsa {
  int n;
  char* flat;         /* the reservation: rank q's allocation at flat + q * stride */
  uint64_t stride;    /* bytes, a multiple of 4 GiB */
  uint64_t offset;    /* the buffer's offset in every rank's allocation */
  uint64_t* mapped;   /* per rank: the bytes mapped at its slot (0: none) */
};

char* transport_window_lsa_base(const weft_window_lsa* l) { return l->flat + l->offset; }
uint64_t transport_window_lsa_stride(const weft_window_lsa* l) { return l->stride; }

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>

#include "topo/cuda_entry.h"

typedef struct {
  int32_t ok;        /* 1: a cuMem allocation is offered */
  int32_t pid, fd;   /* the owner's descriptor of it (other processes take a copy) */
  uint64_t proc_id;  /* p2p_info's: the same process */
  uint64_t ptr;      /* the buffer's address in the owner's process */
  uint64_t alloc;    /* the allocation's bytes */
  uint64_t offset;   /* the buffer's offset in it */
  char why[176];
} lsa_offer;

/* A handle on rank q's allocation as offered (handed: its descriptor, already here by
 * SCM_RIGHTS, or -1); 0 with why set when none can be had. */
static int take_handle(struct ncclComm* comm, int q, const lsa_offer* o, int handed,
                       CUmemGenericAllocationHandle* h, char* why, size_t whylen) {
  const weft_cuda_drv* d = cuda_drv();
  if (q == comm->rank || o->proc_id == comm->peers[comm->rank].p2p.proc_id) {
    CUresult r = d->retain_handle(h, (void*)(uintptr_t)o->ptr);
    if (r != CUDA_SUCCESS) snprintf(why, whylen, "cuMemRetainAllocationHandle of rank %d: %s", q,
                                    cuda_drv_error(r));
    return r == CUDA_SUCCESS;
  }
  int fd = handed >= 0 ? dup(handed) : ipcmap_take_fd(o->pid, o->fd, why, whylen);
  if (fd < 0) {
    if (handed >= 0) snprintf(why, whylen, "dup of rank %d's descriptor: %s", q, strerror(errno));
    return 0;
  }
  CUresult r = d->import_handle(h, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(fd);
  if (r != CUDA_SUCCESS) snprintf(why, whylen, "importing rank %d's allocation: %s", q,
                                  cuda_drv_error(r));
  return r == CUDA_SUCCESS;
}

static void offer(struct ncclComm* comm, void* buff, lsa_offer* me) {
  memset(me, 0, sizeof *me);
  me->fd = -1;
  me->pid = (int32_t)getpid();
  me->proc_id = comm->peers[comm->rank].p2p.proc_id;
  me->ptr = (uint64_t)(uintptr_t)buff;
  const weft_cuda_drv* d = cuda_drv();
  if (!d->retain_handle || !d->reserve || !d->map || !d->set_access || !d->unmap ||
      !d->address_free || !d->release || !d->import_handle) {
    snprintf(me->why, sizeof me->why, "the CUDA driver lacks the cuMem calls");
    return;
  }
  int fd = -1;
  uint64_t off = 0, alloc = 0;
  char why[120];
  if (!ipcmap_export_fd(buff, &fd, &off, &alloc, why, sizeof why)) {
    snprintf(me->why, sizeof me->why, "its memory cannot be mapped flat (ncclMemAlloc memory "
             "can): %.100s", why);
    return;
  }
  me->ok = 1;
  me->fd = fd;
  me->alloc = alloc;
  me->offset = off;
}

/* Where pidfd_getfd is refused (a container without CAP_SYS_PTRACE, Yama's ptrace_scope):
 * every owner hands its descriptor by SCM_RIGHTS to each rank of another process that cannot
 * take descriptors (take_fd 0 in what it published at init, the fact p2p FIFOs use too), and
 * such a rank fetches from each owner of another process. Only when every offer
 * is good and some rank asked (the same answer on every rank, from the same offers): then the
 * owners that serve open their sockets and a second allgather publishes the names. handed[q]:
 * rank q's descriptor here, or -1. *ok 0 with why set when this rank could not take part. */
static ncclResult_t hand_over(struct ncclComm* comm, const lsa_offer* all, int* handed, int* ok,
                              char* why, size_t whylen) {
  int n = comm->nranks, me = comm->rank, nserve = 0, nfetch = 0, asked = 0;
  for (int q = 0; q < n; q++) {
    if (!all[q].ok) return ncclSuccess; /* map_all says which */
    asked |= !comm->peers[q].p2p.take_fd;
  }
  if (!asked) return ncclSuccess;
  uint64_t* tokens = calloc((size_t)n, sizeof *tokens);
  int32_t* pids = calloc((size_t)n, sizeof *pids);
  uint64_t* names = calloc((size_t)n, sizeof *names);
  int* from = calloc((size_t)n, sizeof *from);
  int* got = calloc((size_t)n, sizeof *got);
  if (!tokens || !pids || !names || !from || !got) {
    snprintf(why, whylen, "out of memory for the descriptor hand-over");
    *ok = 0;
  }
  for (int q = 0; q < n; q++)
    if (q != me && all[q].proc_id != all[me].proc_id && !comm->peers[q].p2p.take_fd) nserve++;
  weft_fdx* x = NULL;
  if (*ok && nserve && fdx_open(nserve, &x, &tokens[me]) != ncclSuccess) {
    snprintf(why, whylen, "no socket to hand this rank's cuMem descriptor over");
    *ok = 0;
  }
  ncclResult_t res = ncclSuccess;
  if (tokens) res = bootstrap_allgather(comm->bootstrap, tokens, sizeof *tokens);
  for (int q = 0; *ok && res == ncclSuccess && q < n && !comm->peers[me].p2p.take_fd; q++)
    if (q != me && all[q].proc_id != all[me].proc_id) {
      from[nfetch] = q;
      pids[nfetch] = all[q].pid;
      names[nfetch++] = tokens[q];
    }
  /* A rank that cannot fetch still serves what it opened: its peers then fail on their own
   * step, not at the timeout. */
  if (res == ncclSuccess && (x || nfetch)) {
    char r[160];
    if (fdx_exchange(x, all[me].fd, x ? nserve : 0, nfetch, pids, names, got,
                     param_int(WEFT_PARAM_BOOTSTRAP_TIMEOUT_MS), r, sizeof r) != ncclSuccess &&
        *ok) {
      snprintf(why, whylen, "handing cuMem descriptors over (SCM_RIGHTS): %s", r);
      *ok = 0;
    }
    for (int k = 0; *ok && k < nfetch; k++) handed[from[k]] = got[k];
    if (*ok && nfetch)
      INFO(NCCL_REG, "rank %d: %d peer descriptor(s) came by SCM_RIGHTS (pidfd_getfd is refused "
           "here)", me, nfetch);
  }
  fdx_close(x);
  free(tokens);
  free(pids);
  free(names);
  free(from);
  free(got);
  return res;
}

static void lsa_release(weft_window_lsa* l) {
  if (!l) return;
  const weft_cuda_drv* d = cuda_drv();
  if (l->flat) {
    for (int q = 0; q < l->n; q++)
      if (l->mapped && l->mapped[q]) d->unmap((CUdeviceptr)(uintptr_t)(l->flat + q * l->stride),
                                              l->mapped[q]);
    d->address_free((CUdeviceptr)(uintptr_t)l->flat, (size_t)l->n * l->stride);
  }
  free(l->mapped);
  free(l);
}

/* Reserve and map every offer; 0 with why set at the first that fails. */
static int map_all(struct ncclComm* comm, weft_window_lsa* l, const lsa_offer* all,
                   const int* handed, char* why, size_t whylen) {
  const weft_cuda_drv* d = cuda_drv();
  uint64_t biggest = 0;
  for (int q = 0; q < l->n; q++) {
    if (!all[q].ok) {
      snprintf(why, whylen, "rank %d: %s", q, all[q].why);
      return 0;
    }
    if (all[q].offset != all[0].offset) {
      snprintf(why, whylen, "the buffer sits at offset %llu of rank %d's allocation but at %llu "
               "of rank 0's", (unsigned long long)all[q].offset, q,
               (unsigned long long)all[0].offset);
      return 0;
    }
    if (all[q].alloc > biggest) biggest = all[q].alloc;
  }
  l->offset = all[0].offset;
  l->stride = (biggest + LSA_STRIDE_UNIT - 1) / LSA_STRIDE_UNIT * LSA_STRIDE_UNIT;
  CUdeviceptr va = 0;
  CUresult r = d->reserve(&va, (size_t)l->n * l->stride, LSA_STRIDE_UNIT, 0, 0);
  if (r != CUDA_SUCCESS) {
    snprintf(why, whylen, "reserving %d x %llu bytes: %s", l->n,
             (unsigned long long)l->stride, cuda_drv_error(r));
    return 0;
  }
  l->flat = (char*)(uintptr_t)va;
  CUmemAccessDesc a;
  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = comm->cuda_dev;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int q = 0; q < l->n; q++) {
    CUmemGenericAllocationHandle h;
    if (!take_handle(comm, q, &all[q], handed[q], &h, why, whylen)) return 0;
    CUdeviceptr slot = va + (CUdeviceptr)q * l->stride;
    r = d->map(slot, all[q].alloc, 0, h, 0);
    d->release(h); /* the mapping holds the allocation from here on */
    if (r != CUDA_SUCCESS) {
      snprintf(why, whylen, "mapping rank %d's allocation: %s", q, cuda_drv_error(r));
      return 0;
    }
    l->mapped[q] = all[q].alloc;
    r = d->set_access(slot, all[q].alloc, &a, 1);
    if (r != CUDA_SUCCESS) {
      snprintf(why, whylen, "access to rank %d's allocation from device %d: %s", q,
               comm->cuda_dev, cuda_drv_error(r));
      return 0;
    }
  }
  return 1;
}

static ncclResult_t build(struct ncclComm* comm, void* buff, weft_window_lsa** out) {
  int n = comm->nranks, me = comm->rank;
  lsa_offer* all = calloc((size_t)n, sizeof *all);
  int32_t* oks = calloc((size_t)n, sizeof *oks);
  weft_window_lsa* l = calloc(1, sizeof *l);
  if (l) {
    l->n = n;
    l->mapped = calloc((size_t)n, sizeof *l->mapped);
  }
  if (!all || !oks || !l || !l->mapped) {
    /* The peers wait in the gathers: this rank cannot take part, so the exchange fails. */
    WARN("rank %d: out of memory for a window's LSA mapping", me);
    free(all);
    free(oks);
    lsa_release(l);
    return ncclSystemError;
  }
  char why[224] = "";
  offer(comm, buff, &all[me]);
  int export_fd = all[me].fd;
  ncclResult_t res = bootstrap_allgather(comm->bootstrap, all, sizeof *all);
  int ok = 1;
  int* handed = malloc((size_t)n * sizeof *handed);
  if (!handed) {
    snprintf(why, sizeof why, "out of memory");
    ok = 0;
  }
  for (int q = 0; handed && q < n; q++) handed[q] = -1;
  if (res == ncclSuccess) res = hand_over(comm, all, handed, &ok, why, sizeof why);
  ok = ok && res == ncclSuccess && map_all(comm, l, all, handed, why, sizeof why);
  for (int q = 0; handed && q < n; q++)
    if (handed[q] >= 0) close(handed[q]);
  free(handed);
  if (res == ncclSuccess) {
    oks[me] = ok;
    res = bootstrap_allgather(comm->bootstrap, oks, sizeof *oks);
    for (int q = 0; q < n && res == ncclSuccess && ok; q++)
      if (!oks[q]) {
        ok = 0;
        snprintf(why, sizeof why, "rank %d could not map every peer's allocation", q);
      }
  }
  if (export_fd >= 0) close(export_fd); /* every peer has taken its copy by now */
  if (res == ncclSuccess && ok) {
    INFO(NCCL_REG, "rank %d: window %p is LSA mapped: %d ranks at %p, stride %llu GiB", me, buff,
         n, (void*)l->flat, (unsigned long long)(l->stride >> 30));
    *out = l;
  } else {
    if (res == ncclSuccess)
      INFO(NCCL_REG, "rank %d: window %p is not LSA mapped: %s", me, buff, why);
    lsa_release(l);
  }
  free(all);
  free(oks);
  return res;
}

ncclResult_t transport_window_lsa_map(struct ncclComm* comm, void* buff, weft_window_lsa** out) {
  *out = NULL;
  int size, rank;
  transport_lsa_team(comm, &size, &rank);
  if (size < 2) return ncclSuccess; /* a team of one reaches its own buffer directly */
  int saved;
  WEFT_CHECK(devmem_enter(comm, &saved));
  ncclResult_t res = build(comm, buff, out);
  devmem_leave(comm, saved);
  return res;
}

void transport_window_lsa_unmap(struct ncclComm* comm, weft_window_lsa* l) {
  if (!l) return;
  int saved;
  if (devmem_enter(comm, &saved) != ncclSuccess) return;
  lsa_release(l);
  devmem_leave(comm, saved);
}

#else /* !WEFT_HAVE_CUDA: host mode only, where the LSA team is each rank alone. */

ncclResult_t transport_window_lsa_map(struct ncclComm* comm, void* buff, weft_window_lsa** out) {
  (void)comm, (void)buff;
  *out = NULL;
  return ncclSuccess;
}

void transport_window_lsa_unmap(struct ncclComm* comm, weft_window_lsa* l) {
  (void)comm, (void)l;
}

#endif
