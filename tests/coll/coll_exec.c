/* Running matrix cases through the public API (see coll_exec.h). */
#include "coll_exec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coll_check.h"
#include "coll_fp.h"
#include "testutil.h"
#include "weft.h"

#define GUARD 64            /* bytes of guard zone on each side of a buffer */
#define GUARD_BYTE COLL_GUARD_BYTE
#define POISON_BYTE 0xcd    /* output buffers before the call */
#define CUSTOM_MAGIC 0xc0ffee5eed5eedc0ull

static const char* g_argv0 = "coll_matrix";
static atomic_int g_custom_misuse;

void coll_set_argv0(const char* argv0) { g_argv0 = argv0; }
int coll_custom_misuse(void) { return atomic_load(&g_custom_misuse); }

static inline uint64_t ld(const unsigned char* p, size_t esz, size_t i) {
  switch (esz) {
    case 1: return p[i];
    case 2: {
      uint16_t v;
      memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p + 8 * i, 8);
      return v;
    }
  }
}

static inline void st(unsigned char* p, size_t esz, size_t i, uint64_t v) {
  switch (esz) {
    case 1: p[i] = (unsigned char)v; break;
    case 2: {
      uint16_t w = (uint16_t)v;
      memcpy(p + 2 * i, &w, 2);
      break;
    }
    case 4: {
      uint32_t w = (uint32_t)v;
      memcpy(p + 4 * i, &w, 4);
      break;
    }
    default: memcpy(p + 8 * i, &v, 8); break;
  }
}

/* The custom reduction given to weftRedOpCreateCustom: see coll_ref.h. */
static void custom_fn(void* inout, const void* in, size_t count, ncclDataType_t type,
                      void* user) {
  const coll_custom_user* u = user;
  size_t esz = fp_type_size(type);
  if (u == NULL || u->magic != CUSTOM_MAGIC || u->type != type || esz == 0) {
    atomic_fetch_add(&g_custom_misuse, 1);
    if (esz == 0) return;
  }
  for (size_t i = 0; i < count; i++)
    st(inout, esz, i, coll_custom_combine(type, ld(inout, esz, i), ld(in, esz, i)));
}

int coll_not_available(ncclResult_t res, ncclComm_t comm) {
  const char* msg = ncclGetLastError(comm);
  return res == ncclInvalidUsage && msg != NULL && strstr(msg, "not available yet") != NULL;
}

void coll_print_rerun(FILE* f, uint64_t seed, const coll_case* c) {
  char name[COLL_CASE_STR];
  coll_case_format(c, name);
  fprintf(f, "rerun: WEFT_TEST_SEED=0x%" PRIx64 " WEFT_COLL_CASE=%s %s\n", seed, name, g_argv0);
}

static unsigned char* alloc_region(size_t bytes, size_t misalign, size_t* raw_len,
                                   unsigned char** usable) {
  *raw_len = bytes + 2 * GUARD + 32;
  unsigned char* raw = malloc(*raw_len);
  if (!raw) {
    fprintf(stderr, "out of memory allocating %zu bytes\n", *raw_len);
    exit(1);
  }
  memset(raw, GUARD_BYTE, *raw_len);
  *usable = raw + GUARD + misalign;
  return raw;
}

static ncclRedOp_t builtin_op(coll_op op) {
  switch (op) {
    case OP_SUM: return ncclSum;
    case OP_PROD: return ncclProd;
    case OP_MAX: return ncclMax;
    case OP_MIN: return ncclMin;
    case OP_AVG: return ncclAvg;
    default: return ncclSum;
  }
}

/* Classifies a failed call; prints it unless it is "not available yet". */
static int call_failed(coll_run* r, const char* call, ncclResult_t res, ncclComm_t comm) {
  if (coll_not_available(res, comm)) return COLL_NA;
  const char* last = ncclGetLastError(comm);
  fprintf(stderr, "FAIL rank %d: %s: %s returned %d (%s): %s\n", r->rank, r->name, call, (int)res,
          ncclGetErrorString(res), last ? last : "");
  coll_print_rerun(stderr, r->seed, &r->c);
  return COLL_FATAL;
}

