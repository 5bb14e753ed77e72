/* The example's one-sided operations (example_rma.h): contexts, collective registration, put,
 * put with signal, get, flush, test, and the receiver's handling of each message. */
#include <stdlib.h>
#include <string.h>

#include "example_rma.h"

#define EXR_RCTX_MAGIC 0x6578727263747801ull

struct exr_ctx {
  uint64_t magic;
  struct exr_group* g;
  int ncontexts; /* one socket per peer carries every context: they need no state of their own */
};

ncclResult_t exr_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx) {
  struct exr_group* g = exr_group_check(coll, "createContext");
  if (g == NULL) return ncclInvalidArgument;
  if (config == NULL || ctx == NULL || config->nContexts < 1) {
    EX_WARN("RMA createContext: bad argument (config %p, nContexts %d, ctx %p)", (void*)config,
            config ? config->nContexts : 0, (void*)ctx);
    return ncclInvalidArgument;
  }
  struct exr_ctx* x = calloc(1, sizeof *x);
  if (x == NULL) return ncclSystemError;
  *x = (struct exr_ctx){EXR_RCTX_MAGIC, g, config->nContexts};
  *ctx = x;
  return ncclSuccess;
}

static struct exr_ctx* ctx_check(void* p, int context, const char* fn) {
  struct exr_ctx* x = p;
  if (x == NULL || x->magic != EXR_RCTX_MAGIC) {
    EX_WARN("RMA %s: %p is not a context createContext returned", fn, p);
    return NULL;
  }
  if (context < 0 || context >= x->ncontexts) {
    EX_WARN("RMA %s: context %d out of range (%d contexts)", fn, context, x->ncontexts);
    return NULL;
  }
  return x;
}

ncclResult_t exr_destroy_context(void* ctx) {
  struct exr_ctx* x = ctx_check(ctx, 0, "destroyContext");
  if (x == NULL) return ncclInvalidArgument;
  x->magic = 0;
  free(x);
  return ncclSuccess;
}

ncclResult_t exr_reg(void* coll, void* data, size_t size, int type, uint64_t flags, void** mh) {
  (void)flags; /* FORCE_SO: every write here is already in order */
  struct exr_group* g = exr_group_check(coll, "regMrSym");
  if (g == NULL) return ncclInvalidArgument;
  if (mh == NULL || (data == NULL && size > 0)) {
    EX_WARN("RMA regMrSym: bad argument (data %p, size %zu, mhandle %p)", data, size, (void*)mh);
    return ncclInvalidArgument;
  }
  if (type != NCCL_PTR_HOST) {
    EX_WARN("RMA regMrSym: memory type %d: this plugin moves host memory only", type);
    return ncclInvalidUsage;
  }
  struct exr_mr* m = calloc(1, sizeof *m);
  if (m == NULL) return ncclSystemError;
  pthread_mutex_lock(&g->lock);
  if (g->nmrs == g->cap_mrs) {
    uint32_t cap = g->cap_mrs ? g->cap_mrs * 2 : 16;
    struct exr_mr** grown = realloc(g->mrs, sizeof *grown * cap);
    if (grown == NULL) {
      pthread_mutex_unlock(&g->lock);
      free(m);
      return ncclSystemError;
    }
    g->mrs = grown;
    g->cap_mrs = cap;
  }
  *m = (struct exr_mr){g->nmrs, data, size};
  g->mrs[g->nmrs++] = m; /* ids are never reused: every rank counts the same calls */
  pthread_mutex_unlock(&g->lock);
  *mh = m;
  return ncclSuccess;
}

ncclResult_t exr_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t offset,
                            int fd, uint64_t flags, void** mh) {
  (void)coll, (void)data, (void)size, (void)type, (void)offset, (void)fd, (void)flags, (void)mh;
  EX_WARN("RMA regMrSymDmaBuf: this plugin moves host memory only");
  return ncclInvalidUsage;
}

