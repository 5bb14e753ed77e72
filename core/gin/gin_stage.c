/* The proxy's staged mode (gin_proxy.h): GIN on windows the backend cannot register (GPU
 * memory behind a net that moves host memory only, such as weft's socket net).
 *
 * Each ordered pair of ranks has a ring of `slots` message slots in the target's registered
 * ring and a matching bounce slot at the source. Sending message k to a peer: wait until
 * k - credits[peer] < slots (applying what peers send meanwhile, so two proxies waiting on each
 * other still progress), wait until the bounce slot's previous send completed, write the header
 * and copy the bytes out of the window (copy_out) into it, and iputSignal it into the target's
 * slot k % slots with arrivals[me] += 1 at the target — the backend applies the arrival after
 * the bytes. The target applies messages from each peer in order: copy the bytes into the window
 * (copy_in), then add the kernel's signal into its signal memory (an indexed signal) or into
 * the window word (a VA signal, read-modify-write through the copy callbacks), then return one
 * credit (a signal alone: credits[me] += 1 at the source). So a signal is added after the
 * bytes of its put and of every earlier put from that rank have been copied in.
 *
 * A get is a request message (the peer's window and offset, the size, where the bytes go here,
 * a token naming the GFD) applied at the peer in order after every earlier put from this rank;
 * the peer answers after the pass that read it (a pass nested in a send waiting for credit
 * only queues requests) with reply messages copied out of its window, and this rank copies
 * them in and marks the GFD complete on the last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gin/gin_proxy_internal.h"
#include "util/check.h"
#include "util/log.h"

#define Q(name) NCCL_GIN_PROXY_V2_30_Q_##name
#define OP(name) NCCL_GIN_PROXY_V2_30_OP_##name

enum { STAGE_PUT = 1, STAGE_GET_REQ = 2, STAGE_GET_REPLY = 3 };
enum { STAGE_LAST = 1u << 0, STAGE_SIGNAL = 1u << 1, STAGE_VA_SIGNAL = 1u << 2 };

/* The header at the start of every slot (GIN_STAGE_HEADER bytes reserved). */
typedef struct {
  uint32_t kind, flags;
  uint64_t win, off, size; /* destination window handle, offset, bytes after the header */
  uint32_t ctx, sig_id, sig_op, unused;
  uint64_t sig_value;
  uint64_t va_win, va_off;
  uint64_t seq; /* the message's number from this source: checked at the target */
} stage_msg;
_Static_assert(sizeof(stage_msg) <= GIN_STAGE_HEADER, "stage header");

/* A get request to answer: the peer that asked and its message. */
typedef struct gin_stage_reply {
  int peer;
  stage_msg m;
} gin_stage_reply;

static size_t slot_at(const gin_stage* s, int peer, uint64_t k) {
  return ((size_t)peer * s->slots + (size_t)(k % s->slots)) * s->slot_bytes;
}

static ncclResult_t reg(gin_proxy* p, void* mem, size_t bytes, void** mh, const char* what) {
  ncclResult_t r = p->cfg.rma->regMrSym(p->cfg.coll, mem, bytes, NCCL_PTR_HOST, 0, mh);
  if (r != ncclSuccess) {
    WARN("GIN proxy: rank %d: staged mode: regMrSym of the %s (%zu bytes) failed (%d)",
         p->cfg.rank, what, bytes, (int)r);
    *mh = NULL;
  }
  return r;
}