int coll_run_prepare(coll_run* r, const coll_case* c, uint64_t seed, int rank, ncclComm_t comm) {
  memset(r, 0, sizeof *r);
  r->c = *c;
  coll_case_format(c, r->name);
  r->seed = seed;
  r->key = coll_case_key(seed, c);
  r->rank = rank;
  r->count = coll_case_count(c);
  r->esz = fp_type_size(c->type);
  coll_gen_init(&r->gen, c, seed);
  r->variant = (int)(coll_mix64(r->key ^ 0x7a7a7a7aull) & 0xff);

  const size_t n = (size_t)c->nranks, cnt = r->count, esz = r->esz;
  const int ip = c->inplace, isroot = rank == c->root, drop = r->variant & 1;
  size_t la = 0, lb = 0;
  int has_a = 1, has_b = 1;
  switch (c->coll) {
    case COLL_ALLREDUCE:
    case COLL_BROADCAST:
    case COLL_SENDRECV: la = cnt, lb = cnt; break;
    case COLL_REDUCE:
      la = cnt, lb = cnt;
      has_b = isroot || !drop;
      break;
    case COLL_ALLGATHER: la = ip ? n * cnt : cnt, lb = n * cnt; break;
    case COLL_REDUCESCATTER: la = n * cnt, lb = cnt; break;
    case COLL_ALLTOALL: la = n * cnt, lb = n * cnt; break;
    case COLL_GATHER:
      la = cnt, lb = n * cnt;
      has_b = isroot || !drop;
      break;
    case COLL_SCATTER:
      la = n * cnt, lb = cnt;
      has_a = isroot || !drop;
      break;
    default: break;
  }
  if (ip) has_b = 0; /* one buffer */
  size_t mis = (size_t)((r->variant >> 4) & 3) * esz;
  r->la = la, r->lb = lb, r->has_a = has_a, r->has_b = has_b;
  if (has_a) r->alloc_a = alloc_region(la * esz, mis, &r->raw_a, &r->a);
  if (has_b) r->alloc_b = alloc_region(lb * esz, (mis + esz) % (4 * esz), &r->raw_b, &r->b);

  /* Pointers the call gets. */
  r->sendbuff = r->a;
  r->recvbuff = ip ? r->a : r->b;
  if (ip && c->coll == COLL_ALLGATHER) r->sendbuff = r->a + (size_t)rank * cnt * esz;
  if (ip && c->coll == COLL_REDUCESCATTER) r->recvbuff = r->a + (size_t)rank * cnt * esz;

  /* Inputs; outputs poisoned. */
  switch (c->coll) {
    case COLL_REDUCESCATTER:
    case COLL_ALLTOALL:
    case COLL_SCATTER: r->nsend = n * cnt; break;
    default: r->nsend = cnt; break;
  }
  if (!has_a) r->nsend = 0;
  if (has_b) memset(r->b, POISON_BYTE, lb * esz);
  if (ip && (c->coll == COLL_ALLGATHER || (c->coll == COLL_BROADCAST && !isroot)))
    memset(r->a, POISON_BYTE, la * esz);
  if (!(ip && c->coll == COLL_BROADCAST && !isroot))
    for (size_t i = 0; i < r->nsend; i++)
      st(r->sendbuff, esz, i, coll_gen_value(&r->gen, rank, i));

  /* The reduction operator. */
  r->op = ncclSum;
  if (coll_is_reduction(c->coll) && comm != NULL) {
    ncclResult_t res = ncclSuccess;
    const char* call = "";
    if (c->op == OP_PREMULSUM) {
      unsigned char scalar[8];
      memcpy(scalar, &r->gen.scalar_bits, esz); /* little endian: the element's bytes */
      call = "ncclRedOpCreatePreMulSum";
      res = ncclRedOpCreatePreMulSum(&r->op, scalar, c->type, ncclScalarHostImmediate, comm);
      memset(scalar, 0xff, sizeof scalar); /* host-immediate: read before the call returned */
    } else if (c->op == OP_CUSTOM) {
      r->user.magic = CUSTOM_MAGIC;
      r->user.type = c->type;
      call = "weftRedOpCreateCustom";
      res = weftRedOpCreateCustom(&r->op, custom_fn, &r->user, comm);
    } else {
      r->op = builtin_op(c->op);
    }
    if (res != ncclSuccess) return call_failed(r, call, res, comm);
    r->op_made = c->op == OP_PREMULSUM || c->op == OP_CUSTOM;
  }
  r->misuse0 = coll_custom_misuse();
  return COLL_OK;
}

