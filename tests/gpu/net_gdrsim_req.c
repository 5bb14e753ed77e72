/* GdrSim's data path (see net_gdrsim.c for what the plugin emulates): isend, irecv, iflush, test
 * and each recv comm's list of landed-but-not-flushed receives.
 *
 * Contract with weft, as for a GPUDirect RDMA NIC:
 *  - isend from CUDA memory: the bytes must be in GPU memory when isend is called (they are
 *    copied to the shadow then);
 *  - a receive into CUDA memory that test() reports done is NOT in GPU memory yet: weft must
 *    call iflush on that recv comm and test the flush request until done before the GPU reads
 *    the data. A flush covers every receive of the comm that landed before it (a NIC flush
 *    orders all earlier writes), and the copy to the GPU happens when the flush request is
 *    tested, so weft must also wait for the flush, not only post it;
 *  - weft's mistakes fail loudly: an irecv over a landed buffer, more than GS_MAX_LANDED landed
 *    receives, a request tested after it completed, a buffer outside its registration or a
 *    registration of another comm are ncclInternalError with a WARN.
 * Injected failures (net_gdrsim_fault.c): the chosen isend returns ncclSystemError before it
 * touches anything; the chosen test of a receive returns ncclSystemError and ends the request
 * (the socket net's request stays posted until the comm is closed, as after a real failure).
 * Each comm counts the socket-net requests it has posted and not seen end (gs_comm.inflight):
 * while any remain, a deregistered shadow is kept until the comm is closed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net_gdrsim.h"
#include "net_socket.h"

static gs_req* req_new(int kind, gs_comm* c, int n) {
  gs_req* r = calloc(1, sizeof *r);
  if (r == NULL) {
    GS_WARN("NET/GdrSim: out of memory for a request");
    return NULL;
  }
  r->magic = GS_REQ_MAGIC;
  r->kind = kind;
  r->comm = c;
  r->n = n;
  return r;
}

static void req_free(gs_req* r) {
  r->magic = 0;
  free(r);
}

/* The registration mhandle of comm c, when [data, data+size) lies inside it; else NULL and a
 * WARN naming fn. */
static gs_mr* mr_for(gs_comm* c, void* mhandle, const void* data, size_t size, const char* fn) {
  gs_mr* mr = gs_mr_check(mhandle, fn);
  if (mr == NULL) return NULL;
  if (mr->comm != c) {
    GS_WARN("NET/GdrSim: %s on comm %p with a registration of comm %p", fn, (void*)c,
            (void*)mr->comm);
    return NULL;
  }
  uintptr_t p = (uintptr_t)data, b = (uintptr_t)mr->base;
  if (p < b || p - b > mr->size || size > mr->size - (p - b)) {
    GS_WARN("NET/GdrSim: %s of %p (%zu bytes): outside its registration %p (%zu bytes)", fn,
            data, size, (void*)mr->base, mr->size);
    return NULL;
  }
  return mr;
}

/* Where [data, data+size) of a CUDA registration lives in its shadow. */
static char* shadow_of(const gs_mr* mr, const void* data) {
  return mr->shadow + ((uintptr_t)data - (uintptr_t)mr->base);
}

ncclResult_t gs_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                      void* phandle, void** request) {
  gs_comm* c = gs_comm_check(send_comm, GS_SEND, "isend");
  if (c == NULL) return ncclInternalError;
  gs_mr* mr = mr_for(c, mhandle, data, size, "isend");
  if (mr == NULL || request == NULL) return ncclInternalError;
  if (gs_fault_hit(GS_FAULT_SEND)) return ncclSystemError;
  gs_req* r = req_new(GS_REQ_SEND, c, 1);
  if (r == NULL) return ncclSystemError;
  void* src = data;
  if (mr->type == NCCL_PTR_CUDA) {
    /* The NIC reads GPU memory: the bytes are taken now. The socket net may put them on the
     * wire inside isend, so the copy comes first (and is redone if the socket is full). */
    src = shadow_of(mr, data);
    ncclResult_t res = gs_copy(mr, src, data, size, cudaMemcpyDeviceToHost, "isend");
    if (res != ncclSuccess) {
      req_free(r);
      return res;
    }
  }
  void* inner = NULL;
  ncclResult_t res = GS_INNER->isend(c->inner, src, size, tag, mr->inner, phandle, &inner);
  if (res != ncclSuccess || inner == NULL) { /* failed, or full: weft retries later */
    req_free(r);
    if (res == ncclSuccess) *request = NULL;
    return res;
  }
  if (mr->type == NCCL_PTR_CUDA) GS_COUNT(cuda_sends, 1);
  __atomic_add_fetch(&c->inflight, 1, __ATOMIC_RELAXED);
  r->inner = inner;
  *request = r;
  return ncclSuccess;
}

