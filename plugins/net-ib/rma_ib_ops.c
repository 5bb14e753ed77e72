/* The verbs RMA operations (rma_ib.h): contexts, collective registration over the side
 * channel, put (RDMA write), put with signal (then a SEND of the signal record), get (RDMA
 * read), flush (an RDMA read behind the writes), test, and the target's side of a signal. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rma_common.h"
#include "rma_ib.h"
#include "util/clock.h"

#define RI_RCTX_MAGIC 0x7269726374780001ull
#define RI_WAIT_MS 30000
#define RI_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

ncclResult_t rma_ib_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx) {
  ri_group* g = ri_group_check(coll, "createContext");
  if (g == NULL) return ncclInvalidArgument;
  return weft_rma_ctx_new(g, config, RI_RCTX_MAGIC, net_ib_logger(), "RMA/IB", ctx);
}

/* The group of a context (one QP per rank carries every context: every signal is strong). */
static ri_group* ctx_group(void* p, int context, const char* fn) {
  weft_rma_ctx* x = weft_rma_ctx_check(p, context, RI_RCTX_MAGIC, net_ib_logger(), "RMA/IB", fn);
  return x ? x->coll : NULL;
}

ncclResult_t rma_ib_destroy_context(void* ctx) {
  return weft_rma_ctx_free(ctx, RI_RCTX_MAGIC, net_ib_logger(), "RMA/IB");
}

/* ---- registration ---- */

/* Lock held. */
static ri_mr* mr_live(ri_group* g, void* p, const char* fn, const char* arg) {
  ri_mr* m = p;
  if (m != NULL && m->id < g->nmrs && g->mrs[m->id] == m) return m;
  IB_WARN("RMA/IB: %s: %s %p is not a live registration of this group", fn, arg, p);
  return NULL;
}

/* Every rank sends its (address, R_Key, size) of registration m to every other, then reads
 * theirs: the sends (32 bytes each) never wait on a read. */
static ncclResult_t exchange(ri_group* g, ri_mr* m) {
  ri_msg mine = {RI_MSG_REG, m->id, (uint64_t)(uintptr_t)m->base, m->size, m->mr ? m->mr->rkey : 0,
                 0};
  m->remote[g->rank] = (ri_remote){mine.addr, mine.size, mine.rkey};
  ncclResult_t r = ncclSuccess;
  for (int p = 0; p < g->nranks && r == ncclSuccess; p++) {
    ri_peer* pe = &g->peers[p];
    if (p == g->rank) continue;
    pthread_mutex_lock(&pe->io);
    r = socket_send_all(pe->fd, &mine, sizeof mine, RI_WAIT_MS);
    pthread_mutex_unlock(&pe->io);
  }
  for (int p = 0; p < g->nranks && r == ncclSuccess; p++) {
    ri_peer* pe = &g->peers[p];
    if (p == g->rank) continue;
    ri_msg got;
    pthread_mutex_lock(&pe->io);
    r = socket_recv_all(pe->fd, &got, sizeof got, RI_WAIT_MS);
    pthread_mutex_unlock(&pe->io);
    if (r == ncclSuccess && (got.type != RI_MSG_REG || got.id != m->id)) {
      IB_WARN("RMA/IB: regMrSym: rank %d: rank %d answered registration #%u with %s #%u "
              "(registration is collective: every rank, same order)", g->rank, p, m->id,
              got.type == RI_MSG_BYE ? "closeColl" : "registration", got.id);
      r = ncclInvalidUsage;
    }
    if (r == ncclSuccess) m->remote[p] = (ri_remote){got.addr, got.size, got.rkey};
  }
  if (r != ncclSuccess && r != ncclInvalidUsage)
    IB_WARN("RMA/IB: regMrSym: rank %d could not exchange registration #%u with its peers",
            g->rank, m->id);
  return r;
}