int coll_run_issue(coll_run* r, ncclComm_t comm) {
  const coll_case* c = &r->c;
  const size_t cnt = r->count;
  const ncclDataType_t t = c->type;
  ncclResult_t res = ncclSuccess;
  static const char* const api[COLL_NUM] = {
      "ncclAllReduce", "ncclReduce",   "ncclBroadcast", "ncclAllGather", "ncclReduceScatter",
      "ncclSend/Recv", "ncclAlltoAll", "ncclGather",    "ncclScatter"};
  const char* call = api[c->coll];
  switch (c->coll) {
    case COLL_ALLREDUCE: res = ncclAllReduce(r->sendbuff, r->recvbuff, cnt, t, r->op, comm, NULL); break;
    case COLL_REDUCE:
      res = ncclReduce(r->sendbuff, r->recvbuff, cnt, t, r->op, c->root, comm, NULL);
      break;
    case COLL_BROADCAST:
      if (c->inplace && (r->variant & 2)) {
        call = "ncclBcast";
        res = ncclBcast(r->recvbuff, cnt, t, c->root, comm, NULL);
      } else {
        res = ncclBroadcast(r->sendbuff, r->recvbuff, cnt, t, c->root, comm, NULL);
      }
      break;
    case COLL_ALLGATHER: res = ncclAllGather(r->sendbuff, r->recvbuff, cnt, t, comm, NULL); break;
    case COLL_REDUCESCATTER:
      res = ncclReduceScatter(r->sendbuff, r->recvbuff, cnt, t, r->op, comm, NULL);
      break;
    case COLL_SENDRECV: {
      int n = c->nranks, to = (r->rank + c->root) % n, from = (r->rank - c->root + n) % n;
      ncclResult_t a, b, e;
      call = "ncclGroupStart";
      if ((res = ncclGroupStart()) != ncclSuccess) break;
      if (r->variant & 4) {
        b = ncclRecv(r->recvbuff, cnt, t, from, comm, NULL);
        a = ncclSend(r->sendbuff, cnt, t, to, comm, NULL);
      } else {
        a = ncclSend(r->sendbuff, cnt, t, to, comm, NULL);
        b = ncclRecv(r->recvbuff, cnt, t, from, comm, NULL);
      }
      e = ncclGroupEnd();
      res = a != ncclSuccess ? a : b != ncclSuccess ? b : e;
      call = a != ncclSuccess ? "ncclSend" : b != ncclSuccess ? "ncclRecv" : "ncclGroupEnd";
      break;
    }
    case COLL_ALLTOALL: res = ncclAlltoAll(r->sendbuff, r->recvbuff, cnt, t, comm, NULL); break;
    case COLL_GATHER:
      res = ncclGather(r->sendbuff, r->recvbuff, cnt, t, c->root, comm, NULL);
      break;
    case COLL_SCATTER:
      res = ncclScatter(r->sendbuff, r->recvbuff, cnt, t, c->root, comm, NULL);
      break;
    default: break;
  }
  if (res != ncclSuccess) return call_failed(r, call, res, comm);
  return COLL_OK;
}

/* ---- verification ---------------------------------------------------------------------- */

