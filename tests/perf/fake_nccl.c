/* A stand-in NCCL-ABI library for testing weft-perf before (and independently of) weft's data
 * path: host-memory collectives among processes of one machine through a POSIX shared-memory
 * segment named after the unique id (or after NCCL_COMM_ID). Every collective is "copy my part
 * into my slot, barrier, compute my output from all slots, barrier", chunked to the slot size.
 * Slow and simple on purpose; its only job is to be right, so weft-perf's launcher, side
 * channel, table and checker can be tested end to end.
 *
 * Test knobs (environment): FAKE_NCCL_CORRUPT=1 makes rank 0's AllReduce output element 0
 * wrong; FAKE_NCCL_DIE_RANK=r makes rank r exit (code 9) in its first AllReduce;
 * FAKE_NCCL_SLOT=bytes sets the per-rank slot (default 1 MiB, so chunking is exercised);
 * FAKE_NCCL_TRACE=file makes rank 0 append a line per call, "pid call count in-place(0/1)
 * CLOCK_MONOTONIC-ns", so tests can see which calls weft-perf makes, in which order and when
 * (its warm-up under --vs).
 * Built twice: with FAKE_NCCL_NO_ALLTOALL the library lacks ncclAlltoAll and ncclGetLastError,
 * as NCCL before 2.28 / 2.13 does. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"
#include "perf.h"

#define EXPORT __attribute__((visibility("default")))

struct ctl {
  _Atomic uint32_t arrived;
  _Atomic uint32_t gen;
  _Atomic uint32_t left;
};

enum { MAX_PREMUL = 64, MAX_P2P = 256 };

struct ncclComm {
  int rank, nranks;
  char name[96];
  size_t slot;
  size_t map_bytes;
  struct ctl* ctl;
  char* slots;
  int npremul;
  struct {
    int type;
    double f;
    uint64_t u;
  } premul[MAX_PREMUL];
};

static __thread char last_error[512];

static ncclResult_t fail(ncclResult_t res, const char* fmt, const char* what) {
  snprintf(last_error, sizeof last_error, fmt, what);
  fprintf(stderr, "fake-nccl: %s\n", last_error);
  return res;
}

static void barrier(struct ncclComm* c) {
  uint32_t g = atomic_load(&c->ctl->gen);
  if (atomic_fetch_add(&c->ctl->arrived, 1) == (uint32_t)c->nranks - 1) {
    atomic_store(&c->ctl->arrived, 0);
    atomic_fetch_add(&c->ctl->gen, 1);
    return;
  }
  time_t start = time(NULL);
  for (unsigned spins = 0; atomic_load(&c->ctl->gen) == g; spins++) {
    if (spins < 1000) continue;
    if (spins < 2000)
      sched_yield();
    else
      usleep(50);
    if ((spins & 1023) == 0 && time(NULL) - start > 60) {
      fprintf(stderr, "fake-nccl: rank %d: barrier timed out\n", c->rank);
      _exit(3);
    }
  }
}

static char* slot_of(struct ncclComm* c, int r) { return c->slots + (size_t)r * c->slot; }

/* FAKE_NCCL_TRACE: rank 0's calls, one line each, appended with one write (O_APPEND), so the
 * lines of several processes (both libraries of a --vs run) do not mix. */
