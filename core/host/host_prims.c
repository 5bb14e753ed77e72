/* The primitive on host memory, for Simple and LL (see plan.h and transport/conn.h).
 *
 * A step is all-or-nothing: first every receive slot must hold its data and every send slot
 * must be free; then the inputs are combined into one output (the local dst when there is
 * one, else the first send slot; LL goes through a scratch buffer), copied to the other
 * outputs, and the FIFO counters published. Simple reduces straight from the receive slot into
 * the user buffer or the send slot, so a step costs one pass per output at most. The first step
 * of a work item on each connection leads with the op's signature (host_sig.c): the sender
 * writes it before the data, the receiver checks it before it uses any byte. */
#include <string.h>

#include "comm/comm.h"
#include "host/host.h"
#include "host/reduce.h"
#include "util/check.h"
#include "util/names.h"

/* ---- LL lines: {u32 data, u32 flag} halves, each one 8-byte atomic ---- */

static uint64_t* ll_lines(const weft_conn* c) { return (uint64_t*)conn_slot(c, c->step); }

static size_t ll_ready_lines(const weft_conn* c, size_t from, size_t nlines) {
  const uint64_t* l = ll_lines(c);
  uint32_t flag = (uint32_t)(c->step + 1);
  size_t i = from;
  for (; i < nlines; i++) {
    uint64_t a = __atomic_load_n(&l[2 * i], __ATOMIC_RELAXED);
    uint64_t b = __atomic_load_n(&l[2 * i + 1], __ATOMIC_RELAXED);
    if ((uint32_t)(a >> 32) != flag || (uint32_t)(b >> 32) != flag) break;
  }
  return i;
}

#define SIG_LINES (WEFT_CONN_SIG_BYTES / WEFT_LL_LINE_PAYLOAD)

/* LL lines from line `from` on hold bytes of data. */
static void ll_unpack(const weft_conn* c, size_t from, char* out, size_t bytes) {
  const uint64_t* l = ll_lines(c) + 2 * from;
  size_t full = bytes / WEFT_LL_LINE_PAYLOAD;
  for (size_t i = 0; i < full; i++) {
    uint32_t d[2];
    d[0] = (uint32_t)__atomic_load_n(&l[2 * i], __ATOMIC_RELAXED);
    d[1] = (uint32_t)__atomic_load_n(&l[2 * i + 1], __ATOMIC_RELAXED);
    memcpy(out + i * WEFT_LL_LINE_PAYLOAD, d, sizeof d);
  }
  size_t rem = bytes % WEFT_LL_LINE_PAYLOAD;
  if (rem) {
    uint32_t d[2];
    d[0] = (uint32_t)__atomic_load_n(&l[2 * full], __ATOMIC_RELAXED);
    d[1] = (uint32_t)__atomic_load_n(&l[2 * full + 1], __ATOMIC_RELAXED);
    memcpy(out + full * WEFT_LL_LINE_PAYLOAD, d, rem);
  }
}

static void ll_pack(weft_conn* c, size_t from, const char* in, size_t bytes) {
  uint64_t* l = ll_lines(c) + 2 * from;
  uint64_t flag = (uint64_t)(uint32_t)(c->step + 1) << 32;
  size_t n = ll_lines_for(bytes);
  for (size_t i = 0; i < n; i++) {
    uint32_t d[2] = {0, 0};
    size_t off = i * WEFT_LL_LINE_PAYLOAD;
    if (off < bytes)
      memcpy(d, in + off, bytes - off < WEFT_LL_LINE_PAYLOAD ? bytes - off : WEFT_LL_LINE_PAYLOAD);
    __atomic_store_n(&l[2 * i], (uint64_t)d[0] | flag, __ATOMIC_RELAXED);
    __atomic_store_n(&l[2 * i + 1], (uint64_t)d[1] | flag, __ATOMIC_RELAXED);
  }
}

/* ---- readiness ---- */