ncclResult_t gin_stage_create(gin_proxy* p) {
  const gin_proxy_config* c = &p->cfg;
  if (c->copy_in == NULL || c->copy_out == NULL || (c->nsignals > 0 && c->signals_host == NULL)) {
    WARN("GIN proxy: rank %d: staged mode needs copy_in, copy_out and signals_host", c->rank);
    return ncclInvalidArgument;
  }
  gin_stage* s = calloc(1, sizeof *s);
  if (s == NULL) return ncclSystemError;
  p->stage = s;
  s->slots = 8;
  s->slot_bytes = 128 * 1024;
  size_t n = (size_t)c->nranks, ring = n * s->slots * s->slot_bytes;
  s->ring = calloc(1, ring);
  s->bounce = calloc(1, ring);
  s->words = calloc(2 * n, sizeof *s->words);
  s->sent = calloc(n, sizeof *s->sent);
  s->consumed = calloc(n, sizeof *s->consumed);
  s->slot_req = calloc(n * s->slots, sizeof *s->slot_req);
  if (!s->ring || !s->bounce || !s->words || !s->sent || !s->consumed || !s->slot_req) {
    WARN("GIN proxy: rank %d: staged mode: out of memory (%zu-byte rings)", c->rank, ring);
    return ncclSystemError;
  }
  /* Collective, in this order on every rank. */
  WEFT_CHECK(reg(p, s->ring, ring, &s->ring_mh, "receive rings"));
  WEFT_CHECK(reg(p, s->bounce, ring, &s->bounce_mh, "bounce slots"));
  WEFT_CHECK(reg(p, s->words, 2 * n * sizeof *s->words, &s->words_mh, "arrival and credit words"));
  return ncclSuccess;
}

void gin_stage_destroy(gin_proxy* p) {
  gin_stage* s = p->stage;
  if (s == NULL) return;
  void* mhs[3] = {s->words_mh, s->bounce_mh, s->ring_mh};
  for (int i = 0; i < 3; i++)
    if (mhs[i] && p->cfg.rma->deregMrSym(p->cfg.coll, mhs[i]) != ncclSuccess)
      WARN("GIN proxy: rank %d: staged mode: deregMrSym failed", p->cfg.rank);
  free(s->ring);
  free(s->bounce);
  free(s->words);
  free(s->sent);
  free(s->consumed);
  free(s->slot_req);
  free(s->pending);
  free(s->replies);
  free(s);
  p->stage = NULL;
}

ncclResult_t gin_proxy_window_add(gin_proxy* p, void* base, size_t size, uint64_t* handle) {
  WEFT_ARG_NONNULL("gin_proxy_window_add", p);
  WEFT_ARG_NONNULL("gin_proxy_window_add", handle);
  gin_stage* s = p->stage;
  if (s == NULL) {
    WARN("GIN proxy: rank %d: gin_proxy_window_add: the proxy is not in staged mode",
         p->cfg.rank);
    return ncclInvalidUsage;
  }
  int n = __atomic_load_n(&s->nwindows, __ATOMIC_ACQUIRE);
  if (n >= GIN_PROXY_MAX_WINDOWS || (base == NULL && size > 0)) {
    WARN("GIN proxy: rank %d: gin_proxy_window_add: %s (base %p, %zu bytes)", p->cfg.rank,
         n >= GIN_PROXY_MAX_WINDOWS ? "too many windows" : "bad window", base, size);
    return ncclInvalidArgument;
  }
  s->windows[n] = (gin_window){(uint64_t)(uintptr_t)base, size};
  __atomic_store_n(&s->nwindows, n + 1, __ATOMIC_RELEASE);
  *handle = (uint64_t)n + 1; /* 0 stays "no window" */
  return ncclSuccess;
}

/* The window memory of [off, off + n) in window `handle`, or NULL. */
static char* window_at(gin_stage* s, uint64_t handle, uint64_t off, uint64_t n) {
  int count = __atomic_load_n(&s->nwindows, __ATOMIC_ACQUIRE);
  if (handle == 0 || handle > (uint64_t)count) return NULL;
  const gin_window* w = &s->windows[handle - 1];
  if (off > w->size || n > w->size - off) return NULL;
  return (char*)(uintptr_t)(w->base + off);
}

static ncclResult_t pending_add(gin_stage* s, void* req) {
  if (req == NULL) return ncclSuccess;
  if (s->npending == s->cap_pending) {
    int cap = s->cap_pending ? 2 * s->cap_pending : 64;
    void** grown = realloc(s->pending, sizeof *grown * (size_t)cap);
    if (grown == NULL) return ncclSystemError;
    s->pending = grown;
    s->cap_pending = cap;
  }
  s->pending[s->npending++] = req;
  return ncclSuccess;
}