/* Take an id for m (registered already), exchange it, publish it. */
static ncclResult_t reg_common(ri_group* g, ri_mr* m, void** mh) {
  m->remote = calloc((size_t)g->nranks, sizeof *m->remote);
  ncclResult_t r = m->remote ? ncclSuccess : ncclSystemError;
  pthread_mutex_lock(&g->lock);
  if (r == ncclSuccess && g->nmrs == g->cap_mrs) {
    uint32_t cap = g->cap_mrs ? g->cap_mrs * 2 : 16;
    ri_mr** grown = realloc(g->mrs, sizeof *grown * cap);
    if (grown == NULL) r = ncclSystemError;
    else g->mrs = grown, g->cap_mrs = cap;
  }
  if (r == ncclSuccess) {
    m->id = g->nmrs++; /* never reused: every rank counts the same calls */
    g->mrs[m->id] = NULL; /* live once every peer's side is known */
  }
  pthread_mutex_unlock(&g->lock);
  if (r == ncclSuccess) r = exchange(g, m);
  if (r == ncclSuccess) {
    pthread_mutex_lock(&g->lock);
    g->mrs[m->id] = m;
    pthread_mutex_unlock(&g->lock);
    *mh = m;
    return ncclSuccess;
  }
  if (m->mr) net_ib_verbs()->dereg_mr(m->mr);
  free(m->remote);
  free(m);
  return r;
}

static ncclResult_t reg_args(const char* fn, void* data, size_t size, void** mh) {
  if (mh != NULL && data != NULL && size > 0) return ncclSuccess;
  IB_WARN("RMA/IB: %s: bad argument (data %p, size %zu, mhandle %p)", fn, data, size, (void*)mh);
  return ncclInvalidArgument;
}

ncclResult_t rma_ib_reg(void* coll, void* data, size_t size, int type, uint64_t flags, void** mh) {
  (void)flags; /* FORCE_SO: one RC QP per rank orders everything already */
  ri_group* g = ri_group_check(coll, "regMrSym");
  if (g == NULL) return ncclInvalidArgument;
  ncclResult_t r = reg_args("regMrSym", data, size, mh);
  if (r != ncclSuccess) return r;
  if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA) {
    IB_WARN("RMA/IB: regMrSym: memory type %d is neither NCCL_PTR_HOST nor NCCL_PTR_CUDA", type);
    return ncclInvalidArgument;
  }
  if (type == NCCL_PTR_CUDA && !(g->d->ptr_support & NCCL_PTR_CUDA)) {
    IB_WARN("RMA/IB: regMrSym: %s:%d cannot register GPU memory (no GPUDirect RDMA: neither "
            "nvidia-peermem nor dma-buf registration)", g->d->name, g->d->port);
    return ncclInvalidUsage;
  }
  ri_mr* m = calloc(1, sizeof *m);
  if (m == NULL) return ncclSystemError;
  uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)data & ~(pg - 1);
  uintptr_t hi = ((uintptr_t)data + size + pg - 1) & ~(pg - 1);
  m->mr = net_ib_verbs()->reg_mr(g->d->hw->pd, (void*)lo, hi - lo, RI_MR_ACCESS);
  if (m->mr == NULL) {
    IB_WARN("RMA/IB: %s:%d: ibv_reg_mr of %zu bytes at %p failed: %s", g->d->name, g->d->port,
            size, data, strerror(errno));
    free(m);
    return ncclSystemError;
  }
  m->type = type;
  m->base = data;
  m->size = size;
  return reg_common(g, m, mh);
}