static void trace(const struct ncclComm* c, const char* call, const void* s, const void* r,
                  size_t count) {
  static int fd = -2;
  if (!c || c->rank != 0) return;
  /* The time of the call, before the first call's open: the caller's clock started before the
   * call, and a slow open must not shorten the traced span (warmup_calls.awk checks it). */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (fd == -2) {
    const char* path = getenv("FAKE_NCCL_TRACE");
    fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }
  if (fd < 0) return;
  char line[160];
  int n = snprintf(line, sizeof line, "%d %s %zu %d %lld\n", (int)getpid(), call, count, s == r,
                   (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
  if (n > 0 && write(fd, line, (size_t)n) < 0) fd = -1;
}

/* --- identity and lifecycle ---------------------------------------------------------------- */

EXPORT ncclResult_t ncclGetVersion(int* v) {
  *v = 22803;
  return ncclSuccess;
}

EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : r == ncclInvalidUsage ? "invalid usage" : "fake error";
}

#ifndef FAKE_NCCL_NO_ALLTOALL
EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return last_error;
}
#endif

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  memset(id, 0, sizeof *id);
  const char* env = getenv("NCCL_COMM_ID");
  if (env && *env) {
    snprintf(id->internal, sizeof id->internal, "/fakenccl-env-%s", env);
    for (char* p = id->internal + 1; *p; p++)
      if (*p == '/' || *p == ':') *p = '_';
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id->internal, sizeof id->internal, "/fakenccl-%d-%ld", (int)getpid(),
             (long)ts.tv_nsec);
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "%s", "bad rank");
  struct ncclComm* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->rank = rank;
  c->nranks = nranks;
  memcpy(c->name, id.internal, sizeof c->name - 1);
  const char* s = getenv("FAKE_NCCL_SLOT");
  c->slot = s ? (size_t)strtoull(s, NULL, 0) : 1u << 20;
  c->slot -= c->slot % 64;
  if (c->slot < 4096) c->slot = 4096;
  c->map_bytes = 4096 + c->slot * (size_t)nranks;
  int fd = shm_open(c->name, O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)c->map_bytes)) {
    if (fd >= 0) close(fd);
    free(c);
    return fail(ncclSystemError, "shm: %s", strerror(errno));
  }
  void* m = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    free(c);
    return fail(ncclSystemError, "mmap: %s", strerror(errno));
  }
  c->ctl = m;
  c->slots = (char*)m + 4096;
  barrier(c);
  if (rank == 0) printf("NCCL version 2.28.3+fake\n");
  *out = c;
  return ncclSuccess;
}

static void release(struct ncclComm* c) {
  if (atomic_fetch_add(&c->ctl->left, 1) == (uint32_t)c->nranks - 1) shm_unlink(c->name);
  munmap(c->ctl, c->map_bytes);
  free(c);
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t c) {
  (void)c;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (!c) return ncclSuccess;
  barrier(c);
  release(c);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t c) {
  if (!c) return ncclSuccess;
  shm_unlink(c->name);
  munmap(c->ctl, c->map_bytes);
  free(c);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t c, int* n) {
  *n = c->nranks;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t c, int* r) {
  *r = c->rank;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t c, int* d) {
  (void)c;
  *d = -1;
  return ncclSuccess;
}

/* --- element arithmetic -------------------------------------------------------------------- */

static const struct perf_type* type_of(ncclDataType_t t) {
  return (int)t >= 0 && (int)t < perf_ntypes ? &perf_types[t] : NULL;
}

static uint64_t mask_of(const struct perf_type* t) {
  return t->size >= 8 ? ~0ULL : (1ULL << (t->size * 8)) - 1;
}

static int64_t sext(const struct perf_type* t, uint64_t v) {
  if (t->size >= 8) return (int64_t)v;
  uint64_t sign = 1ULL << (t->size * 8 - 1);
  return (int64_t)((v ^ sign) - sign);
}

/* Copies count elements of src into dst, multiplied by this rank's premul scalar if op is one. */
static void stage(struct ncclComm* c, const struct perf_type* t, ncclRedOp_t op, void* dst,
                  const void* src, size_t count) {
  int k = (int)op - ncclNumOps;
  if (k < 0 || k >= c->npremul) {
    memcpy(dst, src, count * t->size);
    return;
  }
  for (size_t i = 0; i < count; i++) {
    if (t->kind == PERF_KIND_FLOAT)
      perf_store_float(t, dst, i, perf_load_float(t, src, i) * c->premul[k].f);
    else
      perf_store_int(t, dst, i, perf_load_int(t, src, i) * c->premul[k].u);
  }
}

