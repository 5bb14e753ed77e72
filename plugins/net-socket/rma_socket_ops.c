/* The socket RMA operations (rma_socket.h): contexts, collective registration, put, put with
 * signal, get, flush, test, and the receiver's handling of each message. */
#include <stdlib.h>
#include <string.h>

#include "rma_socket.h"
#include "util/tsan.h"

#define RS_RCTX_MAGIC 0x7273726374780001ull
#define RS_IO_TIMEOUT_MS 30000
#define RS_SCRATCH 65536

ncclResult_t rma_socket_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx) {
  rs_coll* c = rma_socket_coll_check(coll, "createContext");
  if (c == NULL) return ncclInvalidArgument;
  if (config == NULL || ctx == NULL || config->nContexts < 1) {
    NS_WARN("RMA/Socket: createContext: bad argument (config %p, nContexts %d, ctx %p)",
            (void*)config, config ? config->nContexts : 0, (void*)ctx);
    return ncclInvalidArgument;
  }
  rs_ctx* x = calloc(1, sizeof *x);
  if (x == NULL) return ncclSystemError;
  *x = (rs_ctx){RS_RCTX_MAGIC, c, config->nContexts};
  *ctx = x;
  return ncclSuccess;
}

static rs_ctx* ctx_check(void* p, int context, const char* fn) {
  rs_ctx* x = p;
  if (x == NULL || x->magic != RS_RCTX_MAGIC) {
    NS_WARN("RMA/Socket: %s: %p is not a context createContext returned", fn, p);
    return NULL;
  }
  if (context < 0 || context >= x->ncontexts) {
    NS_WARN("RMA/Socket: %s: context %d out of range (%d contexts)", fn, context, x->ncontexts);
    return NULL;
  }
  return x;
}

ncclResult_t rma_socket_destroy_context(void* ctx) {
  rs_ctx* x = ctx_check(ctx, 0, "destroyContext");
  if (x == NULL) return ncclInvalidArgument;
  x->magic = 0;
  free(x);
  return ncclSuccess;
}

rs_mr* rma_socket_mr_by_id(rs_coll* c, uint32_t id) {
  return id < c->nmrs ? c->mrs[id] : NULL;
}

/* Where the m->size bytes at m->off of registration m->mr start, NULL when they do not lie
 * inside it (or it does not exist). */
static char* msg_bytes(rs_coll* c, const rs_msg* m) {
  pthread_mutex_lock(&c->lock);
  rs_mr* d = rma_socket_mr_by_id(c, m->mr);
  char* at = (d && m->off <= d->size && m->size <= d->size - m->off) ? d->base + m->off : NULL;
  pthread_mutex_unlock(&c->lock);
  return at;
}

ncclResult_t rma_socket_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                            void** mhandle) {
  rs_coll* c = rma_socket_coll_check(coll, "regMrSym");
  if (c == NULL) return ncclInvalidArgument;
  if (mhandle == NULL || (data == NULL && size > 0)) {
    NS_WARN("RMA/Socket: regMrSym: bad argument (data %p, size %zu, mhandle %p)", data, size,
            (void*)mhandle);
    return ncclInvalidArgument;
  }
  if (type != NCCL_PTR_HOST) {
    NS_WARN("RMA/Socket: regMrSym: memory type %d: this plugin moves host memory only "
            "(GPU memory needs a GPU-capable NIC and driver)", type);
    return ncclInvalidUsage;
  }
  rs_mr* m = calloc(1, sizeof *m);
  if (m == NULL) return ncclSystemError;
  pthread_mutex_lock(&c->lock);
  if (c->nmrs == c->cap_mrs) {
    uint32_t cap = c->cap_mrs ? c->cap_mrs * 2 : 16;
    rs_mr** grown = realloc(c->mrs, sizeof *grown * cap);
    if (grown == NULL) {
      pthread_mutex_unlock(&c->lock);
      free(m);
      return ncclSystemError;
    }
    c->mrs = grown;
    c->cap_mrs = cap;
  }
  *m = (rs_mr){c->nmrs, data, size, flags, c};
  c->mrs[c->nmrs++] = m; /* ids are never reused: every rank counts the same calls */
  pthread_mutex_unlock(&c->lock);
  *mhandle = m;
  return ncclSuccess;
}