ncclResult_t rma_ib_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t offset,
                               int fd, uint64_t flags, void** mh) {
  (void)flags;
  ri_group* g = ri_group_check(coll, "regMrSymDmaBuf");
  if (g == NULL) return ncclInvalidArgument;
  ncclResult_t r = reg_args("regMrSymDmaBuf", data, size, mh);
  if (r != ncclSuccess) return r;
  const ib_verbs* v = net_ib_verbs();
  if (v->reg_dmabuf_mr == NULL || !g->d->hw->dmabuf) {
    IB_WARN("RMA/IB: regMrSymDmaBuf: %s cannot register dma-bufs (rdma-core, kernel or driver "
            "too old)", g->d->name);
    return ncclInvalidUsage;
  }
  if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA && type != NCCL_PTR_DMABUF) {
    IB_WARN("RMA/IB: regMrSymDmaBuf: unknown memory type %d", type);
    return ncclInvalidArgument;
  }
  ri_mr* m = calloc(1, sizeof *m);
  if (m == NULL) return ncclSystemError;
  m->mr = v->reg_dmabuf_mr(g->d->hw->pd, offset, size, (uint64_t)(uintptr_t)data, fd, RI_MR_ACCESS);
  if (m->mr == NULL) {
    IB_WARN("RMA/IB: %s:%d: ibv_reg_dmabuf_mr of %zu bytes (fd %d, offset %llu) failed: %s",
            g->d->name, g->d->port, size, fd, (unsigned long long)offset, strerror(errno));
    free(m);
    return ncclSystemError;
  }
  m->type = NCCL_PTR_DMABUF; /* addressed by data; never a signal word (the host may not map it) */
  m->base = data;
  m->size = size;
  return reg_common(g, m, mh);
}

ncclResult_t rma_ib_dereg(void* coll, void* mh) {
  ri_group* g = ri_group_check(coll, "deregMrSym");
  if (g == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&g->lock);
  ri_mr* m = mr_live(g, mh, "deregMrSym", "mhandle");
  if (m) g->mrs[m->id] = NULL;
  pthread_mutex_unlock(&g->lock);
  if (m == NULL) return ncclInvalidArgument;
  int e = net_ib_verbs()->dereg_mr(m->mr);
  free(m->remote);
  free(m);
  if (e) {
    IB_WARN("RMA/IB: deregMrSym: ibv_dereg_mr failed: %s", strerror(e));
    return ncclSystemError;
  }
  return ncclSuccess;
}

/* ---- requests ---- */

void ri_req_free(ri_group* g, ri_req* q) {
  ri_req** at = &g->reqs;
  while (*at && *at != q) at = &(*at)->next;
  if (*at) *at = q->next;
  free(q);
}

void ri_fail_waiting(ri_group* g, int peer, ncclResult_t why) {
  for (ri_req* q = g->reqs; q; q = q->next) {
    if (q->peer != peer || q->released || __atomic_load_n(&q->done, __ATOMIC_ACQUIRE)) continue;
    q->error = why;
    __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
  }
}

/* Lock held. */
static ri_req* req_new(ri_group* g, int kind, int peer) {
  ri_req* q = calloc(1, sizeof *q);
  if (q == NULL) return NULL;
  q->kind = kind;
  q->peer = peer;
  q->next = g->reqs;
  g->reqs = q;
  return q;
}

/* Lock held: post one signaled WR of q to its peer, waiting (progressing) while the peer's send
 * queue is full. */
static ncclResult_t post(ri_group* g, ri_req* q, struct ibv_send_wr* wr, const char* fn) {
  ri_peer* pe = &g->peers[q->peer];
  uint64_t deadline = clock_ns() + (uint64_t)RI_WAIT_MS * 1000000ull;
  while (pe->sq_used >= RI_SQ_DEPTH && !pe->dead && !pe->failed && clock_ns() < deadline) {
    pthread_mutex_unlock(&g->lock);
    sched_yield();
    pthread_mutex_lock(&g->lock);
    ri_progress_locked(g);
  }
  if (pe->dead || pe->closed || pe->failed) {
    IB_WARN("RMA/IB: %s: rank %d: rank %d %s", fn, g->rank, q->peer,
            pe->dead ? "has left" : pe->closed ? "closed the group" : "is unreachable (an earlier "
            "transfer to it failed)");
    return ncclRemoteError;
  }
  if (pe->sq_used >= RI_SQ_DEPTH) {
    IB_WARN("RMA/IB: %s: rank %d: the send queue to rank %d stayed full for %d ms", fn, g->rank,
            q->peer, RI_WAIT_MS);
    return ncclRemoteError;
  }
  wr->wr_id = (uint64_t)(uintptr_t)q;
  wr->send_flags |= IBV_SEND_SIGNALED;
  struct ibv_send_wr* bad = NULL;
  int e = net_ib_verbs()->post_send(pe->qp, wr, &bad);
  if (e) {
    IB_WARN("RMA/IB: %s: rank %d: ibv_post_send to rank %d failed: %s", fn, g->rank, q->peer,
            strerror(e));
    __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    return ncclSystemError;
  }
  pe->sq_used++;
  q->pending++;
  return ncclSuccess;
}

