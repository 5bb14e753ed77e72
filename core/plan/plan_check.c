/* WEFT_CHECK_COLLECTIVES=1: before the collectives of a launch run, every rank publishes their
 * fingerprints (sequence number, collective, count, datatype, op, root, whether it reads
 * zero-copy windows and at which offsets: plan_zc.c needs every rank alike, and the algorithm,
 * protocol and channels tune/ chose, which every rank must choose alike or the kernels wait on
 * each other for ever) over bootstrap and compares them with every other rank's. A difference
 * fails the launch on every rank (they all see the same tables) with ncclInvalidUsage and a WARN
 * naming the ranks and the field, before any data has moved, so the communicator stays usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "plan/plan.h"
#include "tune/algo_proto.h"
#include "util/check.h"
#include "util/names.h"

typedef struct {
  uint64_t seq;
  uint64_t count;
  int32_t func;
  int32_t dtype;
  int32_t op;   /* built-in op, or 1000 + weft_red_kind for a user op */
  int32_t root; /* -1 when the collective has none */
  int32_t zc;   /* zero copy (its buffers' window offsets follow) */
  int32_t algo; /* tune/'s choice: NCCL_ALGO_* or WEFT_ALGO_*_ID */
  int32_t proto;
  int32_t nchannels;
  uint64_t zc_off[2];
} coll_fp;

typedef struct {
  int32_t ncoll;
  int32_t pad;
  coll_fp first;
} check_head;

static int has_root(int func) {
  return func == ncclFuncBroadcast || func == ncclFuncReduce || func == ncclFuncGather ||
         func == ncclFuncScatter;
}
static int has_op(int func) {
  return func == ncclFuncReduce || func == ncclFuncAllReduce || func == ncclFuncReduceScatter;
}

static void fingerprint(const weft_op* op, coll_fp* fp) {
  memset(fp, 0, sizeof *fp);
  fp->seq = op->seq;
  fp->count = op->count;
  fp->func = op->func;
  fp->dtype = op->dtype;
  fp->op = !has_op(op->func) ? -1
           : (int)op->user_op < ncclNumOps ? (int32_t)op->user_op
                                            : 1000 + (int32_t)op->redop.kind;
  fp->root = has_root(op->func) ? op->root : -1;
  fp->zc = op->zero_copy;
  fp->algo = op->algo;
  fp->proto = op->proto;
  fp->nchannels = op->nchannels;
  if (op->zero_copy == WEFT_ZC_WINDOWS) { /* registered buffers' offsets are each rank's own */
    fp->zc_off[0] = op->zc.off[0];
    fp->zc_off[1] = op->zc.off[1];
  }
}

static const char* op_name(int op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? names[op] : "?";
}

static void show(const coll_fp* f, char* buf, size_t len) {
  snprintf(buf, len, "%s(seq %llu, count %llu, datatype %s", weft_func_name(f->func),
           (unsigned long long)f->seq, (unsigned long long)f->count,
           dtype_name((ncclDataType_t)f->dtype));
  size_t n = strlen(buf);
  if (f->op >= 1000)
    snprintf(buf + n, len - n, ", op user-%s",
             f->op - 1000 == WEFT_RED_CUSTOM ? "custom" : "premulsum");
  else if (f->op >= 0)
    snprintf(buf + n, len - n, ", op %s", op_name(f->op));
  n = strlen(buf);
  if (f->root >= 0) snprintf(buf + n, len - n, ", root %d", f->root);
  n = strlen(buf);
  if (f->zc == WEFT_ZC_WINDOWS)
    snprintf(buf + n, len - n, ", zero copy at window offsets %llu/%llu",
             (unsigned long long)f->zc_off[0], (unsigned long long)f->zc_off[1]);
  else if (f->zc)
    snprintf(buf + n, len - n, ", zero copy on registered buffers");
  n = strlen(buf);
  if (f->nchannels > 0) /* 0: nothing to move, no plan */
    snprintf(buf + n, len - n, ", %s/%s on %d channel%s", tune_algo_name_for(f->func, f->algo),
             tune_proto_name(f->proto), f->nchannels, f->nchannels == 1 ? "" : "s");
  n = strlen(buf);
  snprintf(buf + n, len - n, ")");
}