/* A landed entry of c that overlaps [p, p+size), or NULL. */
static const gs_landed* landed_overlap(const gs_comm* c, const void* p, size_t size) {
  uintptr_t a = (uintptr_t)p;
  for (int i = 0; i < c->nlanded && size > 0; i++) {
    uintptr_t b = (uintptr_t)c->landed[i].dst;
    if (a < b + c->landed[i].size && b < a + size) return &c->landed[i];
  }
  return NULL;
}

/* Buffer i of receive r: checks it and sets where the socket net receives it (*idata, *imh). A
 * CUDA buffer is received into its shadow; the GPU sees it at the flush. */
static ncclResult_t recv_part(gs_comm* c, gs_req* r, int i, void* data, size_t size,
                              void* mhandle, void** idata, void** imh) {
  gs_mr* mr = mr_for(c, mhandle, data, size, "irecv");
  if (mr == NULL) return ncclInternalError;
  *idata = data;
  *imh = mr->inner;
  if (mr->type != NCCL_PTR_CUDA) return ncclSuccess;
  const gs_landed* e = landed_overlap(c, data, size);
  if (e != NULL) {
    GS_WARN("NET/GdrSim: irecv into %p (%zu bytes): %zu bytes received at %p earlier were never "
            "flushed (weft must iflush after each receive into CUDA memory)", data, size,
            e->size, (void*)e->dst);
    return ncclInternalError;
  }
  r->part[i].dst = data;
  r->part[i].src = shadow_of(mr, data);
  r->part[i].mr = mr;
  *idata = r->part[i].src;
  return ncclSuccess;
}

ncclResult_t gs_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                      void** mhandles, void** phandles, void** request) {
  gs_comm* c = gs_comm_check(recv_comm, GS_RECV, "irecv");
  if (c == NULL) return ncclInternalError;
  if (n < 1 || n > GS_MAX_RECVS || request == NULL || data == NULL || sizes == NULL ||
      mhandles == NULL) {
    GS_WARN("NET/GdrSim: irecv: n = %d (1 to %d) or a NULL argument", n, GS_MAX_RECVS);
    return ncclInternalError;
  }
  gs_req* r = req_new(GS_REQ_RECV, c, n);
  if (r == NULL) return ncclSystemError;
  void* idata[GS_MAX_RECVS];
  void* imh[GS_MAX_RECVS];
  for (int i = 0; i < n; i++)
    if (recv_part(c, r, i, data[i], sizes[i], mhandles[i], &idata[i], &imh[i]) != ncclSuccess) {
      req_free(r);
      return ncclInternalError;
    }
  void* inner = *request; /* hints the core may pass in (NCCL_NET_OPTIONAL_RECV_COMPLETION) */
  ncclResult_t res = GS_INNER->irecv(c->inner, n, idata, sizes, tags, imh, phandles, &inner);
  if (res != ncclSuccess || inner == NULL) { /* failed, or full: weft retries later */
    req_free(r);
    if (res == ncclSuccess) *request = NULL;
    return res;
  }
  __atomic_add_fetch(&c->inflight, 1, __ATOMIC_RELAXED);
  r->inner = inner;
  *request = r;
  return ncclSuccess;
}

/* A receive completed with got[i] bytes per buffer: its CUDA parts land (stay in the shadow). */
static ncclResult_t land(gs_req* r, const int* got) {
  gs_comm* c = r->comm;
  for (int i = 0; i < r->n; i++) {
    if (r->part[i].dst == NULL) continue;
    GS_COUNT(cuda_recvs, 1);
    if (got[i] <= 0) continue; /* nothing arrived: nothing to flush */
    if (c->nlanded == GS_MAX_LANDED) {
      GS_WARN("NET/GdrSim: recv comm %p: %d receives into CUDA memory completed without an "
              "iflush (weft must iflush after each one)", (void*)c, GS_MAX_LANDED);
      return ncclInternalError;
    }
    gs_landed* e = &c->landed[c->nlanded++];
    e->dst = r->part[i].dst;
    e->src = r->part[i].src;
    e->size = (size_t)got[i];
    e->mr = r->part[i].mr;
    e->flush = 0;
  }
  return ncclSuccess;
}