/* out[i] = op over ranks r of slot r at element offset `at` + i. */
static void reduce_slots(struct ncclComm* c, const struct perf_type* t, ncclRedOp_t op, size_t at,
                         void* out, size_t count) {
  int kind = (int)op >= ncclNumOps ? ncclSum : (int)op;
  int n = c->nranks;
  for (size_t i = 0; i < count; i++) {
    if (t->kind == PERF_KIND_FLOAT) {
      double acc = perf_load_float(t, slot_of(c, 0), at + i);
      for (int r = 1; r < n; r++) {
        double x = perf_load_float(t, slot_of(c, r), at + i);
        if (kind == ncclProd)
          acc *= x;
        else if (kind == ncclMax)
          acc = x > acc ? x : acc;
        else if (kind == ncclMin)
          acc = x < acc ? x : acc;
        else
          acc += x;
      }
      if (kind == ncclAvg) acc /= n;
      perf_store_float(t, out, i, acc);
    } else {
      int sgn = t->kind == PERF_KIND_INT;
      uint64_t acc = perf_load_int(t, slot_of(c, 0), at + i);
      for (int r = 1; r < n; r++) {
        uint64_t x = perf_load_int(t, slot_of(c, r), at + i);
        if (kind == ncclProd)
          acc *= x;
        else if (kind == ncclMax)
          acc = (sgn ? sext(t, x) > sext(t, acc) : x > acc) ? x : acc;
        else if (kind == ncclMin)
          acc = (sgn ? sext(t, x) < sext(t, acc) : x < acc) ? x : acc;
        else
          acc += x;
      }
      acc &= mask_of(t);
      if (kind == ncclAvg) acc = sgn ? (uint64_t)(sext(t, acc) / n) : acc / (uint64_t)n;
      perf_store_int(t, out, i, acc);
    }
  }
}

static ncclResult_t check_args(struct ncclComm* c, ncclDataType_t type, ncclRedOp_t op,
                               const struct perf_type** t) {
  if (!c) return fail(ncclInvalidArgument, "%s", "comm is NULL");
  *t = type_of(type);
  if (!*t) return fail(ncclInvalidArgument, "%s", "bad datatype");
  if ((int)op < 0 || (int)op >= ncclNumOps + c->npremul)
    return fail(ncclInvalidArgument, "%s", "bad op");
  return ncclSuccess;
}

/* Elements per chunk when each rank's slot holds `parts` pieces. */
static size_t chunk_elems(struct ncclComm* c, const struct perf_type* t, int parts) {
  return c->slot / (size_t)parts / t->size;
}

/* --- collectives ------------------------------------------------------------------------------ */