ncclResult_t rma_socket_reg_dmabuf(void* coll, void* data, size_t size, int type,
                                   uint64_t offset, int fd, uint64_t flags, void** mhandle) {
  (void)coll, (void)data, (void)size, (void)type, (void)offset, (void)fd, (void)flags;
  (void)mhandle;
  NS_WARN("RMA/Socket: regMrSymDmaBuf: this plugin moves host memory only");
  return ncclInvalidUsage;
}

static rs_mr* mr_check(rs_coll* c, void* p, const char* fn, const char* arg) {
  rs_mr* m = p;
  int ok = 0;
  pthread_mutex_lock(&c->lock);
  for (uint32_t i = 0; m && i < c->nmrs && !ok; i++) ok = c->mrs[i] == m;
  pthread_mutex_unlock(&c->lock);
  if (!ok) NS_WARN("RMA/Socket: %s: %s %p is not a live registration of this group", fn, arg, p);
  return ok ? m : NULL;
}

ncclResult_t rma_socket_dereg(void* coll, void* mhandle) {
  rs_coll* c = rma_socket_coll_check(coll, "deregMrSym");
  if (c == NULL) return ncclInvalidArgument;
  rs_mr* m = mr_check(c, mhandle, "deregMrSym", "mhandle");
  if (m == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&c->lock);
  c->mrs[m->id] = NULL;
  pthread_mutex_unlock(&c->lock);
  free(m);
  return ncclSuccess;
}

/* A request, listed in the group until test reports it done. */
static rs_req* req_new(rs_coll* c, int peer, int done, ncclResult_t err) {
  rs_req* q = calloc(1, sizeof *q);
  if (q == NULL) return NULL;
  q->peer = peer;
  q->error = err;
  q->done = done;
  pthread_mutex_lock(&c->lock);
  q->token = c->next_token++;
  q->next = c->reqs;
  c->reqs = q;
  pthread_mutex_unlock(&c->lock);
  return q;
}

