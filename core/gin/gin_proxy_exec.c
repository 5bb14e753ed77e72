/* Reading, executing and completing GFDs (gin_proxy.h; the format is
 * abi/gin/gin_proxy_v2_30.h). Per context and peer: read the next GFD once every qword's valid
 * bit is set, zero the slot, issue it to the backend; test issued ones; count a counter when
 * its GFD completed; advance cis over the completed prefix (a GFD that completes early waits
 * for those before it, so cis means "every GFD before this index completed"). */
#include <stdio.h>
#include <string.h>

#include "gin/gin_proxy_internal.h"
#include "util/check.h"
#include "util/log.h"

#define Q(name) NCCL_GIN_PROXY_V2_30_Q_##name
#define OP(name) NCCL_GIN_PROXY_V2_30_OP_##name

static const uint32_t known_ops = OP(PUT) | OP(WITH_INLINE) | OP(WITH_COUNTER) |
                                  OP(WITH_SIGNAL_INC) | OP(WITH_SIGNAL_ADD) | OP(VA_SIGNAL) |
                                  OP(GET) | OP(FLUSH);

static const char* op_name(uint32_t op) {
  if (op & OP(FLUSH)) return "flush";
  if (op & OP(GET)) return "get";
  if (op & OP(VA_SIGNAL)) return "VA signal";
  if (op & OP(WITH_INLINE)) return "putValue";
  if (op & (OP(WITH_SIGNAL_INC) | OP(WITH_SIGNAL_ADD))) return "put with signal";
  return "put";
}

static void gin_proxy_warn(gin_proxy* p, int x, int peer, uint32_t index, uint32_t op,
                           uint64_t size, const char* what, ncclResult_t r) {
  WARN("GIN proxy: rank %d, peer %d, context %d, GFD %u (%s, op %#x, %llu bytes): %s (%d)",
       p->cfg.rank, peer, x, index, op_name(op), op, (unsigned long long)size, what, (int)r);
}

/* Read the GFD at queue[idx] if the kernel finished writing it; zero the slot. */
static int read_gfd(gin_proxy* p, ncclGinProxyGfd_v2_30_t* slot, ncclGinProxyGfd_v2_30_t* out) {
  uint64_t first = __atomic_load_n(&slot->qword[0], __ATOMIC_ACQUIRE);
  if ((first & 1) == 0) return 0;
  out->qword[0] = first;
  for (int k = 1; k < NCCL_GIN_PROXY_V2_30_QWORDS; k++) {
    uint64_t v;
    /* The kernel stores the GFD in 16-byte pieces: the rest follows within a moment. */
    while (((v = __atomic_load_n(&slot->qword[k], __ATOMIC_ACQUIRE)) & 1) == 0)
      if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED) && !p->draining) return 0;
    out->qword[k] = v;
  }
  for (int k = 0; k < NCCL_GIN_PROXY_V2_30_QWORDS; k++)
    __atomic_store_n(&slot->qword[k], 0, __ATOMIC_RELAXED);
  return 1;
}

/* A put's ids and sizes against the communicator's: ncclInvalidUsage, logged, when one is past
 * them. Sets the slot's counter id. */
static ncclResult_t check_put(gin_proxy* p, int x, int peer, uint32_t index,
                              const ncclGinProxyGfd_v2_30_t* g, uint32_t op, uint64_t size,
                              gin_slot* s) {
  const gin_proxy_config* c = &p->cfg;
  char what[96] = "";
  if ((op & OP(WITH_INLINE)) && (size == 0 || size > 8))
    snprintf(what, sizeof what, "putValue of %llu bytes (1 to 8)", (unsigned long long)size);
  if ((op & OP(WITH_COUNTER)) &&
      (s->counter_id = ncclGinProxyV2_30CounterId(g)) >= (uint32_t)c->ncounters)
    snprintf(what, sizeof what, "counter %u past the communicator's %d", s->counter_id,
             c->ncounters);
  if ((op & (OP(WITH_SIGNAL_INC) | OP(WITH_SIGNAL_ADD))) &&
      ncclGinProxyV2_30SignalId(g) >= (uint32_t)c->nsignals)
    snprintf(what, sizeof what, "signal %u past the communicator's %d",
             ncclGinProxyV2_30SignalId(g), c->nsignals);
  if (what[0] == 0) return ncclSuccess;
  gin_proxy_warn(p, x, peer, index, op, size, what, ncclInvalidUsage);
  return ncclInvalidUsage;
}

