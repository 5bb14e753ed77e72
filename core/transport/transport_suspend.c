/* ncclCommSuspend's part in the connections (device mode): the p2p FIFOs in cuMem memory
 * (transport_vmem.c) give their physical memory back and get new memory at the same addresses
 * on resume. lifecycle/comm_suspend.c drives it collectively: every rank agrees it can, waits
 * for its kernels, and meets the others at a barrier before transport_suspend; resume runs on
 * every rank together, since each importer needs its owner's new descriptor (copied with
 * pidfd_getfd, or handed over by SCM_RIGHTS where the importer's process cannot copy it:
 * vmem_fdx_*, as at setup). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "transport/transport_internal.h"
#include "util/check.h"

#define VMEM_TAG 0x57560000 /* resume: each owner's new descriptors, per peer */

/* One FIFO's new descriptor, as its owner sends it to the importer. */
typedef struct {
  int32_t kind, channel, proto, fd, pid;
  int32_t by_fdx;  /* 1: fetch it by SCM_RIGHTS from the listener named by pid and token */
  uint64_t token;
} vmem_offer;

#ifdef WEFT_HAVE_CUDA
#include <unistd.h>

static tconn* p2p_conn(struct weft_transport* t, size_t i) {
  tconn* c = t->table[i];
  return c && c->transport == WEFT_TRANSPORT_P2P && c->p2p_vmem ? c : NULL;
}

int transport_can_suspend(struct ncclComm* comm, char* why, size_t whylen) {
  struct weft_transport* t = comm->transport;
  if (!t || !t->device || !t->no_suspend[0]) return 1;
  snprintf(why, whylen, "%s", t->no_suspend);
  return 0;
}

void transport_gpu_mem(struct ncclComm* comm, uint64_t* suspendable, uint64_t* persist) {
  struct weft_transport* t = comm->transport;
  *suspendable = *persist = 0;
  if (!t || !t->device) return;
  for (size_t i = 0; i < t->ntable; i++) {
    tconn* c = p2p_conn(t, i);
    if (c && vmem_is_owner(c->p2p_vmem)) *suspendable += vmem_bytes(c->p2p_vmem);
  }
  *persist = t->persist_bytes;
}

void transport_gpu_persist(struct ncclComm* comm, const void* dev, int sign) {
  devmem_persist(comm, dev, sign);
}

ncclResult_t transport_suspend(struct ncclComm* comm, uint64_t* released) {
  struct weft_transport* t = comm->transport;
  *released = 0;
  if (!t || !t->device) return ncclSuccess;
  int saved;
  WEFT_CHECK(devmem_enter(comm, &saved));
  ncclResult_t res = ncclSuccess;
  /* Peers' memory first (unmapped, nothing saved), then this rank's. */
  for (int own = 0; own < 2 && res == ncclSuccess; own++)
    for (size_t i = 0; i < t->ntable && res == ncclSuccess; i++) {
      tconn* c = p2p_conn(t, i);
      if (!c || vmem_is_owner(c->p2p_vmem) != own) continue;
      if (own && vmem_mapped(c->p2p_vmem)) *released += vmem_bytes(c->p2p_vmem);
      res = vmem_suspend(comm, c, c->p2p_vmem, own ? sizeof(weft_fifo_ctrl) : 0);
    }
  devmem_leave(comm, saved);
  return res;
}

/* Whether this pair exchanges descriptors on resume (the same answer on both ends). */
static int fd_peer(struct ncclComm* comm, int q) {
  return q != comm->rank && p2p_usable(comm, q) && !p2p_same_process(comm, q);
}

/* This rank's FIFOs that q maps through a descriptor (table order, the same as q's), into out
 * when not NULL; how many. */
static int collect(struct weft_transport* t, int q, int send, tconn** out) {
  int n = 0;
  for (size_t i = 0; i < t->ntable; i++) {
    tconn* c = p2p_conn(t, i);
    if (!c || c->key.peer != q || c->key.send != send || c->p2p_how != P2P_VIA_FD) continue;
    if (out) out[n] = c;
    n++;
  }
  return n;
}

static ncclResult_t offer_to(struct ncclComm* comm, int q) {
  struct weft_transport* t = comm->transport;
  int32_t n = collect(t, q, 0, NULL);
  WEFT_CHECK(bootstrap_send(comm->bootstrap, q, VMEM_TAG, &n, sizeof n));
  if (n == 0) return ncclSuccess;
  vmem_offer* o = calloc((size_t)n, sizeof *o);
  tconn** cs = calloc((size_t)n, sizeof *cs);
  if (!o || !cs) {
    WARN("rank %d: out of memory for %d FIFO descriptors", comm->rank, n);
    free(o);
    free(cs);
    return ncclSystemError;
  }
  collect(t, q, 0, cs);
  ncclResult_t res = ncclSuccess;
  for (int k = 0; k < n && res == ncclSuccess; k++) {
    o[k].kind = cs[k]->key.kind;
    o[k].channel = cs[k]->key.channel;
    o[k].proto = cs[k]->key.proto;
    o[k].fd = vmem_fd(cs[k]->p2p_vmem);
    o[k].pid = (int32_t)getpid();
    o[k].by_fdx = !comm->peers[q].p2p.take_fd;
    if (o[k].by_fdx) res = vmem_fdx_offer(comm, cs[k], &o[k].token);
  }
  if (res == ncclSuccess)
    res = bootstrap_send(comm->bootstrap, q, VMEM_TAG + 1, o, (size_t)n * sizeof *o);
  free(o);
  free(cs);
  return res;
}