size_t coll_run_verify(coll_run* r) {
  coll_checker k = {&r->gen, r->c.type, r->esz, r->rank, 0, 0};
  const coll_case* c = &r->c;
  const int n = c->nranks, rank = r->rank, isroot = rank == c->root, ip = c->inplace;
  const size_t cnt = r->count, esz = r->esz;
  switch (c->coll) {
    case COLL_ALLREDUCE: coll_check_reduce(&k, r->recvbuff, cnt, 0); break;
    case COLL_REDUCE:
      if (isroot)
        coll_check_reduce(&k, r->recvbuff, cnt, 0);
      else if (ip)
        coll_check_copy(&k, "buffer (not root, in place)", r->a, 0, cnt, rank, 0);
      else if (r->has_b)
        coll_check_bytes(&k, "recvbuff (not root)", r->b, cnt * esz, POISON_BYTE);
      break;
    case COLL_REDUCESCATTER: coll_check_reduce(&k, r->recvbuff, cnt, (size_t)rank * cnt); break;
    case COLL_BROADCAST: coll_check_copy(&k, "recvbuff", r->recvbuff, 0, cnt, c->root, 0); break;
    case COLL_ALLGATHER:
      for (int j = 0; j < n; j++)
        coll_check_copy(&k, "recvbuff", r->recvbuff, (size_t)j * cnt, cnt, j, 0);
      break;
    case COLL_SENDRECV:
      coll_check_copy(&k, "recvbuff", r->recvbuff, 0, cnt, (rank - c->root + n) % n, 0);
      break;
    case COLL_ALLTOALL:
      for (int j = 0; j < n; j++)
        coll_check_copy(&k, "recvbuff", r->recvbuff, (size_t)j * cnt, cnt, j, (size_t)rank * cnt);
      break;
    case COLL_GATHER:
      if (isroot)
        for (int j = 0; j < n; j++)
          coll_check_copy(&k, "recvbuff", r->recvbuff, (size_t)j * cnt, cnt, j, 0);
      else if (r->has_b)
        coll_check_bytes(&k, "recvbuff (not root)", r->b, r->lb * esz, POISON_BYTE);
      break;
    case COLL_SCATTER:
      coll_check_copy(&k, "recvbuff", r->recvbuff, 0, cnt, c->root, (size_t)rank * cnt);
      break;
    default: break;
  }
  if (!ip && r->has_a)
    coll_check_copy(&k, "sendbuff (must stay unchanged)", r->a, 0, r->nsend, rank, 0);
  if (r->has_a)
    coll_check_guards(&k, ip ? "buffer" : "sendbuff", r->alloc_a, r->raw_a,
                      (size_t)(r->a - r->alloc_a), r->la * esz);
  if (r->has_b)
    coll_check_guards(&k, "recvbuff", r->alloc_b, r->raw_b, (size_t)(r->b - r->alloc_b),
                      r->lb * esz);
  if (c->op == OP_CUSTOM && coll_custom_misuse() != r->misuse0) {
    k.problems++;
    fprintf(stderr, "  rank %d: the custom reduction was called with a wrong user pointer or "
            "datatype (%d times)\n", rank, coll_custom_misuse() - r->misuse0);
  }
  if (k.problems) {
    fprintf(stderr, "FAIL rank %d: %s: %zu problem(s) (count %zu, %zu bytes per element)\n",
            rank, r->name, k.problems, cnt, esz);
    coll_print_rerun(stderr, r->seed, c);
  }
  return k.problems;
}

void coll_run_release(coll_run* r, ncclComm_t comm) {
  if (r->op_made) {
    ncclResult_t res = ncclRedOpDestroy(r->op, comm);
    if (res != ncclSuccess)
      fprintf(stderr, "rank %d: %s: ncclRedOpDestroy returned %d (%s)\n", r->rank, r->name,
              (int)res, ncclGetErrorString(res));
    r->op_made = 0;
  }
  free(r->alloc_a);
  free(r->alloc_b);
  r->alloc_a = r->alloc_b = NULL;
}

/* ---- probe ------------------------------------------------------------------------------ */

const char* const coll_feature_name[FEAT_NUM] = {
    "ncclAllReduce", "ncclReduce", "ncclBroadcast", "ncclAllGather", "ncclReduceScatter",
    "ncclSend/ncclRecv", "ncclAlltoAll", "ncclGather", "ncclScatter",
    "ncclRedOpCreatePreMulSum", "weftRedOpCreateCustom"};

typedef struct {
  int status[FEAT_NUM];
  char msg[256];
} probe_result;

static int probe_one(ncclComm_t comm, coll_kind coll, coll_op op, char* msg, size_t len) {
  coll_case c;
  memset(&c, 0, sizeof c);
  c.nranks = 1, c.coll = coll, c.type = ncclFloat32, c.size = SIZE_7;
  c.op = coll_is_reduction(coll) ? op : OP_NONE;
  coll_run r;
  int rc = coll_run_prepare(&r, &c, 1, 0, comm);
  if (rc == COLL_OK) rc = coll_run_issue(&r, comm);
  if (rc == COLL_NA && msg && !msg[0]) snprintf(msg, len, "%s", ncclGetLastError(comm));
  coll_run_release(&r, comm);
  return rc == COLL_OK ? FEAT_OK : rc == COLL_NA ? FEAT_NA : FEAT_ERROR;
}