static int conn_failed(weft_work* w, weft_conn* c, ncclResult_t* res) {
  int e = __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
  if (e == ncclSuccess) {
    int why = __atomic_load_n(&c->ctrl->broken, __ATOMIC_ACQUIRE);
    if (why == 0) return 0;
    WARN("rank %d: %s (seq %llu) cannot go on: rank %d %s (connection %s it, channel %d)",
         w->rank, weft_func_name(w->op->func), (unsigned long long)w->op->seq, c->peer,
         why == WEFT_CONN_BROKEN_ABORT    ? "aborted its communicator"
         : why == WEFT_CONN_BROKEN_CLOSED ? "destroyed its communicator"
                                          : "failed an operation on this connection",
         c->is_send ? "to" : "from", c->channel);
    e = ncclRemoteError;
    __atomic_store_n(&c->error, e, __ATOMIC_RELEASE);
    *res = (ncclResult_t)e;
    return 1;
  }
  WARN("rank %d: %s (seq %llu) cannot go on: the connection %s rank %d (channel %d) failed "
       "(%s)",
       w->rank, weft_func_name(w->op->func), (unsigned long long)w->op->seq,
       c->is_send ? "to" : "from", c->peer, c->channel, weft_result_str((ncclResult_t)e));
  *res = (ncclResult_t)e;
  return 1;
}

/* 1 ready, 0 not yet, -1 failed (a signature or size that does not match). */
static int recv_ready_now(weft_work* w, int idx, size_t bytes, int sig, int ll,
                          ncclResult_t* res) {
  weft_conn* c = w->conns[idx];
  if (!ll || (c->flags & WEFT_CONN_LL_TAIL)) {
    if (__atomic_load_n(&c->ctrl->tail, __ATOMIC_ACQUIRE) <= c->step) return 0;
  }
  if (sig) bytes += WEFT_CONN_SIG_BYTES;
  if (!ll) {
    if (sig && host_sig_check(w, c, conn_slot(c, c->step), res)) return -1;
    int64_t got = __atomic_load_n(&c->ctrl->sizes[c->step % WEFT_NSTEPS], __ATOMIC_RELAXED);
    if ((size_t)got != bytes) {
      WARN("rank %d: %s (seq %llu) received %lld bytes from rank %d on channel %d where it "
           "expected %zu: do all ranks pass the same count and datatype?",
           w->rank, weft_func_name(w->op->func), (unsigned long long)w->op->seq,
           (long long)got, c->peer, c->channel, bytes);
      *res = ncclInvalidUsage;
      return -1;
    }
    return 1;
  }
  size_t nlines = ll_lines_for(bytes);
  if (sig && w->ll_ready[idx] < SIG_LINES) { /* the signature first: it says how much follows */
    char s[WEFT_CONN_SIG_BYTES] = {0};
    if (ll_ready_lines(c, 0, 1) != 1) return 0;
    if (ll_ready_lines(c, 1, SIG_LINES) != SIG_LINES) {
      /* Line 0 holds the magic: a step that is no op's start is an error now, not a wait for
       * lines that will never come. */
      ll_unpack(c, 0, s, WEFT_LL_LINE_PAYLOAD);
      if (!host_sig_magic_ok(s) && host_sig_check(w, c, s, res)) return -1;
      return 0;
    }
    ll_unpack(c, 0, s, sizeof s);
    if (host_sig_check(w, c, s, res)) return -1;
    w->ll_ready[idx] = SIG_LINES;
  }
  /* The producer writes lines in order: poll the last one alone until it lands, rather than
   * pulling lines the producer is still writing back and forth between caches. Then every
   * line is checked (the order of stores is not what makes a line valid, its flag is). */
  if (w->ll_ready[idx] < nlines - 1 && ll_ready_lines(c, nlines - 1, nlines) != nlines)
    return 0;
  size_t ready = ll_ready_lines(c, w->ll_ready[idx], nlines);
  w->ll_ready[idx] = (uint32_t)ready;
  return ready == nlines;
}

static int conn_marked(const weft_conn* c) {
  return __atomic_load_n(&c->error, __ATOMIC_ACQUIRE) != ncclSuccess ||
         __atomic_load_n(&c->ctrl->broken, __ATOMIC_ACQUIRE) != 0;
}

/* 1 ready, 0 not yet, -1 failed. Data that arrived is used even when the connection failed
 * later: only a wait on a failed connection is an error. A peer publishes its last data before
 * it marks the connection (release, then acquire here), so a look that missed the data and then
 * saw the mark looks once more before it calls the wait failed: a peer that sent everything and
 * destroyed its communicator at once is no error. */
static int recv_ready(weft_work* w, int idx, size_t bytes, int sig, int ll, ncclResult_t* res) {
  int r = recv_ready_now(w, idx, bytes, sig, ll, res);
  if (r != 0 || !conn_marked(w->conns[idx])) return r;
  r = recv_ready_now(w, idx, bytes, sig, ll, res);
  if (r != 0) return r;
  return conn_failed(w, w->conns[idx], res) ? -1 : 0;
}

