/* The libfabric RMA operations (rma_ofi.h): contexts, collective registration through the
 * directories, put, put with signal, get, flush, test. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rma_common.h"
#include "rma_ofi.h"

#define RO_RCTX_MAGIC 0x726f726374780001ull
#define RO_WAIT_S 30

ncclResult_t rma_ofi_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx) {
  ro_group* g = ro_group_check(coll, "createContext");
  if (g == NULL) return ncclInvalidArgument;
  return weft_rma_ctx_new(g, config, RO_RCTX_MAGIC, net_ofi_logger(), "RMA/OFI", ctx);
}

/* The group of a context (one endpoint carries every context). */
static ro_group* ctx_group(void* p, int context, const char* fn) {
  weft_rma_ctx* x = weft_rma_ctx_check(p, context, RO_RCTX_MAGIC, net_ofi_logger(), "RMA/OFI", fn);
  return x ? x->coll : NULL;
}

ncclResult_t rma_ofi_destroy_context(void* ctx) {
  return weft_rma_ctx_free(ctx, RO_RCTX_MAGIC, net_ofi_logger(), "RMA/OFI");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Post with op until the provider takes it (progressing while it says EAGAIN). Lock held. */
#define RO_POST(g, call, rc)                                                     \
  do {                                                                           \
    double t0_ = now_s();                                                        \
    while (((rc) = (call)) == -FI_EAGAIN && now_s() - t0_ < RO_WAIT_S) {         \
      ro_progress_locked(g);                                                     \
    }                                                                            \
  } while (0)

ncclResult_t rma_ofi_reg(void* coll, void* data, size_t size, int type, uint64_t flags, void** mh) {
  (void)flags; /* FORCE_SO: completions order everything here already */
  ro_group* g = ro_group_check(coll, "regMrSym");
  if (g == NULL) return ncclInvalidArgument;
  if (mh == NULL || data == NULL || size == 0) {
    OFI_WARN("RMA/OFI: regMrSym: bad argument (data %p, size %zu, mhandle %p)", data, size,
             (void*)mh);
    return ncclInvalidArgument;
  }
  if (type != NCCL_PTR_HOST) {
    OFI_WARN("RMA/OFI: regMrSym: memory type %d: the RMA tables move host memory only", type);
    return ncclInvalidUsage;
  }
  ro_mr* m = calloc(1, sizeof *m);
  ro_entry* remote = calloc((size_t)g->nranks, sizeof *remote);
  if (m == NULL || remote == NULL) {
    free(m);
    free(remote);
    return ncclSystemError;
  }
  m->base = data;
  m->size = size;
  m->remote = remote;
  pthread_mutex_lock(&g->lock);
  int live = 0;
  for (uint32_t i = 0; i < g->nmrs; i++) live += g->mrs[i] != NULL;
  ncclResult_t r = ncclSuccess;
  if (live >= RO_DIR_SLOTS) {
    OFI_WARN("RMA/OFI: regMrSym: %d registrations are live, the most a group keeps", live);
    r = ncclInvalidUsage;
  } else if (g->nmrs == g->cap_mrs) {
    uint32_t cap = g->cap_mrs ? g->cap_mrs * 2 : 16;
    ro_mr** grown = realloc(g->mrs, sizeof *grown * cap);
    if (grown == NULL) r = ncclSystemError;
    else g->mrs = grown, g->cap_mrs = cap;
  }
  if (r == ncclSuccess) r = ro_mr_reg(g->e, data, size, &m->mr);
  if (r != ncclSuccess) {
    pthread_mutex_unlock(&g->lock);
    free(remote);
    free(m);
    return r;
  }
  m->id = g->nmrs++; /* ids are never reused: every rank counts the same calls */
  g->mrs[m->id] = m;
  m->desc = fi_mr_desc(m->mr);
  ro_entry mine = {ro_remote_base(g->e, data), fi_mr_key(m->mr), size, m->id + 1, 0};
  mine.check = ro_entry_check(&mine);
  remote[g->rank] = mine;
  size_t slot = (size_t)g->rank * RO_DIR_SLOTS + m->id % RO_DIR_SLOTS;
  for (int p = 0; p < g->nranks && r == ncclSuccess; p++) {
    if (p == g->rank) continue;
    ssize_t rc;
    RO_POST(g, fi_inject_write(g->e->ep, &mine, sizeof mine, g->peers[p],
                               g->dir_base[p] + slot * sizeof(ro_entry), g->dir_key[p]), rc);
    if (rc != 0) {
      OFI_WARN("RMA/OFI: regMrSym: rank %d cannot announce registration %u to rank %d: %s",
               g->rank, m->id, p, fi_strerror((int)-rc));
      r = ncclRemoteError;
    }
  }
  pthread_mutex_unlock(&g->lock);
  /* Every peer's entry for this registration, as it lands in the directory. */
  double t0 = now_s();
  for (int p = 0; p < g->nranks && r == ncclSuccess; p++) {
    if (p == g->rank) continue;
    ro_entry* at = &g->e->dir[(size_t)p * RO_DIR_SLOTS + m->id % RO_DIR_SLOTS];
    for (;;) {
      /* Acquire loads (the provider writes the entry; no fence: ThreadSanitizer refuses one);
       * a torn entry fails its check and is read again. */
      ro_entry e = {__atomic_load_n(&at->base, __ATOMIC_ACQUIRE),
                    __atomic_load_n(&at->key, __ATOMIC_ACQUIRE),
                    __atomic_load_n(&at->size, __ATOMIC_ACQUIRE),
                    __atomic_load_n(&at->seq, __ATOMIC_ACQUIRE),
                    __atomic_load_n(&at->check, __ATOMIC_ACQUIRE)};
      if (e.seq == m->id + 1 && e.check == ro_entry_check(&e)) {
        remote[p] = e;
        break;
      }
      if (now_s() - t0 > RO_WAIT_S) {
        OFI_WARN("RMA/OFI: regMrSym: rank %d: rank %d did not register #%u within %d s "
                 "(registration is collective)", g->rank, p, m->id, RO_WAIT_S);
        r = ncclRemoteError;
        break;
      }
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
  if (r != ncclSuccess) {
    pthread_mutex_lock(&g->lock);
    g->mrs[m->id] = NULL;
    fi_close(&m->mr->fid);
    pthread_mutex_unlock(&g->lock);
    free(remote);
    free(m);
    return r;
  }
  *mh = m;
  return ncclSuccess;
}

ncclResult_t rma_ofi_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t offset,
                                int fd, uint64_t flags, void** mh) {
  (void)coll, (void)data, (void)size, (void)type, (void)offset, (void)fd, (void)flags, (void)mh;
  OFI_WARN("RMA/OFI: regMrSymDmaBuf: the RMA tables move host memory only");
  return ncclInvalidUsage;
}

/* Lock held. */
static ro_mr* mr_live(ro_group* g, void* p, const char* fn, const char* arg) {
  ro_mr* m = p;
  if (m != NULL && m->id < g->nmrs && g->mrs[m->id] == m) return m;
  OFI_WARN("RMA/OFI: %s: %s %p is not a live registration of this group", fn, arg, p);
  return NULL;
}

ncclResult_t rma_ofi_dereg(void* coll, void* mh) {
  ro_group* g = ro_group_check(coll, "deregMrSym");
  if (g == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&g->lock);
  ro_mr* m = mr_live(g, mh, "deregMrSym", "mhandle");
  if (m) {
    g->mrs[m->id] = NULL;
    fi_close(&m->mr->fid);
  }
  pthread_mutex_unlock(&g->lock);
  if (m == NULL) return ncclInvalidArgument;
  free(m->remote);
  free(m);
  return ncclSuccess;
}

/* Lock held. */
static ro_req* req_new(ro_group* g, int kind, int peer) {
  ro_req* q = calloc(1, sizeof *q);
  if (q == NULL) return NULL;
  q->kind = kind;
  q->peer = peer;
  q->next = g->reqs;
  g->reqs = q;
  return q;
}

static void req_fail(ro_req* q, ncclResult_t why) {
  q->error = why;
  q->waiting = 0;
  __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
}

void ro_finish_waiting(ro_group* g) {
  for (ro_req* q = g->reqs; q; q = q->next) {
    if (!q->waiting || q->in_fabric || g->outstanding[q->peer] > 0) continue;
    if (q->kind == RO_PUT_SIGNAL) {
      ssize_t rc = fi_inject_atomic(g->e->ep, &q->sig_add, 1, g->peers[q->peer], q->sig_addr,
                                    q->sig_key, FI_UINT64, FI_SUM);
      if (rc == -FI_EAGAIN) continue; /* next round */
      if (rc != 0) {
        OFI_WARN("RMA/OFI: rank %d: the signal to rank %d failed: %s", g->rank, q->peer,
                 fi_strerror((int)-rc));
        __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
        req_fail(q, ncclRemoteError);
        continue;
      }
    }
    q->waiting = 0;
    __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
  }
}

/* Checks shared by put and get; lock held. loc: the local registration, rem: the peer's. */
static ncclResult_t ranges(ro_group* g, const char* fn, uint32_t rank, void** req, void* loc_mh,
                           uint64_t loc_off, void* rem_mh, uint64_t rem_off, size_t size,
                           ro_mr** loc, ro_mr** rem) {
  ncclResult_t r = weft_rma_check_target(net_ofi_logger(), "RMA/OFI", fn, rank, g->nranks, req);
  if (r != ncclSuccess) return r;
  if ((*loc = mr_live(g, loc_mh, fn, "local mhandle")) == NULL ||
      (*rem = mr_live(g, rem_mh, fn, "remote mhandle")) == NULL)
    return ncclInvalidArgument;
  return weft_rma_check_fit(net_ofi_logger(), "RMA/OFI", fn, size, loc_off, (*loc)->size, rem_off,
                            (*rem)->remote[rank].size);
}

static ncclResult_t put(ro_group* g, uint64_t src_off, void* src_mh, size_t size, uint64_t dst_off,
                        void* dst_mh, uint32_t rank, ro_mr* sig, uint64_t sig_off,
                        uint64_t sig_add, void** req, const char* fn) {
  pthread_mutex_lock(&g->lock);
  ro_mr *src = NULL, *dst = NULL;
  int data = !(sig && size == 0 && src_mh == NULL && dst_mh == NULL); /* else a signal alone */
  ncclResult_t r = ncclSuccess;
  if (data) r = ranges(g, fn, rank, req, src_mh, src_off, dst_mh, dst_off, size, &src, &dst);
  else if (req == NULL || rank >= (uint32_t)g->nranks) r = ncclInvalidArgument;
  if (r == ncclSuccess && g->dead[rank]) {
    OFI_WARN("RMA/OFI: %s: rank %u's process ended", fn, rank);
    r = ncclRemoteError;
  }
  ro_req* q = r == ncclSuccess ? req_new(g, sig ? RO_PUT_SIGNAL : RO_PUT, (int)rank) : NULL;
  if (r == ncclSuccess && q == NULL) r = ncclSystemError;
  if (r != ncclSuccess) {
    pthread_mutex_unlock(&g->lock);
    return r;
  }
  if (sig) {
    q->waiting = 1;
    q->sig_addr = sig->remote[rank].base + sig_off;
    q->sig_key = sig->remote[rank].key;
    q->sig_add = sig_add;
  }
  if (data) {
    struct iovec iov = {src->base + src_off, size};
    void* desc = src->desc;
    struct fi_rma_iov riov = {dst->remote[rank].base + dst_off, size, dst->remote[rank].key};
    struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1,
                             .addr = g->peers[rank], .rma_iov = &riov, .rma_iov_count = 1,
                             .context = &q->fctx};
    ssize_t rc;
    q->in_fabric = 1;
    g->outstanding[rank]++;
    RO_POST(g, fi_writemsg(g->e->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE), rc);
    if (rc != 0) {
      OFI_WARN("RMA/OFI: %s: rank %d to rank %u: fi_writemsg: %s", fn, g->rank, rank,
               fi_strerror((int)-rc));
      q->in_fabric = 0;
      g->outstanding[rank]--;
      __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
      req_fail(q, ncclRemoteError);
    }
  }
  ro_finish_waiting(g); /* a signal alone, with nothing outstanding, goes now */
  pthread_mutex_unlock(&g->lock);
  *req = q;
  return ncclSuccess;
}

ncclResult_t rma_ofi_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                          uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  ro_group* g = ctx_group(ctx, context, "iput");
  if (g == NULL) return ncclInvalidArgument;
  return put(g, src_off, src_mh, size, dst_off, dst_mh, rank, NULL, 0, 0, req, "iput");
}