/* A live registration of this group, or NULL and a WARN naming the argument. */
static struct exr_mr* mr_check(struct exr_group* g, void* p, const char* fn, const char* arg) {
  struct exr_mr* m = p;
  int ok = 0;
  pthread_mutex_lock(&g->lock);
  ok = m != NULL && m->id < g->nmrs && g->mrs[m->id] == m;
  pthread_mutex_unlock(&g->lock);
  if (!ok) EX_WARN("RMA %s: %s %p is not a live registration of this group", fn, arg, p);
  return ok ? m : NULL;
}

ncclResult_t exr_dereg(void* coll, void* mh) {
  struct exr_group* g = exr_group_check(coll, "deregMrSym");
  if (g == NULL) return ncclInvalidArgument;
  struct exr_mr* m = mr_check(g, mh, "deregMrSym", "mhandle");
  if (m == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&g->lock);
  g->mrs[m->id] = NULL;
  pthread_mutex_unlock(&g->lock);
  free(m);
  return ncclSuccess;
}

/* The address of [off, off+size) of registration id here, or NULL. */
static char* mr_range(struct exr_group* g, uint32_t id, uint64_t off, uint64_t size) {
  pthread_mutex_lock(&g->lock);
  struct exr_mr* m = id < g->nmrs ? g->mrs[id] : NULL;
  char* at = (m && off <= m->size && size <= m->size - off) ? m->base + off : NULL;
  pthread_mutex_unlock(&g->lock);
  return at;
}

/* A request, listed in the group until test reports it done. */
static struct exr_req* req_new(struct exr_group* g, int peer, int done) {
  struct exr_req* q = calloc(1, sizeof *q);
  if (q == NULL) return NULL;
  q->peer = peer;
  q->done = done;
  pthread_mutex_lock(&g->lock);
  q->token = g->next_token++;
  q->next = g->reqs;
  g->reqs = q;
  pthread_mutex_unlock(&g->lock);
  return q;
}

static void req_finish(struct exr_group* g, uint64_t token, ncclResult_t err) {
  pthread_mutex_lock(&g->lock);
  for (struct exr_req* q = g->reqs; q; q = q->next)
    if (q->token == token) {
      q->error = err;
      __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
      break;
    }
  pthread_mutex_unlock(&g->lock);
}

static void bad_message(struct exr_group* g, int peer, const char* what, uint32_t id,
                        uint64_t off, uint64_t size) {
  EX_WARN("RMA rank %d: rank %d's %s names registration %u offset %llu size %llu, outside "
          "every live registration here; dropped", g->rank, peer, what, id,
          (unsigned long long)off, (unsigned long long)size);
  __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
}

static void apply_signal(struct exr_group* g, int peer, const struct exr_msg* m) {
  uint64_t* word = (uint64_t*)(void*)mr_range(g, m->sig_mr, m->sig_off, sizeof(uint64_t));
  if (word == NULL) {
    bad_message(g, peer, "signal", m->sig_mr, m->sig_off, sizeof(uint64_t));
    return;
  }
  /* Release: whoever reads the new value also sees the data applied before it. */
  __atomic_fetch_add(word, m->sig_add, __ATOMIC_RELEASE);
}

/* Send a message (and its data) to rank; to this rank itself, apply it here. */
static ncclResult_t send_msg(struct exr_group* g, int rank, const struct exr_msg* m,
                             const void* data) {
  if (rank == g->rank) {
    if (m->mr != UINT32_MAX) {
      char* at = mr_range(g, m->mr, m->off, m->size);
      if (at == NULL) return ncclInvalidArgument;
      memmove(at, data, m->size);
    }
    if (m->has_signal) apply_signal(g, rank, m);
    return ncclSuccess;
  }
  pthread_mutex_lock(&g->lock);
  int dead = g->dead[rank];
  pthread_mutex_unlock(&g->lock);
  if (dead) {
    EX_WARN("RMA rank %d: rank %d left the group; nothing more goes to it", g->rank, rank);
    return ncclRemoteError;
  }
  pthread_mutex_lock(&g->send_lock[rank]);
  ncclResult_t r = exr_io(g->fds[rank], (void*)m, sizeof *m, 1);
  if (r == ncclSuccess && data && m->size) r = exr_io(g->fds[rank], (void*)data, m->size, 1);
  pthread_mutex_unlock(&g->send_lock[rank]);
  if (r != ncclSuccess) exr_peer_gone(g, rank, "a send failed");
  return r;
}