static int send_ready(weft_work* w, int idx, ncclResult_t* res) {
  weft_conn* c = w->conns[idx];
  if (conn_failed(w, c, res)) return -1;
  return c->step < __atomic_load_n(&c->ctrl->head, __ATOMIC_ACQUIRE) + WEFT_NSTEPS;
}

/* ---- the combination ---- */

/* Inputs of a step at an element offset. */
typedef struct {
  const char* in[WEFT_PRIM_MAX_PEERS];
  const char* src;
} step_inputs;

static void combine(const weft_op* op, const weft_prim* p, char* out, const step_inputs* x,
                    size_t n) {
  const weft_redop* r = &op->redop;
  size_t bytes = n * op->elem;
  int pre = p->pre && host_redop_has_prepare(r);
  int post = p->post && host_redop_has_finish(r);
  if (!p->reduce) {
    const char* v = x->src ? x->src : x->in[0];
    if (pre) {
      host_prepare(r, out, v, n);
      if (post) host_finish(r, out, out, n);
    } else if (post) {
      host_finish(r, out, v, n);
    } else if (out != v) {
      memmove(out, v, bytes);
    }
    return;
  }
  /* A reduction has at least two inputs, combined left to right: the receive slots in order,
   * with the local src (its pre-op applied once) after the first src_at of them. */
  const char* seq[WEFT_PRIM_MAX_PEERS + 1];
  int nin = 0, si = -1;
  for (int i = 0; i < p->nrecv; i++) {
    if (x->src && i == p->src_at) seq[si = nin++] = x->src;
    seq[nin++] = x->in[i];
  }
  if (x->src && si < 0) seq[si = nin++] = x->src;
  if (nin < 2) { /* nothing to combine with: a copy */
    weft_prim q = *p;
    q.reduce = 0;
    combine(op, &q, out, x, n);
    return;
  }
  /* The first two inputs are one commutative combination; the src among them is prepared. */
  if (si == 0 || si == 1) {
    if (pre)
      host_reduce_prepare(r, out, seq[1 - si], x->src, n);
    else
      host_reduce(r, out, seq[1 - si], x->src, n);
  } else {
    host_reduce(r, out, seq[0], seq[1], n);
  }
  for (int k = 2; k < nin; k++) {
    if (k == si && pre)
      host_reduce_prepare(r, out, out, x->src, n);
    else
      host_reduce(r, out, seq[k], out, n);
  }
  if (post) host_finish(r, out, out, n);
}

/* Bytes combined at a time when the result also goes to other outputs: small enough that the
 * copies read it back from L1/L2 rather than from memory. */
#define COPY_BLOCK_BYTES (16 * 1024)

/* Combine into out and copy the result to the nextra other outputs. */
static void combine_and_copy(const weft_op* op, const weft_prim* p, char* out,
                             const step_inputs* x, char* const* extra, int nextra) {
  size_t e = op->elem, n = p->nelem;
  /* A src that enters after the second input would be overwritten by the partial results
   * before it is read when it is out itself (in place): combine a block at a time elsewhere. */
  if (p->reduce && x->src == out && p->src_at >= 2) {
    char bounce[COPY_BLOCK_BYTES];
    size_t blk = COPY_BLOCK_BYTES / e;
    for (size_t off = 0; off < n; off += blk) {
      size_t k = n - off < blk ? n - off : blk;
      step_inputs y;
      for (int i = 0; i < p->nrecv; i++) y.in[i] = x->in[i] + off * e;
      y.src = x->src + off * e;
      combine(op, p, bounce, &y, k);
      memcpy(out + off * e, bounce, k * e);
      for (int j = 0; j < nextra; j++) memcpy(extra[j] + off * e, bounce, k * e);
    }
    return;
  }
  if (nextra == 0) {
    combine(op, p, out, x, n);
    return;
  }
  size_t blk = COPY_BLOCK_BYTES / e;
  for (size_t off = 0; off < n; off += blk) {
    size_t k = n - off < blk ? n - off : blk;
    step_inputs y;
    for (int i = 0; i < p->nrecv; i++) y.in[i] = x->in[i] + off * e;
    y.src = x->src ? x->src + off * e : NULL;
    combine(op, p, out + off * e, &y, k);
    for (int j = 0; j < nextra; j++) memcpy(extra[j] + off * e, out + off * e, k * e);
  }
}