ncclResult_t rma_ofi_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                 size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                 uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                 bool strong, uint32_t opt, void** req) {
  (void)strong, (void)opt; /* every signal waits for all earlier puts to its rank: strong */
  ro_group* g = ctx_group(ctx, context, "iputSignal");
  if (g == NULL) return ncclInvalidArgument;
  if (op != NCCL_GIN_SIGNAL_OP_INC && op != NCCL_GIN_SIGNAL_OP_ADD) {
    OFI_WARN("RMA/OFI: iputSignal: signalOp %u is neither NCCL_GIN_SIGNAL_OP_INC nor _ADD", op);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&g->lock);
  ro_mr* s = mr_live(g, sig_mh, "iputSignal", "signalMhandle");
  uint64_t ssize = s && rank < (uint32_t)g->nranks ? s->remote[rank].size : 0;
  pthread_mutex_unlock(&g->lock);
  if (s == NULL) return ncclInvalidArgument;
  if (sig_off % sizeof(uint64_t) || sig_off > ssize || ssize - sig_off < sizeof(uint64_t)) {
    OFI_WARN("RMA/OFI: iputSignal: signal offset %llu is not an aligned 64-bit word inside the "
             "signal registration (%llu bytes at rank %u)", (unsigned long long)sig_off,
             (unsigned long long)ssize, rank);
    return ncclInvalidArgument;
  }
  return put(g, src_off, src_mh, size, dst_off, dst_mh, rank, s, sig_off,
             op == NCCL_GIN_SIGNAL_OP_INC ? 1 : value, req, "iputSignal");
}