/* iput and iputSignal: check, send, and return a request that is already complete (the data
 * has left the source buffer). */
static ncclResult_t put(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                        uint64_t dst_off, void* dst_mh, uint32_t rank, struct exr_msg* m,
                        void** req, const char* fn) {
  struct exr_ctx* x = ctx_check(ctx, context, fn);
  if (x == NULL) return ncclInvalidArgument;
  struct exr_group* g = x->g;
  if (req == NULL || rank >= (uint32_t)g->nranks) {
    EX_WARN("RMA %s: bad argument (rank %u of %d, request %p)", fn, rank, g->nranks, (void*)req);
    return ncclInvalidArgument;
  }
  const char* src = NULL;
  m->mr = UINT32_MAX;
  if (!(m->has_signal && size == 0 && src_mh == NULL && dst_mh == NULL)) { /* else: signal alone */
    struct exr_mr *s = mr_check(g, src_mh, fn, "srcMhandle"), *d = NULL;
    if (s == NULL || (d = mr_check(g, dst_mh, fn, "dstMhandle")) == NULL) return ncclInvalidArgument;
    if (src_off > s->size || size > s->size - src_off || dst_off > d->size ||
        size > d->size - dst_off) {
      EX_WARN("RMA %s: %zu bytes at source offset %llu / destination offset %llu overrun the "
              "registrations (%zu / %zu bytes)", fn, size, (unsigned long long)src_off,
              (unsigned long long)dst_off, s->size, d->size);
      return ncclInvalidArgument;
    }
    m->mr = d->id;
    m->off = dst_off;
    m->size = size;
    src = s->base + src_off;
  }
  ncclResult_t r = send_msg(g, (int)rank, m, src);
  if (r != ncclSuccess) return r;
  struct exr_req* q = req_new(g, (int)rank, 1);
  if (q == NULL) return ncclSystemError;
  *req = q;
  return ncclSuccess;
}

ncclResult_t exr_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                      uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt; /* AggregateRequests: every request completes at once here anyway */
  struct exr_msg m = {.op = EXR_PUT};
  return put(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, &m, req, "iput");
}

ncclResult_t exr_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                             uint64_t dst_off, void* dst_mh, uint32_t rank, uint64_t sig_off,
                             void* sig_mh, uint64_t value, uint32_t op, bool strong, uint32_t opt,
                             void** req) {
  (void)strong, (void)opt; /* one ordered stream per peer: every signal is strong */
  struct exr_ctx* x = ctx_check(ctx, context, "iputSignal");
  if (x == NULL) return ncclInvalidArgument;
  if (op != NCCL_GIN_SIGNAL_OP_INC && op != NCCL_GIN_SIGNAL_OP_ADD) {
    EX_WARN("RMA iputSignal: signalOp %u is neither NCCL_GIN_SIGNAL_OP_INC nor _ADD", op);
    return ncclInvalidArgument;
  }
  struct exr_mr* s = mr_check(x->g, sig_mh, "iputSignal", "signalMhandle");
  if (s == NULL) return ncclInvalidArgument;
  if (sig_off % sizeof(uint64_t) || sig_off > s->size || s->size - sig_off < sizeof(uint64_t)) {
    EX_WARN("RMA iputSignal: signal offset %llu is not an aligned 64-bit word inside the signal "
            "registration (%zu bytes)", (unsigned long long)sig_off, s->size);
    return ncclInvalidArgument;
  }
  struct exr_msg m = {.op = EXR_PUT, .has_signal = 1, .sig_mr = s->id, .sig_off = sig_off,
                      .sig_add = op == NCCL_GIN_SIGNAL_OP_INC ? 1 : value};
  return put(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, &m, req, "iputSignal");
}