static ncclResult_t pending_test(gin_proxy* p) {
  gin_stage* s = p->stage;
  for (int i = 0; i < s->npending;) {
    int done = 0;
    ncclResult_t r = p->cfg.rma->test(p->cfg.coll, s->pending[i], &done);
    if (r != ncclSuccess) {
      WARN("GIN proxy: rank %d: staged mode: testing a credit return failed (%d)", p->cfg.rank,
           (int)r);
      return r;
    }
    if (done) s->pending[i] = s->pending[--s->npending];
    else i++;
  }
  return ncclSuccess;
}

/* A get request from peer: checked now, answered by serve_replies. */
static ncclResult_t queue_reply(gin_proxy* p, int peer, const stage_msg* m) {
  gin_stage* s = p->stage;
  if (m->size > 0 && window_at(s, m->win, m->off, m->size) == NULL) {
    WARN("GIN proxy: rank %d: staged mode: peer %d gets %llu bytes at offset %llu of window "
         "%llu, which this rank does not have (or not that far)", p->cfg.rank, peer,
         (unsigned long long)m->size, (unsigned long long)m->off, (unsigned long long)m->win);
    return ncclInvalidUsage;
  }
  if (s->nreplies == s->cap_replies) {
    int cap = s->cap_replies ? 2 * s->cap_replies : 16;
    gin_stage_reply* grown = realloc(s->replies, sizeof *grown * (size_t)cap);
    if (grown == NULL) return ncclSystemError;
    s->replies = grown;
    s->cap_replies = cap;
  }
  s->replies[s->nreplies++] = (gin_stage_reply){peer, *m};
  return ncclSuccess;
}

/* The last reply of a get this rank asked peer for: its GFD is complete. The token is the
 * context and the GFD's index in its queue to that peer. */
static ncclResult_t reply_done(gin_proxy* p, int peer, const stage_msg* m) {
  const gin_proxy_config* c = &p->cfg;
  uint32_t x = (uint32_t)(m->sig_value >> 32), index = (uint32_t)m->sig_value;
  gin_slot* slot = x < (uint32_t)c->ncontexts
                       ? &p->contexts[x].slots[(size_t)peer * c->queue_size +
                                               (index & (c->queue_size - 1))]
                       : NULL;
  if (slot == NULL || !slot->waiting) {
    WARN("GIN proxy: rank %d: staged mode: peer %d answered a get (context %u, GFD %u) this "
         "rank is not waiting for", c->rank, peer, x, index);
    return ncclRemoteError;
  }
  slot->waiting = 0;
  return ncclSuccess;
}

