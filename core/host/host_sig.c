/* The op signature the host executor puts at the head of the first step an operation sends on
 * each connection (WEFT_CONN_SIG_BYTES, transport/conn.h): what the operation is (function,
 * sequence number, count, datatype, reduction, root, algorithm, protocol, channels). The
 * receiving end compares it with its own operation before it uses any byte, so a count,
 * datatype, reduction or root that differs between two ranks, a send matched by a receive of
 * another size, or steps left over from an earlier mismatch are an ncclInvalidUsage naming the
 * peer and both sides' arguments, not silent truncation or wrong results. It costs 32 bytes
 * per operation and connection, carried in a step that goes anyway (no extra round trip).
 *
 * Two ranks whose arguments differ so much that they chose different protocols meet on
 * different connections; a receive that waits is then checked against the other protocol's
 * connection of the same peer and channel (host_sig_check_sibling): a signature waiting there
 * that no local operation will read is the peer's side of this mismatch. This needs both
 * protocols' connections to exist already (an application after warm-up; a connection only one
 * side sets up ends in a setup timeout instead) and, over the net, catches nothing: the proxy
 * posts a connection's receives only for operations that expect them. */
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "host/host.h"
#include "util/check.h"
#include "util/names.h"

#define SIG_MAGIC 0x67697377u /* "wsig" */

typedef struct {
  uint32_t magic;
  uint8_t func, dtype, redop, proto;
  uint8_t algo, nchannels;
  uint16_t pad;
  int32_t root; /* Broadcast and Reduce; -1 otherwise */
  uint64_t count;
  uint64_t seq;
} host_sig;
_Static_assert(sizeof(host_sig) == WEFT_CONN_SIG_BYTES, "the signature fills its bytes");

static int is_p2p(int func) { return func == ncclFuncSend || func == ncclFuncRecv; }
static int is_reduction(int func) {
  return func == ncclFuncAllReduce || func == ncclFuncReduce || func == ncclFuncReduceScatter;
}

/* The signature op's sender writes (for a Recv: what a matching sender writes). */
static void sig_of(const weft_op* op, host_sig* s) {
  memset(s, 0, sizeof *s);
  s->magic = SIG_MAGIC;
  s->func = (uint8_t)(op->func == ncclFuncRecv ? ncclFuncSend : op->func);
  s->dtype = (uint8_t)op->dtype;
  s->redop = is_reduction(op->func) ? (uint8_t)op->redop.kind : 0xff;
  s->proto = (uint8_t)op->proto;
  s->algo = (uint8_t)op->algo;
  s->nchannels = (uint8_t)op->nchannels;
  s->root = (op->func == ncclFuncBroadcast || op->func == ncclFuncReduce) ? op->root : -1;
  s->count = op->count;
  s->seq = op->seq;
}

int host_sig_magic_ok(const void* wire) {
  uint32_t m;
  memcpy(&m, wire, sizeof m);
  return m == SIG_MAGIC;
}

void host_sig_write(const weft_work* w, void* slot) {
  host_sig s;
  sig_of(w->op, &s);
  memcpy(slot, &s, sizeof s);
}

static const char* red_name(int kind) {
  switch (kind) {
    case WEFT_RED_SUM: return "sum";
    case WEFT_RED_PROD: return "prod";
    case WEFT_RED_MAX: return "max";
    case WEFT_RED_MIN: return "min";
    case WEFT_RED_PREMULSUM: return "premulsum/avg";
    case WEFT_RED_SUMPOSTDIV: return "avg";
    case WEFT_RED_CUSTOM: return "custom";
    default: return "-";
  }
}

static void describe(const host_sig* s, char* buf, size_t len) {
  size_t elem = dtype_size((ncclDataType_t)s->dtype);
  if (s->func == ncclFuncSend) {
    snprintf(buf, len, "%llu x %s (%llu bytes)", (unsigned long long)s->count,
             dtype_name((ncclDataType_t)s->dtype), (unsigned long long)(s->count * elem));
    return;
  }
  int n = snprintf(buf, len, "%s #%llu (count %llu, %s", weft_func_name(s->func),
                   (unsigned long long)s->seq, (unsigned long long)s->count,
                   dtype_name((ncclDataType_t)s->dtype));
  if (n > 0 && (size_t)n < len && s->redop != 0xff)
    n += snprintf(buf + n, len - (size_t)n, ", %s", red_name(s->redop));
  if (n > 0 && (size_t)n < len && s->root >= 0)
    n += snprintf(buf + n, len - (size_t)n, ", root %d", s->root);
  if (n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, ", %s/%s on %d channel(s))",
             s->algo == NCCL_ALGO_TREE ? "Tree" : "Ring", weft_proto_name(s->proto),
             s->nchannels);
}