int coll_probe(int status[FEAT_NUM], char* na_message, size_t na_len) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fds[0]);
    probe_result pr;
    memset(&pr, 0, sizeof pr);
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res == ncclSuccess) res = ncclCommInitRank(&comm, 1, id, 0);
    if (res != ncclSuccess) {
      fprintf(stderr, "probe: a 1-rank communicator failed: %s\n", ncclGetLastError(NULL));
      _exit(3);
    }
    /* AllReduce first: without it nothing else is asked (and logged). */
    for (int co = 0; co < COLL_NUM; co++)
      pr.status[co] = co && pr.status[0] == FEAT_NA
                          ? FEAT_NA
                          : probe_one(comm, (coll_kind)co, OP_SUM, pr.msg, sizeof pr.msg);
    pr.status[FEAT_PREMULSUM] =
        pr.status[0] == FEAT_NA ? FEAT_NA : probe_one(comm, COLL_ALLREDUCE, OP_PREMULSUM, NULL, 0);
    pr.status[FEAT_CUSTOM] =
        pr.status[0] == FEAT_NA ? FEAT_NA : probe_one(comm, COLL_ALLREDUCE, OP_CUSTOM, NULL, 0);
    ncclCommDestroy(comm);
    ssize_t w = write(fds[1], &pr, sizeof pr);
    _exit(w == (ssize_t)sizeof pr ? 0 : 4);
  }
  close(fds[1]);
  probe_result pr;
  size_t got = test_read_full(fds[0], &pr, sizeof pr);
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof pr || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  memcpy(status, pr.status, sizeof pr.status);
  if (na_message && na_len) snprintf(na_message, na_len, "%s", pr.msg);
  return 0;
}

/* ---- configurations --------------------------------------------------------------------- */

void coll_apply_config_env(const coll_case* c) {
  setenv("NCCL_ALGO", coll_algo_name[c->algo], 1);
  setenv("NCCL_PROTO", coll_proto_name[c->proto], 1);
  setenv("NCCL_SHM_DISABLE", c->transport == TR_NET ? "1" : "0", 1);
  if (c->transport == TR_NET) setenv("NCCL_SOCKET_IFNAME", "lo", 0);
}

typedef struct {
  const coll_case* cases;
  int n;
  uint64_t seed;
  int* status;   /* shared with the parent */
  int* progress; /* shared: case index per rank; -1 before the communicator exists */
  uint64_t* hashes; /* shared: [case][rank] hash of the output every rank must get alike */
  int verbose;
} config_job;

/* Collectives whose output is the same on every rank (so the same bits: NCCL's guarantee). */
static int same_output_everywhere(coll_kind c) {
  return c == COLL_ALLREDUCE || c == COLL_ALLGATHER || c == COLL_BROADCAST;
}