/* Arguments every put checks: the context, the rank, both registrations and the ranges. */
static ncclResult_t put_args(rs_ctx* x, const char* fn, uint64_t src_off, void* src_mh,
                             size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                             void** request, rs_mr** src, rs_mr** dst) {
  rs_coll* c = x->coll;
  if (request == NULL || rank >= (uint32_t)c->nranks) {
    NS_WARN("RMA/Socket: %s: bad argument (rank %u of %d, request %p)", fn, rank, c->nranks,
            (void*)request);
    return ncclInvalidArgument;
  }
  if ((*src = mr_check(c, src_mh, fn, "srcMhandle")) == NULL ||
      (*dst = mr_check(c, dst_mh, fn, "dstMhandle")) == NULL)
    return ncclInvalidArgument;
  if (src_off > (*src)->size || size > (*src)->size - src_off || dst_off > (*dst)->size ||
      size > (*dst)->size - dst_off) {
    NS_WARN("RMA/Socket: %s: %zu bytes at source offset %llu / destination offset %llu overrun "
            "the registrations (%zu / %zu bytes)", fn, size, (unsigned long long)src_off,
            (unsigned long long)dst_off, (*src)->size, (*dst)->size);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static void apply_signal(rs_coll* c, int peer, const rs_msg* m);
static void bad_message(rs_coll* c, int peer, const char* what, const rs_msg* m);

/* A put to this rank itself: a copy, then the signal. */
static ncclResult_t put_local(rs_coll* c, const rs_msg* m, const void* data) {
  if (m->mr != UINT32_MAX || m->size) {
    char* at = msg_bytes(c, m);
    if (at == NULL) {
      bad_message(c, c->rank, "put", m);
      return ncclInvalidArgument;
    }
    memmove(at, data, m->size);
  }
  if (m->op == RS_PUT_SIGNAL) apply_signal(c, c->rank, m);
  return ncclSuccess;
}

/* Send one message (and its data) to rank, completing request token (0: none) once written; a
 * put to this rank is applied here (and its request completed). */
static ncclResult_t send_msg(rs_coll* c, int rank, const rs_msg* m, const void* data,
                             uint64_t token) {
  if (rank == c->rank) {
    ncclResult_t r = put_local(c, m, data);
    if (r == ncclSuccess && token) rma_socket_complete(c, token, ncclSuccess);
    return r;
  }
  return rma_socket_send(c, rank, m, data, data ? m->size : 0, token);
}

/* Unlist and free a request the caller will not return. */
static void req_drop(rs_coll* c, rs_req* q) {
  pthread_mutex_lock(&c->lock);
  for (rs_req** at = &c->reqs; *at; at = &(*at)->next)
    if (*at == q) {
      *at = q->next;
      free(q);
      break;
    }
  pthread_mutex_unlock(&c->lock);
}

static ncclResult_t put_common(void* ctx, int context, uint64_t src_off, void* src_mh,
                               size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                               const rs_msg* sig, void** request, const char* fn) {
  rs_ctx* x = ctx_check(ctx, context, fn);
  if (x == NULL) return ncclInvalidArgument;
  rs_mr *src, *dst;
  ncclResult_t r = put_args(x, fn, src_off, src_mh, size, dst_off, dst_mh, rank, request, &src, &dst);
  if (r != ncclSuccess) return r;
  rs_msg m = {.op = RS_PUT, .mr = dst->id, .off = dst_off, .size = size};
  if (sig) {
    m.op = RS_PUT_SIGNAL;
    m.sig_mr = sig->sig_mr;
    m.sig_op = sig->sig_op;
    m.sig_off = sig->sig_off;
    m.sig_value = sig->sig_value;
  }
  rs_req* q = req_new(x->coll, (int)rank, 0, ncclSuccess);
  if (q == NULL) return ncclSystemError;
  r = send_msg(x->coll, (int)rank, &m, src->base + src_off, q->token);
  if (r != ncclSuccess) {
    req_drop(x->coll, q);
    NS_WARN("RMA/Socket: %s: rank %d to rank %u: %s", fn, x->coll->rank, rank,
            r == ncclRemoteError ? "the peer left" : "the send failed");
    return r;
  }
  *request = q;
  return ncclSuccess;
}

ncclResult_t rma_socket_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                             uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt,
                             void** request) {
  (void)opt;
  return put_common(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, NULL, request,
                    "iput");
}

ncclResult_t rma_socket_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                    size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                    uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                    bool strong, uint32_t opt, void** request) {
  (void)strong; /* every signal here is strong: one ordered stream per peer */
  (void)opt;
  rs_ctx* x = ctx_check(ctx, context, "iputSignal");
  if (x == NULL) return ncclInvalidArgument;
  if (op != NCCL_GIN_SIGNAL_OP_INC && op != NCCL_GIN_SIGNAL_OP_ADD) {
    NS_WARN("RMA/Socket: iputSignal: signalOp %u is neither NCCL_GIN_SIGNAL_OP_INC nor _ADD", op);
    return ncclInvalidArgument;
  }
  rs_mr* s = mr_check(x->coll, sig_mh, "iputSignal", "signalMhandle");
  if (s == NULL) return ncclInvalidArgument;
  if (sig_off % sizeof(uint64_t) != 0 || sig_off > s->size || s->size - sig_off < sizeof(uint64_t)) {
    NS_WARN("RMA/Socket: iputSignal: signal offset %llu is not an aligned 64-bit word inside "
            "the signal registration (%zu bytes)", (unsigned long long)sig_off, s->size);
    return ncclInvalidArgument;
  }
  rs_msg sig = {.sig_mr = s->id, .sig_op = op, .sig_off = sig_off, .sig_value = value};
  if (size == 0 && src_mh == NULL && dst_mh == NULL) { /* a signal alone */
    if (request == NULL || rank >= (uint32_t)x->coll->nranks) return ncclInvalidArgument;
    sig.op = RS_PUT_SIGNAL;
    sig.mr = UINT32_MAX;
    rs_req* q = req_new(x->coll, (int)rank, 0, ncclSuccess);
    if (q == NULL) return ncclSystemError;
    ncclResult_t r = send_msg(x->coll, (int)rank, &sig, NULL, q->token);
    if (r != ncclSuccess) {
      req_drop(x->coll, q);
      return r;
    }
    *request = q;
    return ncclSuccess;
  }
  return put_common(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, &sig, request,
                    "iputSignal");
}