/* 0 when got (what the peer sent) matches what w expects; else WARN and ncclInvalidUsage. */
static int compare(const weft_work* w, const weft_conn* c, const host_sig* got,
                   const char* where, ncclResult_t* res) {
  host_sig want;
  sig_of(w->op, &want);
  const weft_op* op = w->op;
  char mine[160], theirs[160];
  if (got->magic != SIG_MAGIC) {
    WARN("rank %d: %s (seq %llu) expected rank %d to start an operation on channel %d and got "
         "other data: the two ranks' operations are out of step (an earlier send/receive or "
         "collective of another size?)",
         w->rank, weft_func_name(op->func), (unsigned long long)op->seq, c->peer, c->channel);
    *res = ncclInvalidUsage;
    return -1;
  }
  int same;
  if (is_p2p(op->func))
    same = got->func == ncclFuncSend &&
           got->count * dtype_size((ncclDataType_t)got->dtype) == op->count * op->elem;
  else
    same = got->func == want.func && got->seq == want.seq && got->count == want.count &&
           got->dtype == want.dtype && got->redop == want.redop && got->root == want.root &&
           got->algo == want.algo && got->proto == want.proto &&
           got->nchannels == want.nchannels;
  if (same) return 0;
  describe(&want, mine, sizeof mine);
  describe(got, theirs, sizeof theirs);
  if (is_p2p(op->func) && got->func == ncclFuncSend)
    WARN("rank %d: ncclRecv from rank %d of %zu x %s (%zu bytes) meets an ncclSend of %s from "
         "rank %d%s: send and receive counts must match",
         w->rank, c->peer, op->count, dtype_name(op->dtype), op->count * op->elem, theirs,
         c->peer, where);
  else if (is_p2p(op->func))
    WARN("rank %d: ncclRecv from rank %d of %zu x %s meets %s of rank %d%s: the ranks' "
         "operations are out of step",
         w->rank, c->peer, op->count, dtype_name(op->dtype), theirs, c->peer, where);
  else
    WARN("rank %d: %s meets rank %d's %s on channel %d%s: every rank must call the same "
         "collectives in the same order with the same count, datatype, op and root",
         w->rank, mine, c->peer, theirs, c->channel, where);
  *res = ncclInvalidUsage;
  return -1;
}

int host_sig_check(const weft_work* w, const weft_conn* c, const void* wire, ncclResult_t* res) {
  host_sig got;
  memcpy(&got, wire, sizeof got);
  return compare(w, c, &got, "", res);
}

/* The signature at c's next unread step, if one is there (1) — read as the consumer would. */
static int peek(const weft_conn* c, host_sig* out) {
  const char* slot = conn_slot(c, c->step);
  if (c->proto != NCCL_PROTO_LL || (c->flags & WEFT_CONN_LL_TAIL)) {
    if (__atomic_load_n(&c->ctrl->tail, __ATOMIC_ACQUIRE) <= c->step) return 0;
    if (c->proto != NCCL_PROTO_LL) {
      memcpy(out, slot, sizeof *out);
      return 1;
    }
  }
  const uint64_t* l = (const uint64_t*)slot;
  uint32_t flag = (uint32_t)(c->step + 1), d[WEFT_CONN_SIG_BYTES / 4];
  for (int i = 0; i < WEFT_CONN_SIG_BYTES / 4; i++) {
    uint64_t v = __atomic_load_n(&l[i], __ATOMIC_ACQUIRE);
    if ((uint32_t)(v >> 32) != flag) return 0;
    d[i] = (uint32_t)v;
  }
  memcpy(out, d, sizeof *out);
  return 1;
}

int host_sig_check_sibling(weft_work* w, int idx, ncclResult_t* res) {
  weft_conn_key k = w->keys[idx];
  if (k.send || (k.proto != NCCL_PROTO_LL && k.proto != NCCL_PROTO_SIMPLE)) return 0;
  k.proto = k.proto == NCCL_PROTO_LL ? NCCL_PROTO_SIMPLE : NCCL_PROTO_LL;
  weft_conn* s = transport_find(w->comm, &k);
  if (s == NULL || __atomic_load_n(&s->error, __ATOMIC_ACQUIRE) != ncclSuccess) return 0;
  /* A local operation queued on it will read what waits there: not ours to judge. */
  if (__atomic_load_n(&s->ticket_serving, __ATOMIC_ACQUIRE) !=
      __atomic_load_n(&s->ticket_next, __ATOMIC_ACQUIRE))
    return 0;
  host_sig got;
  if (!peek(s, &got) || got.magic != SIG_MAGIC) return 0;
  char where[64];
  snprintf(where, sizeof where, " (sent with %s, on channel %d)", weft_proto_name(got.proto),
           s->channel);
  if (compare(w, s, &got, where, res) == 0) {
    /* Same arguments, other protocol: the ranks disagree on NCCL_PROTO or the tuning. */
    WARN("rank %d: %s (seq %llu) waits on %s while rank %d sent it with %s: do all ranks set "
         "the same NCCL_PROTO/NCCL_ALGO?",
         w->rank, weft_func_name(w->op->func), (unsigned long long)w->op->seq,
         weft_proto_name(w->keys[idx].proto), s->peer, weft_proto_name(got.proto));
    *res = ncclInvalidUsage;
  }
  return 1;
}