/* Issue one GFD to the backend. Errors are logged here with the GFD's coordinates. */
static ncclResult_t issue(gin_proxy* p, int x, int peer, uint32_t index,
                          const ncclGinProxyGfd_v2_30_t* g, gin_slot* s) {
  const gin_proxy_config* c = &p->cfg;
  gin_context* ctx = &p->contexts[x];
  uint32_t op = ncclGinProxyV2_30Op(g);
  uint64_t size = ncclGinProxyV2_30Size(g);
  s->op = op;
  s->done = 0;
  s->waiting = 0;
  s->request = NULL;
  s->counter_id = 0;
  uint32_t version = ncclGinProxyV2_30Version(g);
  if (version != NCCL_GIN_PROXY_V2_30_GFD_VERSION) {
    gin_proxy_warn(p, x, peer, index, op, size,
                   "descriptor version is not 2 (the kernel was built against other NCCL "
                   "headers than 2.30's, which this proxy speaks)", ncclInvalidUsage);
    return ncclInvalidUsage;
  }
  if ((op & ~known_ops) != 0 || (op & (OP(PUT) | OP(VA_SIGNAL) | OP(GET) | OP(FLUSH))) == 0) {
    gin_proxy_warn(p, x, peer, index, op, size, "unknown operation", ncclInvalidUsage);
    return ncclInvalidUsage;
  }
  int sig_op = (op & OP(WITH_SIGNAL_INC)) ? NCCL_GIN_SIGNAL_OP_INC
               : (op & OP(WITH_SIGNAL_ADD)) ? NCCL_GIN_SIGNAL_OP_ADD
                                             : 0;
  uint64_t sig_value = ncclGinProxyV2_30SignalValue(g);
  int strong = ncclGinProxyV2_30Strong(g);
  ncclResult_t r;
  const char* call;
  if (!(op & (OP(GET) | OP(FLUSH) | OP(VA_SIGNAL))))
    WEFT_CHECK(check_put(p, x, peer, index, g, op, size, s));
  if (p->stage) {
    /* complete at the next test (no request): the source was copied out, reusable */
    r = gin_stage_issue(p, x, peer, index, g, s);
    if (r != ncclSuccess && r != ncclInProgress && r != ncclInvalidUsage)
      gin_proxy_warn(p, x, peer, index, op, size, "the staged send failed", r);
    return r;
  }
  if (op & OP(FLUSH)) {
    call = "iflush";
    r = c->rma->iflush(c->ctx, x, c->signals_mh, (uint32_t)peer, &s->request);
    if (r == ncclSuccess && s->request == NULL) s->done = 1;
  } else if (op & OP(GET)) {
    call = "iget";
    r = c->rma->iget(c->ctx, x, ncclGinProxyV2_30Word63(g, Q(SRC_OFF)),
                     (void*)(uintptr_t)ncclGinProxyV2_30Word63(g, Q(SRC_HANDLE)), size,
                     ncclGinProxyV2_30Word63(g, Q(DST_OFF)),
                     (void*)(uintptr_t)ncclGinProxyV2_30Word63(g, Q(DST_HANDLE)), (uint32_t)peer,
                     0, &s->request);
  } else if (op & OP(VA_SIGNAL)) {
    call = "iputSignal (VA signal)";
    if (sig_op == 0) {
      gin_proxy_warn(p, x, peer, index, op, size, "a VA signal without a signal operation",
                     ncclInvalidUsage);
      return ncclInvalidUsage;
    }
    r = c->rma->iputSignal(c->ctx, x, 0, NULL, 0, 0, NULL, (uint32_t)peer,
                           ncclGinProxyV2_30Word63(g, Q(VA_SIGNAL_OFF)),
                           (void*)(uintptr_t)ncclGinProxyV2_30Word63(g, Q(VA_SIGNAL_HANDLE)),
                           sig_value, (uint32_t)sig_op, strong, 0, &s->request);
  } else {
    uint64_t src_off;
    void* src_mh;
    if (op & OP(WITH_INLINE)) {
      /* Only the value's bytes count: a reused descriptor keeps stale bits beyond them. */
      uint64_t v = ncclGinProxyV2_30Inline(g);
      if (size < 8) v &= (UINT64_C(1) << (size * 8)) - 1;
      size_t at = (size_t)peer * c->queue_size + (index & (c->queue_size - 1));
      ctx->inlines[at] = v;
      src_off = at * sizeof(uint64_t);
      src_mh = ctx->inlines_mh;
    } else {
      src_off = ncclGinProxyV2_30Word63(g, Q(SRC_OFF));
      src_mh = (void*)(uintptr_t)ncclGinProxyV2_30Word63(g, Q(SRC_HANDLE));
    }
    uint64_t dst_off = ncclGinProxyV2_30Word63(g, Q(DST_OFF));
    void* dst_mh = (void*)(uintptr_t)ncclGinProxyV2_30Word63(g, Q(DST_HANDLE));
    if (sig_op == 0) {
      call = "iput";
      r = c->rma->iput(c->ctx, x, src_off, src_mh, size, dst_off, dst_mh, (uint32_t)peer, 0,
                       &s->request);
    } else {
      uint32_t id = ncclGinProxyV2_30SignalId(g);
      uint64_t sig_off = ((uint64_t)x * (uint64_t)c->nsignals + id) * sizeof(uint64_t);
      call = "iputSignal";
      r = c->rma->iputSignal(c->ctx, x, src_off, src_mh, size, dst_off, dst_mh, (uint32_t)peer,
                             sig_off, c->signals_mh, sig_value, (uint32_t)sig_op, strong, 0,
                             &s->request);
    }
  }
  if (r != ncclSuccess) {
    char what[64];
    snprintf(what, sizeof what, "the backend's %.30s failed", call);
    gin_proxy_warn(p, x, peer, index, op, size, what, r);
  }
  return r;
}