/* Apply message k from peer (header read). */
static ncclResult_t apply(gin_proxy* p, int peer, const stage_msg* m, const char* data) {
  const gin_proxy_config* c = &p->cfg;
  gin_stage* s = p->stage;
  int known = m->kind == STAGE_PUT || m->kind == STAGE_GET_REQ || m->kind == STAGE_GET_REPLY;
  if (!known || m->seq != s->consumed[peer] ||
      (m->kind != STAGE_GET_REQ && m->size > s->slot_bytes - GIN_STAGE_HEADER)) {
    WARN("GIN proxy: rank %d: staged mode: message %llu from peer %d is malformed (kind %u, "
         "number %llu, %llu bytes)", c->rank, (unsigned long long)s->consumed[peer], peer,
         m->kind, (unsigned long long)m->seq, (unsigned long long)m->size);
    return ncclRemoteError;
  }
  if (m->kind == STAGE_GET_REQ) return queue_reply(p, peer, m);
  if (m->size > 0) {
    char* at = window_at(s, m->win, m->off, m->size);
    if (at == NULL) {
      WARN("GIN proxy: rank %d: staged mode: peer %d put %llu bytes at offset %llu of window "
           "%llu, which this rank does not have (or not that far)", c->rank, peer,
           (unsigned long long)m->size, (unsigned long long)m->off, (unsigned long long)m->win);
      return ncclInvalidUsage;
    }
    ncclResult_t r = c->copy_in(c->copy_arg, at, data, m->size);
    if (r != ncclSuccess) {
      WARN("GIN proxy: rank %d: staged mode: copying %llu bytes from peer %d into window %llu "
           "failed (%d)", c->rank, (unsigned long long)m->size, peer, (unsigned long long)m->win,
           (int)r);
      return r;
    }
  }
  if (!(m->flags & STAGE_LAST)) return ncclSuccess;
  if (m->kind == STAGE_GET_REPLY) return reply_done(p, peer, m);
  uint64_t add = m->sig_op == NCCL_GIN_SIGNAL_OP_INC ? 1 : m->sig_value;
  if (m->flags & STAGE_SIGNAL) {
    if (m->ctx >= (uint32_t)c->ncontexts || m->sig_id >= (uint32_t)c->nsignals) {
      WARN("GIN proxy: rank %d: staged mode: peer %d signals context %u signal %u (this rank "
           "has %d and %d)", c->rank, peer, m->ctx, m->sig_id, c->ncontexts, c->nsignals);
      return ncclInvalidUsage;
    }
    __atomic_fetch_add(&c->signals_host[(size_t)m->ctx * c->nsignals + m->sig_id], add,
                       __ATOMIC_RELEASE);
  } else if (m->flags & STAGE_VA_SIGNAL) {
    char* at = window_at(s, m->va_win, m->va_off, sizeof(uint64_t));
    if (at == NULL || m->va_off % sizeof(uint64_t) != 0) {
      WARN("GIN proxy: rank %d: staged mode: peer %d's VA signal at offset %llu of window %llu "
           "is not an aligned word of a window here", c->rank, peer,
           (unsigned long long)m->va_off, (unsigned long long)m->va_win);
      return ncclInvalidUsage;
    }
    uint64_t v;
    WEFT_CHECK(c->copy_out(c->copy_arg, &v, at, sizeof v));
    v += add;
    WEFT_CHECK(c->copy_in(c->copy_arg, at, &v, sizeof v));
  }
  return ncclSuccess;
}

static ncclResult_t serve_replies(gin_proxy* p, int* busy);

ncclResult_t gin_stage_pass(gin_proxy* p, int* busy) {
  const gin_proxy_config* c = &p->cfg;
  gin_stage* s = p->stage;
  for (int peer = 0; peer < c->nranks; peer++) {
    uint64_t arrived = __atomic_load_n(&s->words[peer], __ATOMIC_ACQUIRE);
    while (s->consumed[peer] < arrived) {
      const char* slot = s->ring + slot_at(s, peer, s->consumed[peer]);
      stage_msg m;
      memcpy(&m, slot, sizeof m);
      WEFT_CHECK(apply(p, peer, &m, slot + GIN_STAGE_HEADER));
      s->consumed[peer]++;
      *busy = 1;
      void* req = NULL;
      ncclResult_t r = c->rma->iputSignal(c->ctx, 0, 0, NULL, 0, 0, NULL, (uint32_t)peer,
                                          ((size_t)c->nranks + c->rank) * sizeof(uint64_t),
                                          s->words_mh, 1, NCCL_GIN_SIGNAL_OP_INC, 1, 0, &req);
      if (r != ncclSuccess) {
        WARN("GIN proxy: rank %d: staged mode: returning a credit to peer %d failed (%d)",
             c->rank, peer, (int)r);
        return r;
      }
      WEFT_CHECK(pending_add(s, req));
    }
  }
  WEFT_CHECK(serve_replies(p, busy));
  return pending_test(p);
}

/* Send one message to peer: header m, then n bytes from src (window memory when from_window,
 * else host memory). */