/* Lock held: an RDMA write or read of size bytes, cut at the port's message size. */
static ncclResult_t transfer(ri_group* g, ri_req* q, enum ibv_wr_opcode op, char* local,
                             uint32_t lkey, uint64_t remote, uint32_t rkey, size_t size,
                             const char* fn) {
  size_t max = g->d->max_msg ? g->d->max_msg : (1u << 30);
  for (size_t done = 0; done < size;) {
    size_t n = size - done < max ? size - done : max;
    struct ibv_sge sge = {(uint64_t)(uintptr_t)(local + done), (uint32_t)n, lkey};
    struct ibv_send_wr wr;
    memset(&wr, 0, sizeof wr);
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = remote + done;
    wr.wr.rdma.rkey = rkey;
    ncclResult_t r = post(g, q, &wr, fn);
    if (r != ncclSuccess) return r;
    done += n;
  }
  return ncclSuccess;
}

/* The end of a call that made request q (posts' result r; lock held, released here): nothing
 * went out and r failed: q is dropped and r returned; else q goes to the caller, done at once
 * when nothing went out or a post failed after others had. */
static ncclResult_t hand_out(ri_group* g, ri_req* q, ncclResult_t r, void** req) {
  if (r != ncclSuccess && q->pending == 0) {
    ri_req_free(g, q);
    pthread_mutex_unlock(&g->lock);
    return r;
  }
  if (r != ncclSuccess && q->error == ncclSuccess) q->error = r;
  if (q->pending == 0 || q->error != ncclSuccess) __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g->lock);
  *req = q;
  return ncclSuccess;
}

/* Checks shared by put and get; lock held. loc: the local registration, rem: the peer's. */
static ncclResult_t ranges(ri_group* g, const char* fn, uint32_t rank, void** req, void* loc_mh,
                           uint64_t loc_off, void* rem_mh, uint64_t rem_off, size_t size,
                           ri_mr** loc, ri_mr** rem) {
  ncclResult_t r = weft_rma_check_target(net_ib_logger(), "RMA/IB", fn, rank, g->nranks, req);
  if (r != ncclSuccess) return r;
  if ((*loc = mr_live(g, loc_mh, fn, "local mhandle")) == NULL ||
      (*rem = mr_live(g, rem_mh, fn, "remote mhandle")) == NULL)
    return ncclInvalidArgument;
  return weft_rma_check_fit(net_ib_logger(), "RMA/IB", fn, size, loc_off, (*loc)->size, rem_off,
                            (*rem)->remote[rank].size);
}