ncclResult_t rma_socket_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt,
                             void** request) {
  (void)opt;
  rs_ctx* x = ctx_check(ctx, context, "iget");
  if (x == NULL) return ncclInvalidArgument;
  rs_mr *local, *remote;
  /* the local registration is the destination here, the remote one the source */
  ncclResult_t r = put_args(x, "iget", l_off, l_mh, size, r_off, r_mh, rank, request, &local, &remote);
  if (r != ncclSuccess) return r;
  if ((int)rank == x->coll->rank) {
    memmove(local->base + l_off, remote->base + r_off, size);
    rs_req* q = req_new(x->coll, (int)rank, 1, ncclSuccess);
    if (q == NULL) return ncclSystemError;
    *request = q;
    return ncclSuccess;
  }
  rs_req* q = req_new(x->coll, (int)rank, 0, ncclSuccess);
  if (q == NULL) return ncclSystemError;
  q->dst = local->base + l_off;
  q->size = size;
  rs_msg m = {.op = RS_GET, .mr = remote->id, .off = r_off, .size = size, .token = q->token};
  if ((r = send_msg(x->coll, (int)rank, &m, NULL, 0)) != ncclSuccess) {
    q->error = r;
    __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
  }
  *request = q;
  return ncclSuccess;
}

ncclResult_t rma_socket_iflush(void* ctx, int context, void* mhandle, uint32_t rank,
                               void** request) {
  (void)mhandle;
  rs_ctx* x = ctx_check(ctx, context, "iflush");
  if (x == NULL) return ncclInvalidArgument;
  if (request == NULL || rank >= (uint32_t)x->coll->nranks) {
    NS_WARN("RMA/Socket: iflush: bad argument (rank %u, request %p)", rank, (void*)request);
    return ncclInvalidArgument;
  }
  int local = (int)rank == x->coll->rank;
  rs_req* q = req_new(x->coll, (int)rank, local, ncclSuccess);
  if (q == NULL) return ncclSystemError;
  if (!local) {
    rs_msg m = {.op = RS_FLUSH, .token = q->token};
    ncclResult_t r = send_msg(x->coll, (int)rank, &m, NULL, 0);
    if (r != ncclSuccess) {
      q->error = r;
      __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
    }
  }
  *request = q;
  return ncclSuccess;
}

ncclResult_t rma_socket_test(void* coll, void* request, int* done) {
  rs_coll* c = rma_socket_coll_check(coll, "test");
  if (c == NULL) return ncclInvalidArgument;
  if (done == NULL) {
    NS_WARN("RMA/Socket: test: done is NULL");
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&c->lock);
  rs_req** at = &c->reqs;
  while (*at && *at != request) at = &(*at)->next;
  rs_req* q = *at;
  if (q == NULL) {
    pthread_mutex_unlock(&c->lock);
    NS_WARN("RMA/Socket: test: %p is not a pending request of this group", request);
    return ncclInvalidArgument;
  }
  *done = __atomic_load_n(&q->done, __ATOMIC_ACQUIRE);
  ncclResult_t r = ncclSuccess;
  if (*done) {
    r = q->error;
    *at = q->next;
    free(q);
  }
  pthread_mutex_unlock(&c->lock);
  return r;
}

ncclResult_t rma_socket_progress(void* ctx) {
  rs_ctx* x = ctx_check(ctx, 0, "rmaProgress");
  return x ? ncclSuccess : ncclInvalidArgument; /* the group's threads make progress */
}

ncclResult_t rma_socket_last_error(void* ctx, bool* has_error) {
  rs_ctx* x = ctx_check(ctx, 0, "queryLastError");
  if (x == NULL || has_error == NULL) return ncclInvalidArgument;
  *has_error = __atomic_load_n(&x->coll->error, __ATOMIC_ACQUIRE) != 0;
  return ncclSuccess;
}

/* ---- the receiver's side ---- */

static ncclResult_t drain(int fd, uint64_t n) {
  char scratch[4096];
  while (n > 0) {
    size_t k = n < sizeof scratch ? (size_t)n : sizeof scratch;
    ncclResult_t r = socket_recv_all(fd, scratch, k, RS_IO_TIMEOUT_MS);
    if (r != ncclSuccess) return r;
    n -= k;
  }
  return ncclSuccess;
}

static void bad_message(rs_coll* c, int peer, const char* what, const rs_msg* m) {
  NS_WARN("RMA/Socket: rank %d: rank %d's %s names registration %u offset %llu size %llu, "
          "outside every live registration here; dropped", c->rank, peer, what, m->mr,
          (unsigned long long)m->off, (unsigned long long)m->size);
  __atomic_store_n(&c->error, 1, __ATOMIC_RELEASE);
}