ncclResult_t exr_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                      uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  struct exr_ctx* x = ctx_check(ctx, context, "iget");
  if (x == NULL) return ncclInvalidArgument;
  struct exr_group* g = x->g;
  struct exr_mr *local = NULL, *remote = NULL;
  if (req == NULL || rank >= (uint32_t)g->nranks) {
    EX_WARN("RMA iget: bad argument (rank %u of %d, request %p)", rank, g->nranks, (void*)req);
    return ncclInvalidArgument;
  }
  if ((local = mr_check(g, l_mh, "iget", "localMhandle")) == NULL ||
      (remote = mr_check(g, r_mh, "iget", "remoteMhandle")) == NULL)
    return ncclInvalidArgument;
  if (l_off > local->size || size > local->size - l_off || r_off > remote->size ||
      size > remote->size - r_off) {
    EX_WARN("RMA iget: %zu bytes at local offset %llu / remote offset %llu overrun the "
            "registrations (%zu / %zu bytes)", size, (unsigned long long)l_off,
            (unsigned long long)r_off, local->size, remote->size);
    return ncclInvalidArgument;
  }
  int self = (int)rank == g->rank;
  if (self) memmove(local->base + l_off, remote->base + r_off, size);
  struct exr_req* q = req_new(g, (int)rank, self);
  if (q == NULL) return ncclSystemError;
  q->dst = local->base + l_off;
  q->size = size;
  *req = q;
  if (self) return ncclSuccess;
  /* Registration ids agree across ranks, so the local handle's id names the peer's copy. */
  struct exr_msg m = {.op = EXR_GET, .mr = remote->id, .off = r_off, .size = size,
                      .token = q->token};
  ncclResult_t r = send_msg(g, (int)rank, &m, NULL);
  if (r != ncclSuccess) req_finish(g, q->token, r); /* test reports it */
  return ncclSuccess;
}

ncclResult_t exr_iflush(void* ctx, int context, void* mh, uint32_t rank, void** req) {
  (void)mh;
  struct exr_ctx* x = ctx_check(ctx, context, "iflush");
  if (x == NULL) return ncclInvalidArgument;
  struct exr_group* g = x->g;
  if (req == NULL || rank >= (uint32_t)g->nranks) {
    EX_WARN("RMA iflush: bad argument (rank %u of %d, request %p)", rank, g->nranks, (void*)req);
    return ncclInvalidArgument;
  }
  int self = (int)rank == g->rank;
  struct exr_req* q = req_new(g, (int)rank, self);
  if (q == NULL) return ncclSystemError;
  *req = q;
  if (self) return ncclSuccess;
  /* The acknowledgement comes back after the target applied every earlier put from here. */
  struct exr_msg m = {.op = EXR_FLUSH, .token = q->token};
  ncclResult_t r = send_msg(g, (int)rank, &m, NULL);
  if (r != ncclSuccess) req_finish(g, q->token, r);
  return ncclSuccess;
}

ncclResult_t exr_test(void* coll, void* request, int* done) {
  struct exr_group* g = exr_group_check(coll, "test");
  if (g == NULL) return ncclInvalidArgument;
  if (done == NULL) {
    EX_WARN("RMA test: done is NULL");
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&g->lock);
  struct exr_req** at = &g->reqs;
  while (*at && *at != request) at = &(*at)->next;
  struct exr_req* q = *at;
  if (q == NULL) {
    pthread_mutex_unlock(&g->lock);
    EX_WARN("RMA test: %p is not a pending request of this group", request);
    return ncclInvalidArgument;
  }
  *done = __atomic_load_n(&q->done, __ATOMIC_ACQUIRE);
  ncclResult_t r = ncclSuccess;
  if (*done) { /* a done request is forgotten: testing it again is an error */
    r = q->error;
    *at = q->next;
    free(q);
  }
  pthread_mutex_unlock(&g->lock);
  return r;
}