/* Copies the entries flush request seq claimed to the GPU and forgets them. */
static ncclResult_t flush_copy(gs_comm* c, uint64_t seq) {
  ncclResult_t res = ncclSuccess;
  int kept = 0;
  for (int i = 0; i < c->nlanded; i++) {
    gs_landed* e = &c->landed[i];
    if (e->flush != seq) {
      c->landed[kept++] = *e;
      continue;
    }
    ncclResult_t r = gs_copy(e->mr, e->dst, e->src, e->size, cudaMemcpyHostToDevice, "flush");
    if (res == ncclSuccess) res = r;
  }
  c->nlanded = kept;
  return res;
}

ncclResult_t gs_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                       void** request) {
  gs_comm* c = gs_comm_check(recv_comm, GS_RECV, "iflush");
  if (c == NULL) return ncclInternalError;
  if (n < 1 || n > GS_MAX_RECVS || request == NULL || data == NULL || sizes == NULL ||
      mhandles == NULL) {
    GS_WARN("NET/GdrSim: iflush: n = %d (1 to %d) or a NULL argument", n, GS_MAX_RECVS);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++)
    if (sizes[i] < 0 || mr_for(c, mhandles[i], data[i], (size_t)sizes[i], "iflush") == NULL)
      return ncclInternalError;
  gs_req* r = req_new(GS_REQ_FLUSH, c, n);
  if (r == NULL) return ncclSystemError;
  /* Claim everything that landed so far; the copy waits for test(). */
  r->flush = ++c->flush_seq;
  for (int i = 0; i < c->nlanded; i++)
    if (c->landed[i].flush == 0) c->landed[i].flush = r->flush;
  GS_COUNT(flushes, 1);
  *request = r;
  return ncclSuccess;
}

ncclResult_t gs_test(void* request, int* done, int* sizes) {
  gs_req* r = request;
  if (r == NULL || done == NULL || r->magic != GS_REQ_MAGIC) {
    GS_WARN("NET/GdrSim: test: %p is not a request in flight (NULL, or tested after it "
            "completed)", request);
    return ncclInternalError;
  }
  *done = 0;
  ncclResult_t res;
  if (r->kind == GS_REQ_FLUSH) {
    res = flush_copy(r->comm, r->flush);
    *done = 1;
    if (sizes)
      for (int i = 0; i < r->n; i++) sizes[i] = 0;
    req_free(r);
    return res;
  }
  if (r->kind == GS_REQ_SEND) {
    res = GS_INNER->test(r->inner, done, sizes);
    if (res != ncclSuccess || *done) { /* the socket net freed its request */
      __atomic_sub_fetch(&r->comm->inflight, 1, __ATOMIC_RELAXED);
      req_free(r);
    }
    return res;
  }
  if (gs_fault_hit(GS_FAULT_RECV)) {
    req_free(r); /* the socket net's request stays posted: c->inflight keeps counting it */
    return ncclSystemError;
  }
  int got[GS_MAX_RECVS] = {0};
  res = GS_INNER->test(r->inner, done, got);
  if (res == ncclSuccess && !*done) return ncclSuccess;
  /* done or failed: the socket net freed its request */
  __atomic_sub_fetch(&r->comm->inflight, 1, __ATOMIC_RELAXED);
  if (res == ncclSuccess) res = land(r, got);
  if (res == ncclSuccess && sizes) memcpy(sizes, got, (size_t)r->n * sizeof *sizes);
  req_free(r);
  return res;
}

int gs_landed_drop(gs_comm* c, const gs_mr* mr) {
  int kept = 0, lost = 0;
  for (int i = 0; i < c->nlanded; i++) {
    if (mr == NULL || c->landed[i].mr == mr)
      lost++;
    else
      c->landed[kept++] = c->landed[i];
  }
  c->nlanded = kept;
  if (lost) GS_COUNT(unflushed, lost);
  return lost;
}