static void queue_reply(rs_coll* c, int peer, const rs_msg* m, const char* data) {
  rs_reply* r = calloc(1, sizeof *r);
  if (r == NULL) {
    __atomic_store_n(&c->error, 1, __ATOMIC_RELEASE);
    return;
  }
  r->peer = peer;
  r->msg = *m;
  r->data = data;
  pthread_mutex_lock(&c->lock);
  rs_reply** at = &c->replies;
  while (*at) at = &(*at)->next;
  *at = r;
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

void rma_socket_complete(rs_coll* c, uint64_t token, ncclResult_t err) {
  pthread_mutex_lock(&c->lock);
  for (rs_req* q = c->reqs; q; q = q->next)
    if (q->token == token) {
      q->error = err;
      __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
      break;
    }
  pthread_mutex_unlock(&c->lock);
}

static void apply_signal(rs_coll* c, int peer, const rs_msg* m) {
  pthread_mutex_lock(&c->lock);
  rs_mr* s = rma_socket_mr_by_id(c, m->sig_mr);
  uint64_t* word = NULL;
  if (s && m->sig_off <= s->size && s->size - m->sig_off >= sizeof(uint64_t))
    word = (uint64_t*)(void*)(s->base + m->sig_off);
  pthread_mutex_unlock(&c->lock);
  if (word == NULL) {
    rs_msg at = {.mr = m->sig_mr, .off = m->sig_off, .size = sizeof(uint64_t)};
    bad_message(c, peer, "signal", &at);
    return;
  }
  uint64_t add = m->sig_op == NCCL_GIN_SIGNAL_OP_INC ? 1 : m->sig_value;
  __atomic_fetch_add(word, add, __ATOMIC_RELEASE);
}

ncclResult_t rma_socket_apply(rs_coll* c, int peer, const rs_msg* m) {
  int fd = peer == c->rank ? -1 : c->fds[peer];
  switch (m->op) {
    case RS_PUT:
    case RS_PUT_SIGNAL: {
      if (m->mr != UINT32_MAX || m->size) {
        char* at = msg_bytes(c, m);
        if (at == NULL) {
          bad_message(c, peer, "put", m);
          return drain(fd, m->size);
        }
        /* The target's accesses to the window before it last called its library come before
         * this write: the peer put after hearing from that call, an order through another
         * process that TSan cannot see; weft releases each window at every call (comm_check). */
        WEFT_TSAN_ACQUIRE(at - m->off);
        ncclResult_t r = socket_recv_all(fd, at, m->size, RS_IO_TIMEOUT_MS);
        if (r != ncclSuccess) return r;
      }
      if (m->op == RS_PUT_SIGNAL) apply_signal(c, peer, m);
      return ncclSuccess;
    }
    case RS_GET: {
      const char* from = msg_bytes(c, m);
      rs_msg rep = {.op = RS_GET_REPLY, .size = from ? m->size : 0, .token = m->token,
                    .sig_op = from ? 0 : 1 /* 1: refused */};
      if (from == NULL) bad_message(c, peer, "get", m);
      queue_reply(c, peer, &rep, from);
      return ncclSuccess;
    }
    case RS_GET_REPLY: {
      pthread_mutex_lock(&c->lock);
      rs_req* q = c->reqs;
      while (q && q->token != m->token) q = q->next;
      char* dst = q && q->size == m->size ? q->dst : NULL;
      pthread_mutex_unlock(&c->lock);
      ncclResult_t r = dst ? socket_recv_all(fd, dst, m->size, RS_IO_TIMEOUT_MS) : drain(fd, m->size);
      if (r != ncclSuccess) return r;
      rma_socket_complete(c, m->token, (m->sig_op || dst == NULL) ? ncclRemoteError : ncclSuccess);
      return ncclSuccess;
    }
    case RS_FLUSH: {
      rs_msg ack = {.op = RS_FLUSH_ACK, .token = m->token};
      queue_reply(c, peer, &ack, NULL);
      return ncclSuccess;
    }
    case RS_FLUSH_ACK:
      rma_socket_complete(c, m->token, ncclSuccess);
      return ncclSuccess;
    case RS_BYE:
      rma_socket_peer_gone(c, peer, NULL);
      return ncclSuccess;
    default:
      NS_WARN("RMA/Socket: rank %d: unknown message %u from rank %d", c->rank, m->op, peer);
      return ncclRemoteError;
  }
}