/* Test what is out on one queue; count counters; move cis over the completed prefix. */
static ncclResult_t complete(gin_proxy* p, int x, int peer, int* busy) {
  const gin_proxy_config* c = &p->cfg;
  gin_context* ctx = &p->contexts[x];
  uint32_t mask = c->queue_size - 1;
  gin_slot* slots = ctx->slots + (size_t)peer * c->queue_size;
  for (uint32_t i = ctx->completed[peer]; i != ctx->seen[peer]; i++) {
    gin_slot* s = &slots[i & mask];
    if (!s->done && !s->waiting) {
      int done = 0;
      if (s->request == NULL) {
        done = 1;
      } else {
        ncclResult_t r = c->rma->test(c->coll, s->request, &done);
        if (r != ncclSuccess) {
          gin_proxy_warn(p, x, peer, i, s->op, 0, "the backend's test failed", r);
          return r;
        }
      }
      if (done) {
        s->done = 1;
        *busy = 1;
        if (s->op & OP(WITH_COUNTER)) {
          /* The kernel resets a counter only while nothing is out on it: no lost update. */
          uint64_t* ctr = &c->counters[(size_t)x * c->ncounters + s->counter_id];
          __atomic_store_n(ctr, __atomic_load_n(ctr, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
        }
      }
    }
    if (s->done && i == ctx->completed[peer]) {
      ctx->completed[peer] = i + 1;
      p->outstanding--;
      __atomic_store_n(&c->cis[(size_t)x * c->nranks + peer], i + 1, __ATOMIC_RELEASE);
    }
  }
  return ncclSuccess;
}

static ncclResult_t pass_fail(gin_proxy* p, ncclResult_t r) {
  gin_proxy_fail(p, r);
  return r;
}

ncclResult_t gin_proxy_pass(gin_proxy* p, int* busy) {
  const gin_proxy_config* c = &p->cfg;
  *busy = 0;
  if (p->stage) {
    ncclResult_t r = gin_stage_pass(p, busy);
    if (r != ncclSuccess) return pass_fail(p, r);
  }
  for (int x = 0; x < c->ncontexts; x++) {
    gin_context* ctx = &p->contexts[x];
    for (int peer = 0; peer < c->nranks; peer++) {
      ncclResult_t r = complete(p, x, peer, busy);
      if (r != ncclSuccess) return pass_fail(p, r);
      if (p->draining) continue;
      uint32_t idx = ctx->seen[peer];
      ncclGinProxyGfd_v2_30_t* q =
          c->queues + ((size_t)x * c->nranks + peer) * c->queue_size + (idx & (c->queue_size - 1));
      ncclGinProxyGfd_v2_30_t g;
      if (!read_gfd(p, q, &g)) continue;
      ctx->seen[peer] = idx + 1;
      p->outstanding++;
      *busy = 1;
      r = issue(p, x, peer, idx, &g, &ctx->slots[(size_t)peer * c->queue_size +
                                                 (idx & (c->queue_size - 1))]);
      if (r == ncclInProgress) return ncclSuccess; /* staged: stopped while waiting for credit */
      if (r != ncclSuccess) return pass_fail(p, r);
    }
  }
  ncclResult_t r = c->rma->rmaProgress ? c->rma->rmaProgress(c->ctx) : ncclSuccess;
  if (r != ncclSuccess) {
    WARN("GIN proxy: rank %d: the backend's progress failed (%d)", c->rank, (int)r);
    return pass_fail(p, r);
  }
  if (p->outstanding > 0) *busy = 1;
  return ncclSuccess;
}