static ncclResult_t send_msg(gin_proxy* p, int peer, stage_msg* m, const void* src, size_t n,
                             int from_window) {
  const gin_proxy_config* c = &p->cfg;
  gin_stage* s = p->stage;
  uint64_t k;
  /* a free slot at the target; apply what arrives meanwhile (a pass may answer gets, sending
   * to this peer too: k is read again after each) */
  while ((k = s->sent[peer]) - __atomic_load_n(&s->words[c->nranks + peer], __ATOMIC_ACQUIRE) >=
         s->slots) {
    int busy = 0;
    WEFT_CHECK(gin_stage_pass(p, &busy));
    WEFT_CHECK(c->rma->rmaProgress(c->ctx));
    if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED) && !p->draining) return ncclInProgress;
  }
  void** req = &s->slot_req[(size_t)peer * s->slots + k % s->slots];
  while (*req) { /* the bounce slot's last send */
    int done = 0;
    WEFT_CHECK(c->rma->test(c->coll, *req, &done));
    if (done) *req = NULL;
    else WEFT_CHECK(c->rma->rmaProgress(c->ctx));
  }
  size_t at = slot_at(s, peer, k);
  char* slot = s->bounce + at;
  m->seq = k;
  memcpy(slot, m, sizeof *m);
  if (n > 0) {
    if (from_window) WEFT_CHECK(c->copy_out(c->copy_arg, slot + GIN_STAGE_HEADER, src, n));
    else memcpy(slot + GIN_STAGE_HEADER, src, n);
  }
  ncclResult_t r = c->rma->iputSignal(c->ctx, 0, at, s->bounce_mh, GIN_STAGE_HEADER + n,
                                      slot_at(s, c->rank, k), s->ring_mh, (uint32_t)peer,
                                      (size_t)c->rank * sizeof(uint64_t), s->words_mh, 1,
                                      NCCL_GIN_SIGNAL_OP_INC, 1, 0, req);
  if (r != ncclSuccess) return r;
  s->sent[peer] = k + 1;
  return ncclSuccess;
}

/* Answer the queued get requests, in order: reply messages of the requested bytes, copied out
 * of the window, the token on the last. Not reentrant: the sends' credit waits run passes,
 * which only queue. */
static ncclResult_t serve_replies(gin_proxy* p, int* busy) {
  gin_stage* s = p->stage;
  if (s->serving) return ncclSuccess;
  s->serving = 1;
  ncclResult_t r = ncclSuccess;
  uint64_t chunk = s->slot_bytes - GIN_STAGE_HEADER;
  while (s->nreplies > 0 && r == ncclSuccess) {
    gin_stage_reply q = s->replies[0];
    memmove(s->replies, s->replies + 1, sizeof *s->replies * (size_t)(s->nreplies - 1));
    s->nreplies--;
    *busy = 1;
    const char* src = q.m.size ? window_at(s, q.m.win, q.m.off, q.m.size) : NULL;
    uint64_t done = 0;
    do {
      uint64_t n = q.m.size - done < chunk ? q.m.size - done : chunk;
      stage_msg part = {.kind = STAGE_GET_REPLY, .win = q.m.va_win, .off = q.m.va_off + done,
                        .size = n, .sig_value = q.m.sig_value};
      if (done + n == q.m.size) part.flags = STAGE_LAST;
      r = send_msg(p, q.peer, &part, src ? src + done : NULL, n, 1);
      done += n;
    } while (r == ncclSuccess && done < q.m.size);
  }
  s->serving = 0;
  return r == ncclInProgress ? ncclSuccess : r; /* stopped while waiting for credit */
}