ncclResult_t exr_progress(void* ctx) {
  return ctx_check(ctx, 0, "rmaProgress") ? ncclSuccess : ncclInvalidArgument; /* threads do it */
}

ncclResult_t exr_last_error(void* ctx, bool* has_error) {
  struct exr_ctx* x = ctx_check(ctx, 0, "queryLastError");
  if (x == NULL || has_error == NULL) return ncclInvalidArgument;
  *has_error = __atomic_load_n(&x->g->error, __ATOMIC_ACQUIRE) != 0;
  return ncclSuccess;
}

/* ---- the receiver's side ---- */

static ncclResult_t drain(int fd, uint64_t n) {
  char scratch[4096];
  while (n > 0) {
    size_t k = n < sizeof scratch ? (size_t)n : sizeof scratch;
    ncclResult_t r = exr_io(fd, scratch, k, 0);
    if (r != ncclSuccess) return r;
    n -= k;
  }
  return ncclSuccess;
}

static void queue_reply(struct exr_group* g, int peer, const struct exr_msg* m, const char* data) {
  struct exr_reply* r = calloc(1, sizeof *r);
  if (r == NULL) {
    __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    return;
  }
  *r = (struct exr_reply){NULL, peer, *m, data};
  pthread_mutex_lock(&g->lock);
  struct exr_reply** at = &g->replies;
  while (*at) at = &(*at)->next;
  *at = r; /* in arrival order: a flush's acknowledgement follows the gets before it */
  pthread_cond_signal(&g->cond);
  pthread_mutex_unlock(&g->lock);
}

ncclResult_t exr_apply(struct exr_group* g, int peer, const struct exr_msg* m) {
  int fd = g->fds[peer];
  switch (m->op) {
    case EXR_PUT: {
      if (m->mr != UINT32_MAX) {
        char* at = mr_range(g, m->mr, m->off, m->size);
        if (at == NULL) {
          bad_message(g, peer, "put", m->mr, m->off, m->size);
          return drain(fd, m->size);
        }
        ncclResult_t r = exr_io(fd, at, m->size, 0);
        if (r != ncclSuccess) return r;
      }
      if (m->has_signal) apply_signal(g, peer, m); /* after the whole of its data */
      return ncclSuccess;
    }
    case EXR_GET: {
      const char* from = mr_range(g, m->mr, m->off, m->size);
      struct exr_msg rep = {.op = EXR_GET_REPLY, .size = from ? m->size : 0, .token = m->token,
                            .refused = from == NULL};
      if (from == NULL) bad_message(g, peer, "get", m->mr, m->off, m->size);
      queue_reply(g, peer, &rep, from);
      return ncclSuccess;
    }
    case EXR_GET_REPLY: {
      pthread_mutex_lock(&g->lock);
      struct exr_req* q = g->reqs;
      while (q && q->token != m->token) q = q->next;
      char* dst = q && q->size == m->size ? q->dst : NULL;
      pthread_mutex_unlock(&g->lock);
      ncclResult_t r = dst ? exr_io(fd, dst, m->size, 0) : drain(fd, m->size);
      if (r != ncclSuccess) return r;
      req_finish(g, m->token, m->refused || dst == NULL ? ncclRemoteError : ncclSuccess);
      return ncclSuccess;
    }
    case EXR_FLUSH: {
      struct exr_msg ack = {.op = EXR_FLUSH_ACK, .token = m->token};
      queue_reply(g, peer, &ack, NULL);
      return ncclSuccess;
    }
    case EXR_FLUSH_ACK:
      req_finish(g, m->token, ncclSuccess);
      return ncclSuccess;
    case EXR_BYE:
      exr_peer_gone(g, peer, NULL);
      return ncclSuccess;
    default:
      EX_WARN("RMA rank %d: unknown message %u from rank %d", g->rank, m->op, peer);
      return ncclRemoteError;
  }
}