/* FNV-1a of the case's output on this rank (1 + hash, 0: none). */
static uint64_t output_hash(const coll_run* r) {
  if (!same_output_everywhere(r->c.coll) || r->recvbuff == NULL) return 0;
  size_t n = r->count * (r->c.coll == COLL_ALLGATHER ? (size_t)r->c.nranks : 1) * r->esz;
  const unsigned char* p = r->recvbuff;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h | 1;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int config_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  config_job* job = arg;
  ncclComm_t comm = NULL;
  const int fds0 = test_count_fds(), threads0 = test_count_threads();
  ncclResult_t res = ncclCommInitRank(&comm, nranks, *id, rank);
  if (res != ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: ncclCommInitRank returned %d (%s): %s\n", rank, (int)res,
            ncclGetErrorString(res), ncclGetLastError(NULL));
    return 1;
  }
  int failed = 0;
  for (int i = 0; i < job->n; i++) {
    job->progress[rank] = i;
    double t0 = now_ms();
    coll_run r;
    int rc = coll_run_prepare(&r, &job->cases[i], job->seed, rank, comm);
    if (rc == COLL_OK) rc = coll_run_issue(&r, comm);
    if (rc == COLL_NA) {
      __atomic_fetch_or(&job->status[i], COLL_STATUS_NA, __ATOMIC_RELAXED);
      coll_run_release(&r, comm);
      continue;
    }
    if (rc == COLL_FATAL) {
      __atomic_fetch_or(&job->status[i], COLL_STATUS_FAIL, __ATOMIC_RELAXED);
      coll_run_release(&r, comm);
      ncclCommAbort(comm);
      return 1;
    }
    double t1 = now_ms();
    size_t problems = coll_run_verify(&r);
    job->hashes[(size_t)i * (size_t)nranks + (size_t)rank] = output_hash(&r);
    coll_run_release(&r, comm);
    __atomic_fetch_or(&job->status[i], COLL_STATUS_RUN | (problems ? COLL_STATUS_FAIL : 0),
                      __ATOMIC_RELAXED);
    if (problems) failed = 1;
    if (job->verbose && rank == 0)
      fprintf(stderr, "  [%d/%d] %s: %.1f ms call, %.1f ms check%s\n", i + 1, job->n, r.name,
              t1 - t0, now_ms() - t1, problems ? " FAILED" : "");
  }
  job->progress[rank] = job->n;
  res = ncclCommDestroy(comm);
  if (res != ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: ncclCommDestroy returned %d (%s)\n", rank, (int)res,
            ncclGetErrorString(res));
    return 1;
  }
  /* Destroy leaves nothing behind (docs/design.md, reliability rules). Fewer is fine: on rank 0
   * the bootstrap root of the unique id may end once every rank has connected. */
  int fds = test_count_fds(), threads = test_settle_threads(threads0);
  if (fds > fds0 || threads > threads0) {
    fprintf(stderr, "FAIL rank %d: after ncclCommDestroy %d fds and %d threads, before "
            "ncclCommInitRank %d and %d\n", rank, fds, threads, fds0, threads0);
    return 1;
  }
  return failed;
}

int coll_run_config(const coll_case* cases, int n, uint64_t seed, int* status, int timeout_s,
                    int verbose) {
  if (n == 0) return 0;
  const int nranks = cases[0].nranks;
  size_t hashes_at = ((size_t)(n + nranks) * sizeof(int) + 7) / 8 * 8;
  size_t shared_len = hashes_at + (size_t)n * (size_t)nranks * sizeof(uint64_t);
  int* shared = mmap(NULL, shared_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  memset(shared, 0, (size_t)n * sizeof(int));
  for (int r = 0; r < nranks; r++) shared[n + r] = -1;
  memset((char*)shared + hashes_at, 0, (size_t)n * (size_t)nranks * sizeof(uint64_t));
  config_job job = {cases, n, seed, shared, shared + n,
                    (uint64_t*)(void*)((char*)shared + hashes_at), verbose};
  coll_apply_config_env(&cases[0]);
  int rc = test_fork_ranks(nranks, config_rank, &job, timeout_s);
  int unfinished = 0;
  for (int r = 0; r < nranks; r++) unfinished |= job.progress[r] < n;
  if (rc != 0 && unfinished)
    for (int r = 0; r < nranks; r++) {
      int at = job.progress[r];
      char name[COLL_CASE_STR] = "";
      if (at >= 0 && at < n) coll_case_format(&cases[at], name);
      fprintf(stderr, "  rank %d %s%s\n", r,
              at < 0 ? "never got its communicator" : at >= n ? "had finished every case" : "was in case ",
              name);
    }
  /* Every rank must hold the same bits where the collective gives every rank the same result
   * (each checked it against the reference within the op's tolerance; this is exact). */
  for (int i = 0; i < n; i++) {
    const uint64_t* h = job.hashes + (size_t)i * (size_t)nranks;
    for (int r = 1; r < nranks; r++) {
      if (h[0] == 0 || h[r] == 0 || h[r] == h[0]) continue;
      char name[COLL_CASE_STR];
      coll_case_format(&cases[i], name);
      fprintf(stderr, "FAIL %s: rank %d's output differs bit for bit from rank 0's\n", name, r);
      shared[i] |= COLL_STATUS_FAIL;
      rc = rc ? rc : 1;
      break;
    }
  }
  memcpy(status, shared, (size_t)n * sizeof(int));
  munmap(shared, shared_len);
  return rc;
}