static ncclResult_t take_from(struct ncclComm* comm, int q) {
  struct weft_transport* t = comm->transport;
  int32_t n = 0;
  WEFT_CHECK(bootstrap_recv(comm->bootstrap, q, VMEM_TAG, &n, sizeof n));
  int mine = collect(t, q, 1, NULL);
  if (n != mine) {
    WARN("rank %d: on resume rank %d offered %d p2p FIFOs, this rank maps %d of its", comm->rank,
         q, n, mine);
    return ncclInternalError;
  }
  if (n == 0) return ncclSuccess;
  vmem_offer* o = calloc((size_t)n, sizeof *o);
  if (!o) {
    WARN("rank %d: out of memory for %d FIFO descriptors", comm->rank, n);
    return ncclSystemError;
  }
  ncclResult_t res = bootstrap_recv(comm->bootstrap, q, VMEM_TAG + 1, o, (size_t)n * sizeof *o);
  int k = 0;
  for (size_t i = 0; i < t->ntable && res == ncclSuccess; i++) {
    tconn* c = p2p_conn(t, i);
    if (!c || c->key.peer != q || !c->key.send || c->p2p_how != P2P_VIA_FD) continue;
    if (o[k].kind != c->key.kind || o[k].channel != c->key.channel ||
        o[k].proto != c->key.proto) {
      WARN("rank %d: on resume rank %d offered the FIFO of kind %d channel %d proto %d where "
           "this rank expected kind %d channel %d proto %d",
           comm->rank, q, o[k].kind, o[k].channel, o[k].proto, c->key.kind, c->key.channel,
           c->key.proto);
      res = ncclInternalError;
      break;
    }
    if (o[k].by_fdx) /* mapped by vmem_fdx_finish once every rank has sent its offers */
      res = vmem_fdx_fetch(comm, c, o[k].pid, o[k].token);
    else
      res = vmem_resume_import(comm, c, c->p2p_vmem, o[k].pid, o[k].fd);
    k++;
  }
  free(o);
  return res;
}

ncclResult_t transport_resume(struct ncclComm* comm) {
  struct weft_transport* t = comm->transport;
  if (!t || !t->device) return ncclSuccess;
  int saved;
  WEFT_CHECK(devmem_enter(comm, &saved));
  ncclResult_t res = ncclSuccess;
  for (size_t i = 0; i < t->ntable && res == ncclSuccess; i++) {
    tconn* c = p2p_conn(t, i);
    if (c && vmem_is_owner(c->p2p_vmem)) res = vmem_resume_owner(comm, c, c->p2p_vmem);
  }
  /* Every offer before any wait: a send does not wait for its receiver. */
  for (int q = 0; q < comm->nranks && res == ncclSuccess; q++)
    if (fd_peer(comm, q)) res = offer_to(comm, q);
  for (int q = 0; q < comm->nranks && res == ncclSuccess; q++)
    if (fd_peer(comm, q)) res = take_from(comm, q);
  if (res == ncclSuccess) {
    res = vmem_fdx_finish(comm, t->table, t->ntable);
  } else { /* close what the failed step opened: the peers fail at once, not at the timeout */
    for (size_t i = 0; i < t->ntable; i++)
      if (p2p_conn(t, i)) vmem_fdx_drop(t->table[i]);
  }
  devmem_leave(comm, saved);
  return res;
}

#else /* !WEFT_HAVE_CUDA: no device mode, nothing to give back. */

int transport_can_suspend(struct ncclComm* comm, char* why, size_t whylen) {
  (void)comm;
  (void)why;
  (void)whylen;
  return 1;
}
void transport_gpu_mem(struct ncclComm* comm, uint64_t* suspendable, uint64_t* persist) {
  (void)comm;
  *suspendable = *persist = 0;
}
void transport_gpu_persist(struct ncclComm* comm, const void* dev, int sign) {
  (void)comm;
  (void)dev;
  (void)sign;
}
ncclResult_t transport_suspend(struct ncclComm* comm, uint64_t* released) {
  (void)comm;
  *released = 0;
  return ncclSuccess;
}
ncclResult_t transport_resume(struct ncclComm* comm) {
  (void)comm;
  return ncclSuccess;
}

#endif