ncclResult_t rma_ofi_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                          uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  ro_group* g = ctx_group(ctx, context, "iget");
  if (g == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&g->lock);
  ro_mr *loc = NULL, *rem = NULL;
  ncclResult_t r = ranges(g, "iget", rank, req, l_mh, l_off, r_mh, r_off, size, &loc, &rem);
  ro_req* q = r == ncclSuccess ? req_new(g, RO_GET, (int)rank) : NULL;
  if (r == ncclSuccess && q == NULL) r = ncclSystemError;
  if (r != ncclSuccess) {
    pthread_mutex_unlock(&g->lock);
    return r;
  }
  struct iovec iov = {loc->base + l_off, size};
  void* desc = loc->desc;
  struct fi_rma_iov riov = {rem->remote[rank].base + r_off, size, rem->remote[rank].key};
  struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1,
                           .addr = g->peers[rank], .rma_iov = &riov, .rma_iov_count = 1,
                           .context = &q->fctx};
  ssize_t rc;
  q->in_fabric = 1;
  RO_POST(g, fi_readmsg(g->e->ep, &msg, FI_COMPLETION), rc);
  if (rc != 0) {
    OFI_WARN("RMA/OFI: iget: rank %d from rank %u: fi_readmsg: %s", g->rank, rank,
             fi_strerror((int)-rc));
    q->in_fabric = 0;
    __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    req_fail(q, ncclRemoteError);
  }
  pthread_mutex_unlock(&g->lock);
  *req = q;
  return ncclSuccess;
}