/* Name of the first field that differs, or NULL. */
static const char* differs(const coll_fp* a, const coll_fp* b) {
  if (a->func != b->func) return "collective";
  if (a->seq != b->seq) return "sequence number";
  if (a->count != b->count) return "count";
  if (a->dtype != b->dtype) return "datatype";
  if (a->op != b->op) return "reduction op";
  if (a->root != b->root) return "root";
  if (a->zc != b->zc && (a->zc == WEFT_ZC_REGISTERED || b->zc == WEFT_ZC_REGISTERED))
    return "registered buffers (a call that uses them on one rank must on every rank)";
  if (a->zc != b->zc || a->zc_off[0] != b->zc_off[0] || a->zc_off[1] != b->zc_off[1])
    return "registered windows (symmetric use: the same offsets on every rank)";
  /* Same call, different plan: a setting (NCCL_ALGO, NCCL_PROTO, channel limits, the policy)
   * or a tuner plugin that answers differently on some rank. */
  if (a->algo != b->algo)
    return "algorithm chosen (NCCL_ALGO, a tuner plugin or the policy differ by rank?)";
  if (a->proto != b->proto)
    return "protocol chosen (NCCL_PROTO, a tuner plugin or the policy differ by rank?)";
  if (a->nchannels != b->nchannels)
    return "channels chosen (channel limits, a tuner plugin or the policy differ by rank?)";
  return NULL;
}

static ncclResult_t compare(struct ncclComm* comm, const coll_fp* all, int nranks, int ncoll) {
  for (int i = 0; i < ncoll; i++) {
    for (int r = 1; r < nranks; r++) {
      const coll_fp* a = &all[i];
      const coll_fp* b = &all[(size_t)r * (size_t)ncoll + (size_t)i];
      const char* field = differs(a, b);
      if (!field) continue;
      char sa[288], sb[288];
      show(a, sa, sizeof sa);
      show(b, sb, sizeof sb);
      WARN("rank %d: WEFT_CHECK_COLLECTIVES: collectives differ across ranks (%s): rank 0 "
           "calls %s, rank %d calls %s",
           comm->rank, field, sa, r, sb);
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

ncclResult_t plan_check_collectives(struct ncclComm* comm, const weft_op* const* ops, int nops) {
  int n = comm->nranks;
  if (n == 1) return ncclSuccess;
  check_head* heads = calloc((size_t)n, sizeof *heads);
  if (!heads) {
    WARN("rank %d: out of memory checking collectives", comm->rank);
    return ncclSystemError;
  }
  check_head* mine = &heads[comm->rank];
  mine->ncoll = nops;
  if (nops > 0) fingerprint(ops[0], &mine->first);
  ncclResult_t res = bootstrap_allgather(comm->bootstrap, heads, sizeof *heads);
  if (res != ncclSuccess) {
    free(heads);
    return res;
  }
  for (int r = 1; r < n; r++) {
    if (heads[r].ncoll == heads[0].ncoll) continue;
    WARN("rank %d: WEFT_CHECK_COLLECTIVES: ranks launch different numbers of collectives "
         "together: rank 0 has %d, rank %d has %d",
         comm->rank, heads[0].ncoll, r, heads[r].ncoll);
    free(heads);
    return ncclInvalidUsage;
  }
  if (nops == 0) {
    free(heads);
    return ncclSuccess;
  }
  if (nops == 1) {
    coll_fp* all = calloc((size_t)n, sizeof *all);
    if (!all) {
      free(heads);
      WARN("rank %d: out of memory checking collectives", comm->rank);
      return ncclSystemError;
    }
    for (int r = 0; r < n; r++) all[r] = heads[r].first;
    res = compare(comm, all, n, 1);
    free(all);
    free(heads);
    return res;
  }
  free(heads);
  coll_fp* all = calloc((size_t)n * (size_t)nops, sizeof *all);
  if (!all) {
    WARN("rank %d: out of memory checking %d collectives", comm->rank, nops);
    return ncclSystemError;
  }
  coll_fp* mine_all = &all[(size_t)comm->rank * (size_t)nops];
  for (int i = 0; i < nops; i++) fingerprint(ops[i], &mine_all[i]);
  res = bootstrap_allgather(comm->bootstrap, all, (size_t)nops * sizeof *all);
  if (res == ncclSuccess) res = compare(comm, all, n, nops);
  free(all);
  return res;
}