static ncclResult_t reduce_common(const void* s, void* r, size_t count, ncclDataType_t type,
                                  ncclRedOp_t op, int root, ncclComm_t c) {
  const struct perf_type* t;
  ncclResult_t res = check_args(c, type, op, &t);
  if (res) return res;
  const char* die = getenv("FAKE_NCCL_DIE_RANK");
  if (root < 0 && die && atoi(die) == c->rank) _exit(9);
  size_t ch = chunk_elems(c, t, 1);
  for (size_t off = 0; off < count; off += ch) {
    size_t n = count - off < ch ? count - off : ch;
    stage(c, t, op, slot_of(c, c->rank), (const char*)s + off * t->size, n);
    barrier(c);
    if (root < 0 || root == c->rank) reduce_slots(c, t, op, 0, (char*)r + off * t->size, n);
    barrier(c);
  }
  if (root < 0 && c->rank == 0 && count && getenv("FAKE_NCCL_CORRUPT")) {
    if (t->kind == PERF_KIND_FLOAT)
      perf_store_float(t, r, 0, perf_load_float(t, r, 0) + 1.0);
    else
      perf_store_int(t, r, 0, perf_load_int(t, r, 0) + 1);
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclAllReduce(const void* s, void* r, size_t count, ncclDataType_t type,
                                  ncclRedOp_t op, ncclComm_t c, cudaStream_t st) {
  (void)st;
  trace(c, "AllReduce", s, r, count);
  return reduce_common(s, r, count, type, op, -1, c);
}

EXPORT ncclResult_t ncclReduce(const void* s, void* r, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st) {
  (void)st;
  trace(c, "Reduce", s, r, count);
  if (root < 0 || root >= c->nranks) return fail(ncclInvalidArgument, "%s", "bad root");
  return reduce_common(s, r, count, type, op, root, c);
}

EXPORT ncclResult_t ncclBroadcast(const void* s, void* r, size_t count, ncclDataType_t type,
                                  int root, ncclComm_t c, cudaStream_t st) {
  (void)st;
  trace(c, "Broadcast", s, r, count);
  const struct perf_type* t;
  ncclResult_t res = check_args(c, type, ncclSum, &t);
  if (res) return res;
  if (root < 0 || root >= c->nranks) return fail(ncclInvalidArgument, "%s", "bad root");
  size_t ch = chunk_elems(c, t, 1);
  for (size_t off = 0; off < count; off += ch) {
    size_t n = count - off < ch ? count - off : ch;
    if (c->rank == root) memcpy(slot_of(c, root), (const char*)s + off * t->size, n * t->size);
    barrier(c);
    memmove((char*)r + off * t->size, slot_of(c, root), n * t->size);
    barrier(c);
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclAllGather(const void* s, void* r, size_t count, ncclDataType_t type,
                                  ncclComm_t c, cudaStream_t st) {
  (void)st;
  trace(c, "AllGather", s, r, count);
  const struct perf_type* t;
  ncclResult_t res = check_args(c, type, ncclSum, &t);
  if (res) return res;
  size_t ch = chunk_elems(c, t, 1), es = t->size;
  for (size_t off = 0; off < count; off += ch) {
    size_t n = count - off < ch ? count - off : ch;
    memcpy(slot_of(c, c->rank), (const char*)s + off * es, n * es);
    barrier(c);
    for (int p = 0; p < c->nranks; p++)
      memmove((char*)r + ((size_t)p * count + off) * es, slot_of(c, p), n * es);
    barrier(c);
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclReduceScatter(const void* s, void* r, size_t count, ncclDataType_t type,
                                      ncclRedOp_t op, ncclComm_t c, cudaStream_t st) {
  (void)st;
  trace(c, "ReduceScatter", s, r, count);
  const struct perf_type* t;
  ncclResult_t res = check_args(c, type, op, &t);
  if (res) return res;
  int nr = c->nranks;
  size_t ch = chunk_elems(c, t, nr), es = t->size;
  for (size_t off = 0; off < count; off += ch) {
    size_t n = count - off < ch ? count - off : ch;
    for (int p = 0; p < nr; p++)
      stage(c, t, op, slot_of(c, c->rank) + (size_t)p * n * es,
            (const char*)s + ((size_t)p * count + off) * es, n);
    barrier(c);
    reduce_slots(c, t, op, (size_t)c->rank * n, (char*)r + off * es, n);
    barrier(c);
  }
  return ncclSuccess;
}

#ifndef FAKE_NCCL_NO_ALLTOALL
EXPORT ncclResult_t ncclAlltoAll(const void* s, void* r, size_t count, ncclDataType_t type,
                                 ncclComm_t c, cudaStream_t st) {
  (void)st;
  trace(c, "AlltoAll", s, r, count);
  const struct perf_type* t;
  ncclResult_t res = check_args(c, type, ncclSum, &t);
  if (res) return res;
  int nr = c->nranks;
  size_t ch = chunk_elems(c, t, nr), es = t->size;
  for (size_t off = 0; off < count; off += ch) {
    size_t n = count - off < ch ? count - off : ch;
    for (int p = 0; p < nr; p++)
      memcpy(slot_of(c, c->rank) + (size_t)p * n * es,
             (const char*)s + ((size_t)p * count + off) * es, n * es);
    barrier(c);
    for (int p = 0; p < nr; p++)
      memcpy((char*)r + ((size_t)p * count + off) * es, slot_of(c, p) + (size_t)c->rank * n * es,
             n * es);
    barrier(c);
  }
  return ncclSuccess;
}
#endif

/* --- groups and point-to-point --------------------------------------------------------------- */

static int group_depth;
static struct p2p {
  int is_send, peer;
  void* buf;
  size_t bytes;
  struct ncclComm* comm;
} p2p_ops[MAX_P2P];
static int n_p2p;

EXPORT ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

/* Sends land in the sender's slot, one sub-slot per peer; receives read them after a barrier. */
static void run_p2p(void) {
  if (n_p2p == 0) return;
  struct ncclComm* c = p2p_ops[0].comm;
  size_t sub = c->slot / (size_t)c->nranks;
  size_t most = 0;
  for (int k = 0; k < n_p2p; k++) most = p2p_ops[k].bytes > most ? p2p_ops[k].bytes : most;
  for (size_t off = 0; off == 0 || off < most; off += sub) {
    for (int k = 0; k < n_p2p; k++) {
      struct p2p* o = &p2p_ops[k];
      if (o->is_send && off < o->bytes)
        memcpy(slot_of(c, c->rank) + (size_t)o->peer * sub, (char*)o->buf + off,
               o->bytes - off < sub ? o->bytes - off : sub);
    }
    barrier(c);
    for (int k = 0; k < n_p2p; k++) {
      struct p2p* o = &p2p_ops[k];
      if (!o->is_send && off < o->bytes)
        memcpy((char*)o->buf + off, slot_of(c, o->peer) + (size_t)c->rank * sub,
               o->bytes - off < sub ? o->bytes - off : sub);
    }
    barrier(c);
    if (most == 0) break;
  }
  n_p2p = 0;
}

EXPORT ncclResult_t ncclGroupEnd(void) {
  if (group_depth <= 0) return fail(ncclInvalidUsage, "%s", "ncclGroupEnd without start");
  if (--group_depth == 0) run_p2p();
  return ncclSuccess;
}

static ncclResult_t p2p(int is_send, const void* buf, size_t count, ncclDataType_t type, int peer,
                        ncclComm_t c) {
  const struct perf_type* t;
  ncclResult_t res = check_args(c, type, ncclSum, &t);
  if (res) return res;
  if (peer < 0 || peer >= c->nranks) return fail(ncclInvalidArgument, "%s", "bad peer");
  if (n_p2p == MAX_P2P) return fail(ncclInvalidUsage, "%s", "too many p2p ops in a group");
  p2p_ops[n_p2p++] = (struct p2p){is_send, peer, (void*)buf, count * t->size, c};
  if (group_depth == 0) run_p2p();
  return ncclSuccess;
}

EXPORT ncclResult_t ncclSend(const void* s, size_t count, ncclDataType_t type, int peer,
                             ncclComm_t c, cudaStream_t st) {
  (void)st;
  trace(c, "Send", s, NULL, count);
  return p2p(1, s, count, type, peer, c);
}

EXPORT ncclResult_t ncclRecv(void* r, size_t count, ncclDataType_t type, int peer, ncclComm_t c,
                             cudaStream_t st) {
  (void)st;
  trace(c, "Recv", NULL, r, count);
  return p2p(0, r, count, type, peer, c);
}

/* --- operators ------------------------------------------------------------------------------- */

EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                             ncclScalarResidence_t residence, ncclComm_t c) {
  const struct perf_type* t = type_of(type);
  if (!t || residence != ncclScalarHostImmediate || c->npremul == MAX_PREMUL)
    return fail(ncclInvalidArgument, "%s", "premulsum");
  int k = c->npremul++;
  c->premul[k].type = type;
  if (t->kind == PERF_KIND_FLOAT)
    c->premul[k].f = perf_load_float(t, scalar, 0);
  else
    c->premul[k].u = perf_load_int(t, scalar, 0);
  *op = (ncclRedOp_t)(ncclNumOps + k);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t c) {
  if ((int)op == ncclNumOps + c->npremul - 1) c->npremul--;
  return ncclSuccess;
}