static ncclResult_t put(ri_group* g, uint64_t src_off, void* src_mh, size_t size, uint64_t dst_off,
                        void* dst_mh, uint32_t rank, const ri_sig* sig, void** req,
                        const char* fn) {
  pthread_mutex_lock(&g->lock);
  ri_mr *src = NULL, *dst = NULL;
  int data = !(sig && size == 0 && src_mh == NULL && dst_mh == NULL); /* else a signal alone */
  ncclResult_t r = ncclSuccess;
  if (data) r = ranges(g, fn, rank, req, src_mh, src_off, dst_mh, dst_off, size, &src, &dst);
  else r = weft_rma_check_target(net_ib_logger(), "RMA/IB", fn, rank, g->nranks, req);
  ri_req* q = r == ncclSuccess ? req_new(g, RI_PUT, (int)rank) : NULL;
  if (r == ncclSuccess && q == NULL) r = ncclSystemError;
  if (r != ncclSuccess) {
    pthread_mutex_unlock(&g->lock);
    return r;
  }
  if (data && size > 0)
    r = transfer(g, q, IBV_WR_RDMA_WRITE, src->base + src_off, src->mr->lkey,
                 dst->remote[rank].addr + dst_off, dst->remote[rank].rkey, size, fn);
  if (r == ncclSuccess && sig) {
    /* After the data on the same QP: its receive completes after they are placed. */
    struct ibv_sge sge = {(uint64_t)(uintptr_t)sig, sizeof *sig, 0};
    struct ibv_send_wr wr;
    memset(&wr, 0, sizeof wr);
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_INLINE;
    r = post(g, q, &wr, fn);
  }
  return hand_out(g, q, r, req);
}

ncclResult_t rma_ib_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                         uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  ri_group* g = ctx_group(ctx, context, "iput");
  if (g == NULL) return ncclInvalidArgument;
  return put(g, src_off, src_mh, size, dst_off, dst_mh, rank, NULL, req, "iput");
}

ncclResult_t rma_ib_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                bool strong, uint32_t opt, void** req) {
  (void)strong, (void)opt; /* one QP per rank: every signal follows every earlier put */
  ri_group* g = ctx_group(ctx, context, "iputSignal");
  if (g == NULL) return ncclInvalidArgument;
  if (op != NCCL_GIN_SIGNAL_OP_INC && op != NCCL_GIN_SIGNAL_OP_ADD) {
    IB_WARN("RMA/IB: iputSignal: signalOp %u is neither NCCL_GIN_SIGNAL_OP_INC nor _ADD", op);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&g->lock);
  ri_mr* s = mr_live(g, sig_mh, "iputSignal", "signalMhandle");
  uint64_t ssize = s && rank < (uint32_t)g->nranks ? s->remote[rank].size : 0;
  int host = s && s->type == NCCL_PTR_HOST;
  uint32_t id = s ? s->id : 0;
  pthread_mutex_unlock(&g->lock);
  if (s == NULL) return ncclInvalidArgument;
  if (!host) {
    IB_WARN("RMA/IB: iputSignal: the signal registration is GPU or dma-buf memory; the target's "
            "host adds the signal, so it must be host memory");
    return ncclInvalidUsage;
  }
  if (sig_off % sizeof(uint64_t) || sig_off > ssize || ssize - sig_off < sizeof(uint64_t)) {
    IB_WARN("RMA/IB: iputSignal: signal offset %llu is not an aligned 64-bit word inside the "
            "signal registration (%llu bytes at rank %u)", (unsigned long long)sig_off,
            (unsigned long long)ssize, rank);
    return ncclInvalidArgument;
  }
  ri_sig rec = {id, 0, sig_off, op == NCCL_GIN_SIGNAL_OP_INC ? 1 : value};
  return put(g, src_off, src_mh, size, dst_off, dst_mh, rank, &rec, req, "iputSignal");
}

void ri_apply_signal(ri_group* g, int peer, const ri_sig* s, uint32_t len) {
  ri_mr* m = len == sizeof *s && s->mr < g->nmrs ? g->mrs[s->mr] : NULL;
  if (m == NULL || m->type != NCCL_PTR_HOST || s->off % sizeof(uint64_t) ||
      m->size < sizeof(uint64_t) || s->off > m->size - sizeof(uint64_t)) {
    IB_WARN("RMA/IB: rank %d: a signal from rank %d names registration #%u offset %llu (%u "
            "bytes), which is not a live host registration here: dropped", g->rank, peer, s->mr,
            (unsigned long long)s->off, len);
    __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    return;
  }
  __atomic_fetch_add((uint64_t*)(void*)(m->base + s->off), s->add, __ATOMIC_SEQ_CST);
}