ncclResult_t gin_stage_issue(gin_proxy* p, int x, int peer, uint32_t index,
                             const ncclGinProxyGfd_v2_30_t* g, gin_slot* slot) {
  const gin_proxy_config* c = &p->cfg;
  gin_stage* s = p->stage;
  uint32_t op = ncclGinProxyV2_30Op(g);
  uint64_t size = ncclGinProxyV2_30Size(g);
  const char* why = NULL;
  stage_msg m = {.kind = STAGE_PUT, .ctx = (uint32_t)x};
  if (op & OP(WITH_SIGNAL_INC)) m.sig_op = NCCL_GIN_SIGNAL_OP_INC;
  else if (op & OP(WITH_SIGNAL_ADD)) m.sig_op = NCCL_GIN_SIGNAL_OP_ADD;
  m.sig_value = ncclGinProxyV2_30SignalValue(g);
  if (op & OP(FLUSH)) return ncclSuccess; /* gets complete in queue order: cis says it */
  if (op & OP(GET)) {
    /* the peer's window (source) and offset, and where the bytes land here */
    stage_msg q = {.kind = STAGE_GET_REQ, .win = ncclGinProxyV2_30Word63(g, Q(SRC_HANDLE)),
                   .off = ncclGinProxyV2_30Word63(g, Q(SRC_OFF)), .size = size,
                   .va_win = ncclGinProxyV2_30Word63(g, Q(DST_HANDLE)),
                   .va_off = ncclGinProxyV2_30Word63(g, Q(DST_OFF)),
                   .sig_value = ((uint64_t)(uint32_t)x << 32) | index};
    if (size && window_at(s, q.va_win, q.va_off, size) == NULL) {
      WARN("GIN proxy: rank %d, peer %d, context %d, GFD %u: the get's destination (window "
           "%llu, offset %llu, %llu bytes) is not inside a window of this rank", c->rank, peer,
           x, index, (unsigned long long)q.va_win, (unsigned long long)q.va_off,
           (unsigned long long)size);
      return ncclInvalidUsage;
    }
    slot->waiting = 1;
    ncclResult_t r = send_msg(p, peer, &q, NULL, 0, 0);
    if (r != ncclSuccess) slot->waiting = 0;
    return r;
  }
  if (why == NULL && (op & OP(VA_SIGNAL))) {
    if (m.sig_op == 0) why = "a VA signal without a signal operation";
    m.flags = STAGE_LAST | STAGE_VA_SIGNAL;
    m.va_win = ncclGinProxyV2_30Word63(g, Q(VA_SIGNAL_HANDLE));
    m.va_off = ncclGinProxyV2_30Word63(g, Q(VA_SIGNAL_OFF));
    if (why == NULL) return send_msg(p, peer, &m, NULL, 0, 0);
  }
  if (why) {
    WARN("GIN proxy: rank %d, peer %d, context %d, GFD %u (op %#x, %llu bytes): %s", c->rank,
         peer, x, index, op, (unsigned long long)size, why);
    return ncclInvalidUsage;
  }
  if (m.sig_op) {
    m.flags |= STAGE_SIGNAL;
    m.sig_id = ncclGinProxyV2_30SignalId(g);
  }
  m.win = ncclGinProxyV2_30Word63(g, Q(DST_HANDLE));
  uint64_t dst_off = ncclGinProxyV2_30Word63(g, Q(DST_OFF));
  uint64_t value = 0;
  const char* src;
  int from_window = 1;
  if (op & OP(WITH_INLINE)) {
    value = ncclGinProxyV2_30Inline(g); /* size was checked to be 1..8 */
    src = (const char*)&value;          /* little-endian: the value's first bytes */
    from_window = 0;
  } else {
    src = size ? window_at(s, ncclGinProxyV2_30Word63(g, Q(SRC_HANDLE)),
                           ncclGinProxyV2_30Word63(g, Q(SRC_OFF)), size)
               : NULL;
    if (size && src == NULL) {
      WARN("GIN proxy: rank %d, peer %d, context %d, GFD %u: the source (window %llu, offset "
           "%llu, %llu bytes) is not inside a window of this rank", c->rank, peer, x, index,
           (unsigned long long)ncclGinProxyV2_30Word63(g, Q(SRC_HANDLE)),
           (unsigned long long)ncclGinProxyV2_30Word63(g, Q(SRC_OFF)), (unsigned long long)size);
      return ncclInvalidUsage;
    }
  }
  uint64_t chunk = s->slot_bytes - GIN_STAGE_HEADER, done = 0;
  do {
    uint64_t n = size - done < chunk ? size - done : chunk;
    stage_msg part = m;
    part.off = dst_off + done;
    part.size = n;
    if (done + n == size) part.flags |= STAGE_LAST;
    else part.flags &= ~(STAGE_SIGNAL | STAGE_LAST);
    WEFT_CHECK(send_msg(p, peer, &part, src ? src + done : NULL, n, from_window));
    done += n;
  } while (done < size);
  return ncclSuccess;
}