ncclResult_t rma_ofi_iflush(void* ctx, int context, void* mh, uint32_t rank, void** req) {
  (void)mh;
  ro_group* g = ctx_group(ctx, context, "iflush");
  if (g == NULL) return ncclInvalidArgument;
  if (req == NULL || rank >= (uint32_t)g->nranks) {
    OFI_WARN("RMA/OFI: iflush: bad argument (rank %u of %d, request %p)", rank, g->nranks,
             (void*)req);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&g->lock);
  ro_req* q = req_new(g, RO_FLUSH, (int)rank);
  if (q) {
    q->waiting = 1; /* done once no put to rank is outstanding (each completes on delivery) */
    ro_finish_waiting(g);
  }
  pthread_mutex_unlock(&g->lock);
  if (q == NULL) return ncclSystemError;
  *req = q;
  return ncclSuccess;
}

ncclResult_t rma_ofi_test(void* coll, void* request, int* done) {
  ro_group* g = ro_group_check(coll, "test");
  if (g == NULL) return ncclInvalidArgument;
  if (done == NULL) {
    OFI_WARN("RMA/OFI: test: done is NULL");
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&g->lock);
  ro_req** at = &g->reqs;
  while (*at && *at != request) at = &(*at)->next;
  ro_req* q = *at;
  if (q == NULL) {
    pthread_mutex_unlock(&g->lock);
    OFI_WARN("RMA/OFI: test: %p is not a pending request of this group", request);
    return ncclInvalidArgument;
  }
  *done = __atomic_load_n(&q->done, __ATOMIC_ACQUIRE);
  ncclResult_t r = ncclSuccess;
  if (*done) {
    r = q->error;
    *at = q->next;
    free(q);
  }
  pthread_mutex_unlock(&g->lock);
  return r;
}

ncclResult_t rma_ofi_progress(void* ctx) {
  ro_group* g = ctx_group(ctx, 0, "rmaProgress");
  if (g == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&g->lock);
  ro_progress_locked(g);
  pthread_mutex_unlock(&g->lock);
  return ncclSuccess;
}

ncclResult_t rma_ofi_last_error(void* ctx, bool* has_error) {
  ro_group* g = ctx_group(ctx, 0, "queryLastError");
  if (g == NULL || has_error == NULL) return ncclInvalidArgument;
  *has_error = __atomic_load_n(&g->error, __ATOMIC_ACQUIRE) != 0;
  return ncclSuccess;
}