ncclResult_t rma_ib_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                         uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  ri_group* g = ctx_group(ctx, context, "iget");
  if (g == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&g->lock);
  ri_mr *loc = NULL, *rem = NULL;
  ncclResult_t r = ranges(g, "iget", rank, req, l_mh, l_off, r_mh, r_off, size, &loc, &rem);
  ri_req* q = r == ncclSuccess ? req_new(g, RI_GET, (int)rank) : NULL;
  if (r == ncclSuccess && q == NULL) r = ncclSystemError;
  if (r != ncclSuccess) {
    pthread_mutex_unlock(&g->lock);
    return r;
  }
  r = transfer(g, q, IBV_WR_RDMA_READ, loc->base + l_off, loc->mr->lkey,
               rem->remote[rank].addr + r_off, rem->remote[rank].rkey, size, "iget");
  return hand_out(g, q, r, req);
}

ncclResult_t rma_ib_iflush(void* ctx, int context, void* mh, uint32_t rank, void** req) {
  (void)mh;
  ri_group* g = ctx_group(ctx, context, "iflush");
  if (g == NULL) return ncclInvalidArgument;
  ncclResult_t r = weft_rma_check_target(net_ib_logger(), "RMA/IB", "iflush", rank, g->nranks, req);
  if (r != ncclSuccess) return r;
  pthread_mutex_lock(&g->lock);
  ri_req* q = req_new(g, RI_FLUSH, (int)rank);
  if (q == NULL) r = ncclSystemError;
  /* 8 bytes read from the peer's flush source, behind every earlier write on the QP. */
  if (r == ncclSuccess)
    r = transfer(g, q, IBV_WR_RDMA_READ, g->buf + g->buf_len - 64, g->buf_mr->lkey,
                 g->peers[rank].flush_addr, g->peers[rank].flush_rkey, 8, "iflush");
  if (q == NULL) {
    pthread_mutex_unlock(&g->lock);
    return r;
  }
  return hand_out(g, q, r, req);
}

ncclResult_t rma_ib_test(void* coll, void* request, int* done) {
  ri_group* g = ri_group_check(coll, "test");
  if (g == NULL) return ncclInvalidArgument;
  if (done == NULL) {
    IB_WARN("RMA/IB: test: done is NULL");
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&g->lock);
  ri_req* q = g->reqs;
  while (q && (q != request || q->released)) q = q->next;
  if (q == NULL) {
    pthread_mutex_unlock(&g->lock);
    IB_WARN("RMA/IB: test: %p is not a pending request of this group", request);
    return ncclInvalidArgument;
  }
  if (!__atomic_load_n(&q->done, __ATOMIC_ACQUIRE)) ri_progress_locked(g);
  *done = __atomic_load_n(&q->done, __ATOMIC_ACQUIRE);
  ncclResult_t r = ncclSuccess;
  if (*done) {
    r = q->error;
    if (q->pending == 0) ri_req_free(g, q);
    else q->released = 1; /* its WRs are still out (a failed peer): freed as they complete */
  }
  pthread_mutex_unlock(&g->lock);
  return r;
}

ncclResult_t rma_ib_progress(void* ctx) {
  ri_group* g = ctx_group(ctx, 0, "rmaProgress");
  if (g == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&g->lock);
  ri_progress_locked(g);
  pthread_mutex_unlock(&g->lock);
  return ncclSuccess;
}

ncclResult_t rma_ib_last_error(void* ctx, bool* has_error) {
  ri_group* g = ctx_group(ctx, 0, "queryLastError");
  if (g == NULL || has_error == NULL) return ncclInvalidArgument;
  *has_error = __atomic_load_n(&g->error, __ATOMIC_ACQUIRE) != 0;
  return ncclSuccess;
}