int host_prim_try(weft_work* w, const weft_prim* p, char* const* scratch, ncclResult_t* res) {
  const weft_op* op = w->op;
  if (p->netcoll) { /* CollNet: the plugin's reduction across the hosts' leaders */
    w->blocked = -1;
    if (w->netcoll == NULL) {
      WARN("rank %d: %s (seq %llu) has a CollNet step but no CollNet group", w->rank,
           weft_func_name(op->func), (unsigned long long)op->seq);
      *res = ncclInternalError;
      return -1;
    }
    return w->netcoll->step(w->netcoll, w, p->dst, p->nelem, res);
  }
  size_t bytes = p->nelem * op->elem;
  int ll = op->proto == NCCL_PROTO_LL;
  for (int i = 0; i < p->nrecv; i++) {
    int sig = !(w->sig_done & (1u << p->recv[i]));
    int r = recv_ready(w, p->recv[i], bytes, sig, ll, res);
    if (r <= 0) {
      w->blocked = p->recv[i];
      return r;
    }
  }
  for (int i = 0; i < p->nsend; i++) {
    int r = send_ready(w, p->send[i], res);
    if (r <= 0) {
      w->blocked = p->send[i];
      return r;
    }
  }
  w->blocked = -1;

  step_inputs x;
  x.src = p->src;
  for (int i = 0; i < p->nrecv; i++) {
    weft_conn* c = w->conns[p->recv[i]];
    int sig = !(w->sig_done & (1u << p->recv[i]));
    if (ll) {
      ll_unpack(c, sig ? SIG_LINES : 0, scratch[i], bytes);
      x.in[i] = scratch[i];
    } else {
      x.in[i] = conn_slot(c, c->step) + (sig ? WEFT_CONN_SIG_BYTES : 0);
    }
  }
  char* out = NULL;
  int first_send_is_out = 0;
  if (p->dst) {
    out = p->dst;
  } else if (p->nsend) {
    if (ll) {
      out = scratch[WEFT_PRIM_MAX_PEERS];
    } else {
      weft_conn* c = w->conns[p->send[0]];
      out = conn_slot(c, c->step) + (w->sig_done & (1u << p->send[0]) ? 0 : WEFT_CONN_SIG_BYTES);
      first_send_is_out = 1;
    }
  }
  if (out && bytes) {
    char* extra[WEFT_PRIM_MAX_PEERS];
    int nextra = 0;
    if (!ll)
      for (int i = first_send_is_out; i < p->nsend; i++) {
        weft_conn* c = w->conns[p->send[i]];
        int sig = !(w->sig_done & (1u << p->send[i]));
        extra[nextra++] = conn_slot(c, c->step) + (sig ? WEFT_CONN_SIG_BYTES : 0);
      }
    combine_and_copy(op, p, out, &x, extra, nextra);
  }

  for (int i = 0; i < p->nsend; i++) {
    weft_conn* c = w->conns[p->send[i]];
    int sig = !(w->sig_done & (1u << p->send[i]));
    size_t wire = bytes + (sig ? WEFT_CONN_SIG_BYTES : 0);
    if (ll) {
      if (sig) {
        char s[WEFT_CONN_SIG_BYTES];
        host_sig_write(w, s);
        ll_pack(c, 0, s, sizeof s);
      }
      if (!sig || bytes) ll_pack(c, sig ? SIG_LINES : 0, out, bytes);
      wire = ll_lines_for(wire) * WEFT_LL_LINE_BYTES;
    } else if (sig) {
      host_sig_write(w, conn_slot(c, c->step));
    }
    __atomic_store_n(&c->ctrl->sizes[c->step % WEFT_NSTEPS], (int64_t)wire, __ATOMIC_RELAXED);
    c->step++;
    __atomic_store_n(&c->ctrl->tail, c->step, __ATOMIC_RELEASE);
    w->sig_done |= 1u << p->send[i];
  }
  for (int i = 0; i < p->nrecv; i++) {
    weft_conn* c = w->conns[p->recv[i]];
    w->ll_ready[p->recv[i]] = 0;
    w->sig_done |= 1u << p->recv[i];
    c->step++;
    __atomic_store_n(&c->ctrl->head, c->step, __ATOMIC_RELEASE);
  }
  return 1;
}
