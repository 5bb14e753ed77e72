/* One case on every local rank: buffers, API calls, verification (see gpu_run.h). */
#include "gpu_run.h"
#include "gpu_same.h"

#include <inttypes.h>
#include <string.h>

#include "coll_exec.h" /* coll_not_available */
#include "coll_check.h"
#include "coll_fp.h"

#define GUARD 64 /* bytes of guard zone on each side of a buffer */
#define GUARD_BYTE COLL_GUARD_BYTE
#define POISON_BYTE 0xcd /* outputs before the call */

static inline void st(unsigned char* p, size_t esz, size_t i, uint64_t v) {
  memcpy(p + esz * i, &v, esz);
}

static ncclRedOp_t builtin_op(coll_op op) {
  switch (op) {
    case OP_PROD: return ncclProd;
    case OP_MAX: return ncclMax;
    case OP_MIN: return ncclMin;
    case OP_AVG: return ncclAvg;
    default: return ncclSum;
  }
}

static int call_failed(gpu_run* run, gpu_world* w, int i, const char* call, ncclResult_t res) {
  ncclComm_t comm = w->loc[i].comm;
  if (coll_not_available(res, comm)) return GPU_RUN_NA;
  const char* last = ncclGetLastError(comm);
  fprintf(stderr, "FAIL rank %d: %s: %s returned %d (%s): %s\n", w->loc[i].rank, run->name, call,
          (int)res, ncclGetErrorString(res), last ? last : "");
  gpu_print_rerun(stderr, w->seed, run->name);
  return GPU_RUN_FATAL;
}

/* ---- prepare / fill ----------------------------------------------------------------------- */

static void* dev_alloc(gpu_run* run, size_t bytes, ncclResult_t* res) {
  void* p = NULL;
  *res = ncclSuccess;
  if (run->mem == GPU_MEM_NCCL)
    *res = ncclMemAlloc(&p, bytes);
  else
    CUDA_OK(cudaMalloc(&p, bytes));
  return *res == ncclSuccess ? p : NULL;
}

static void* host_alloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "out of memory allocating %zu host bytes\n", bytes);
    exit(GPU_FAIL);
  }
  return p;
}

int gpu_run_prepare(gpu_run* run, gpu_world* w, const gpu_case* c, uint64_t seed,
                    gpu_mem_kind mem) {
  memset(run, 0, sizeof *run);
  run->c = *c;
  gpu_case_name(c, run->name);
  run->nranks = w->nranks, run->nlocal = w->nlocal, run->mem = mem;
  run->count = gpu_case_count(c, w->nranks);
  run->esz = fp_type_size(c->type);
  uint64_t key = gpu_case_key(seed, c);
  run->variant = (int)(coll_mix64(key ^ 0x7a7a7a7aull) & 0xffff);
  run->off_a = (size_t)(run->variant >> 8 & 3);
  run->off_b = (size_t)(run->variant >> 10 & 3);

  const size_t n = (size_t)w->nranks, cnt = run->count, esz = run->esz;
  const int ip = c->inplace, drop = run->variant & 1;
  size_t la = 0, lb = 0;
  switch (c->kind) {
    case COLL_ALLREDUCE:
    case COLL_BROADCAST:
    case COLL_REDUCE:
    case COLL_SENDRECV: la = cnt, lb = cnt; break;
    case COLL_ALLGATHER: la = ip ? n * cnt : cnt, lb = n * cnt; break;
    case COLL_REDUCESCATTER: la = n * cnt, lb = cnt; break;
    case COLL_ALLTOALL:
    case GPU_A2A_P2P: la = n * cnt, lb = n * cnt; break;
    case COLL_GATHER: la = cnt, lb = n * cnt; break;
    case COLL_SCATTER: la = n * cnt, lb = cnt; break;
    default: break;
  }
  run->la = la, run->lb = lb;

  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* R = &w->loc[i];
    gpu_run_rank* r = &run->r[i];
    const int isroot = R->rank == c->root;
    int has_a = 1, has_b = !ip;
    if (!isroot && drop && (c->kind == COLL_REDUCE || c->kind == COLL_GATHER)) has_b = 0;
    if (!isroot && drop && c->kind == COLL_SCATTER) has_a = 0;
    CUDA_OK(cudaSetDevice(R->dev));
    ncclResult_t res = ncclSuccess;
    if (has_a) {
      r->raw_a_len = 2 * GUARD + (la + 3) * esz;
      r->raw_a = dev_alloc(run, r->raw_a_len, &res);
      if (res != ncclSuccess) return call_failed(run, w, i, "ncclMemAlloc", res);
      r->a = r->raw_a + GUARD + run->off_a * esz;
      r->host_a = host_alloc(r->raw_a_len);
    }
    if (has_b) {
      r->raw_b_len = 2 * GUARD + (lb + 3) * esz;
      r->raw_b = dev_alloc(run, r->raw_b_len, &res);
      if (res != ncclSuccess) return call_failed(run, w, i, "ncclMemAlloc", res);
      r->b = r->raw_b + GUARD + run->off_b * esz;
      r->host_b = host_alloc(r->raw_b_len);
    }
    r->host_in = host_alloc(la * esz);
    r->sendbuff = r->a;
    r->recvbuff = ip ? r->a : r->b;
    if (ip && c->kind == COLL_ALLGATHER) r->sendbuff = r->a + (size_t)R->rank * cnt * esz;
    if (ip && c->kind == COLL_REDUCESCATTER) r->recvbuff = r->a + (size_t)R->rank * cnt * esz;
    switch (c->kind) {
      case COLL_REDUCESCATTER:
      case COLL_ALLTOALL:
      case GPU_A2A_P2P:
      case COLL_SCATTER: r->nsend = n * cnt; break;
      default: r->nsend = cnt; break;
    }
    if (!has_a) r->nsend = 0;
  }

  /* Inputs first: a PreMulSum op is created with the scalar of the first fill. */
  gpu_run_fill(run, w, seed);
  for (int i = 0; i < w->nlocal; i++) {
    gpu_run_rank* r = &run->r[i];
    r->op = builtin_op(c->op);
    if (!gpu_kind_is_reduction(c->kind) || c->op != OP_PREMULSUM) continue;
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    ncclResult_t res;
    if (c->scalar_dev) {
      res = ncclRedOpCreatePreMulSum(&r->op, r->dscalar, c->type, ncclScalarDevice,
                                     w->loc[i].comm);
    } else {
      unsigned char scalar[8];
      memcpy(scalar, &run->gen.scalar_bits, sizeof scalar);
      res = ncclRedOpCreatePreMulSum(&r->op, scalar, c->type, ncclScalarHostImmediate,
                                     w->loc[i].comm);
      memset(scalar, 0xff, sizeof scalar); /* host-immediate: read before the call returned */
    }
    if (res != ncclSuccess) return call_failed(run, w, i, "ncclRedOpCreatePreMulSum", res);
    r->op_made = 1;
  }
  return GPU_RUN_OK;
}

void gpu_run_fill(gpu_run* run, gpu_world* w, uint64_t seed) {
  const gpu_case* c = &run->c;
  const size_t esz = run->esz;
  uint64_t keep_bits = run->gen.scalar_bits;
  double keep_val = run->gen.scalar;
  int refill = run->seed != 0 && run->seed != seed;
  coll_case ref = gpu_case_ref(c, w->nranks);
  coll_gen_init(&run->gen, &ref, gpu_case_key(seed, c));
  run->seed = seed;
  if (refill && c->op == OP_PREMULSUM && !c->scalar_dev) {
    run->gen.scalar_bits = keep_bits; /* baked into the op */
    run->gen.scalar = keep_val;
  }
  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* R = &w->loc[i];
    gpu_run_rank* r = &run->r[i];
    const int isroot = R->rank == c->root, ip = c->inplace;
    CUDA_OK(cudaSetDevice(R->dev));
    if (r->raw_a) CUDA_OK(cudaMemsetAsync(r->raw_a, GUARD_BYTE, r->raw_a_len, R->stream));
    if (r->raw_b) CUDA_OK(cudaMemsetAsync(r->raw_b, GUARD_BYTE, r->raw_b_len, R->stream));
    if (r->b) CUDA_OK(cudaMemsetAsync(r->b, POISON_BYTE, run->lb * esz, R->stream));
    if (ip && (c->kind == COLL_ALLGATHER || (c->kind == COLL_BROADCAST && !isroot)))
      CUDA_OK(cudaMemsetAsync(r->a, POISON_BYTE, run->la * esz, R->stream));
    if (!(ip && c->kind == COLL_BROADCAST && !isroot) && r->nsend) {
      for (size_t k = 0; k < r->nsend; k++)
        st(r->host_in, esz, k, coll_gen_value(&run->gen, R->rank, k));
      CUDA_OK(cudaMemcpyAsync(r->sendbuff, r->host_in, r->nsend * esz, cudaMemcpyHostToDevice,
                              R->stream));
    }
    if (c->op == OP_PREMULSUM && c->scalar_dev) {
      if (!r->dscalar) CUDA_OK(cudaMalloc(&r->dscalar, 8));
      r->scalar_host = run->gen.scalar_bits;
      CUDA_OK(cudaMemcpyAsync(r->dscalar, &r->scalar_host, esz, cudaMemcpyHostToDevice,
                              R->stream));
    }
  }
}

/* ---- issue -------------------------------------------------------------------------------- */

static ncclResult_t issue_rank(gpu_run* run, gpu_rank* R, gpu_run_rank* r, const char** call) {
  const gpu_case* c = &run->c;
  const size_t cnt = run->count, esz = run->esz;
  const ncclDataType_t t = c->type;
  const int n = run->nranks, recv_first = run->variant & 4;
  ncclComm_t comm = R->comm;
  cudaStream_t s = R->stream;
  *call = gpu_kind_name[c->kind];
  switch (c->kind) {
    case COLL_ALLREDUCE: return ncclAllReduce(r->sendbuff, r->recvbuff, cnt, t, r->op, comm, s);
    case COLL_REDUCE:
      return ncclReduce(r->sendbuff, r->recvbuff, cnt, t, r->op, c->root, comm, s);
    case COLL_BROADCAST:
      if (c->inplace && (run->variant & 2)) {
        *call = "Bcast";
        return ncclBcast(r->recvbuff, cnt, t, c->root, comm, s);
      }
      return ncclBroadcast(r->sendbuff, r->recvbuff, cnt, t, c->root, comm, s);
    case COLL_ALLGATHER: return ncclAllGather(r->sendbuff, r->recvbuff, cnt, t, comm, s);
    case COLL_REDUCESCATTER:
      return ncclReduceScatter(r->sendbuff, r->recvbuff, cnt, t, r->op, comm, s);
    case COLL_ALLTOALL: return ncclAlltoAll(r->sendbuff, r->recvbuff, cnt, t, comm, s);
    case COLL_GATHER: return ncclGather(r->sendbuff, r->recvbuff, cnt, t, c->root, comm, s);
    case COLL_SCATTER: return ncclScatter(r->sendbuff, r->recvbuff, cnt, t, c->root, comm, s);
    case COLL_SENDRECV:
    case GPU_A2A_P2P: {
      ncclResult_t res = ncclGroupStart(), e;
      if (res != ncclSuccess) return res;
      int peers = c->kind == COLL_SENDRECV ? 1 : n;
      for (int k = 0; k < peers && res == ncclSuccess; k++) {
        int to = c->kind == COLL_SENDRECV ? (R->rank + c->root) % n : k;
        int from = c->kind == COLL_SENDRECV ? (R->rank - c->root + n) % n : k;
        size_t so = c->kind == COLL_SENDRECV ? 0 : (size_t)to * cnt * esz;
        size_t ro = c->kind == COLL_SENDRECV ? 0 : (size_t)from * cnt * esz;
        char* sb = (char*)r->sendbuff + so;
        char* rb = (char*)r->recvbuff + ro;
        for (int step = 0; step < 2 && res == ncclSuccess; step++) {
          int do_recv = (step == 0) == (recv_first != 0);
          *call = do_recv ? "Recv" : "Send";
          res = do_recv ? ncclRecv(rb, cnt, t, from, comm, s) : ncclSend(sb, cnt, t, to, comm, s);
        }
      }
      e = ncclGroupEnd();
      if (res == ncclSuccess && e != ncclSuccess) *call = "GroupEnd (after Send/Recv)";
      return res != ncclSuccess ? res : e;
    }
    default: return ncclInvalidArgument;
  }
}

int gpu_run_issue(gpu_run* run, gpu_world* w) {
  ncclResult_t res = gpu_group_start(w);
  if (res != ncclSuccess) return call_failed(run, w, 0, "ncclGroupStart", res);
  int bad = -1;
  const char* call = "";
  char what[64];
  for (int i = 0; i < w->nlocal && bad < 0; i++) {
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    res = issue_rank(run, &w->loc[i], &run->r[i], &call);
    if (res != ncclSuccess) bad = i;
  }
  ncclResult_t e = gpu_group_end(w);
  if (bad >= 0) {
    snprintf(what, sizeof what, "nccl%s", call);
    return call_failed(run, w, bad, what, res);
  }
  if (e != ncclSuccess) return call_failed(run, w, 0, "ncclGroupEnd", e);
  return GPU_RUN_OK;
}

/* ---- windows ------------------------------------------------------------------------------ */

/* Whether every rank holds buffer j (0: raw_a, 1: raw_b) of this case, alike on every rank (the
 * variant derives from the case): gpu_run_prepare leaves a recvbuff NULL off the root of Reduce
 * and Gather, a sendbuff off the root of Scatter, and allocates no b in place. */
static int held_by_every_rank(const gpu_run* run, int j) {
  const gpu_case* c = &run->c;
  const int drop = run->nranks > 1 && (run->variant & 1);
  if (j == 0) return !(drop && c->kind == COLL_SCATTER);
  return !c->inplace && !(drop && (c->kind == COLL_REDUCE || c->kind == COLL_GATHER));
}

int gpu_run_register_windows(gpu_run* run, gpu_world* w) {
  run->windows = 1;
  /* Collective: one thread registering for several ranks does it inside a group, so that
   * weft maps every rank's window at once in ncclGroupEnd (each waits for its peers). */
  ncclResult_t res = gpu_group_start(w);
  if (res != ncclSuccess) return call_failed(run, w, 0, "ncclGroupStart", res);
  int bad = -1;
  for (int i = 0; i < w->nlocal && bad < 0; i++) {
    gpu_run_rank* r = &run->r[i];
    unsigned char* raw[2] = {r->raw_a, r->raw_b};
    const size_t len[2] = {r->raw_a_len, r->raw_b_len};
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    for (int j = 0; j < 2 && bad < 0; j++) {
      if (!held_by_every_rank(run, j)) continue;
      if (!raw[j]) {
        fprintf(stderr, "FAIL rank %d: %s: the harness has no buffer %c to register\n",
                w->loc[i].rank, run->name, "ab"[j]);
        gpu_print_rerun(stderr, w->seed, run->name);
        (void)gpu_group_end(w);
        return GPU_RUN_FATAL;
      }
      res = ncclCommWindowRegister(w->loc[i].comm, raw[j], len[j], &r->win[j],
                                   NCCL_WIN_COLL_SYMMETRIC);
      if (res != ncclSuccess) {
        r->win[j] = NULL;
        bad = i;
      }
    }
  }
  ncclResult_t e = gpu_group_end(w);
  if (bad >= 0) return call_failed(run, w, bad, "ncclCommWindowRegister", res);
  if (e != ncclSuccess)
    return call_failed(run, w, 0, "ncclGroupEnd (after ncclCommWindowRegister)", e);
  return GPU_RUN_OK;
}

size_t gpu_run_deregister_windows(gpu_run* run, gpu_world* w) {
  if (!run->windows) return 0;
  run->windows = 0;
  size_t problems = 0;
  ncclResult_t g = gpu_group_start(w);
  for (int i = 0; i < w->nlocal; i++)
    for (int j = 0; j < 2; j++) {
      gpu_run_rank* r = &run->r[i];
      if (!r->win[j]) continue;
      CUDA_OK(cudaSetDevice(w->loc[i].dev));
      ncclResult_t res = ncclCommWindowDeregister(w->loc[i].comm, r->win[j]);
      r->win[j] = NULL;
      if (res == ncclSuccess) continue;
      fprintf(stderr, "FAIL rank %d: %s: ncclCommWindowDeregister returned %d (%s): %s\n",
              w->loc[i].rank, run->name, (int)res, ncclGetErrorString(res),
              ncclGetLastError(w->loc[i].comm));
      problems++;
    }
  ncclResult_t e = gpu_group_end(w);
  if (g != ncclSuccess || e != ncclSuccess) {
    fprintf(stderr, "FAIL: %s: ncclGroupStart/End around ncclCommWindowDeregister returned "
            "%d/%d\n", run->name, (int)g, (int)e);
    problems++;
  }
  return problems;
}

int gpu_run_register_local(gpu_run* run, gpu_world* w) {
  run->registered = 1;
  for (int i = 0; i < w->nlocal; i++) {
    gpu_run_rank* r = &run->r[i];
    unsigned char* raw[2] = {r->raw_a, r->raw_b};
    const size_t len[2] = {r->raw_a_len, r->raw_b_len};
    /* 0, 16, 32 or 48 bytes into the 64-byte guard zone: the buffer's offset in its
     * registration differs by rank */
    const size_t skip = (size_t)(w->loc[i].rank % 4) * 16;
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    for (int j = 0; j < 2; j++) {
      if (!held_by_every_rank(run, j) || !raw[j]) continue;
      ncclResult_t res = ncclCommRegister(w->loc[i].comm, raw[j] + skip, len[j] - skip,
                                          &r->reg[j]);
      if (res != ncclSuccess) {
        r->reg[j] = NULL;
        return call_failed(run, w, i, "ncclCommRegister", res);
      }
    }
  }
  return GPU_RUN_OK;
}

size_t gpu_run_deregister_local(gpu_run* run, gpu_world* w) {
  if (!run->registered) return 0;
  run->registered = 0;
  size_t problems = 0;
  for (int i = 0; i < w->nlocal; i++)
    for (int j = 0; j < 2; j++) {
      gpu_run_rank* r = &run->r[i];
      if (!r->reg[j]) continue;
      CUDA_OK(cudaSetDevice(w->loc[i].dev));
      ncclResult_t res = ncclCommDeregister(w->loc[i].comm, r->reg[j]);
      r->reg[j] = NULL;
      if (res == ncclSuccess) continue;
      fprintf(stderr, "FAIL rank %d: %s: ncclCommDeregister returned %d (%s): %s\n",
              w->loc[i].rank, run->name, (int)res, ncclGetErrorString(res),
              ncclGetLastError(w->loc[i].comm));
      problems++;
    }
  return problems;
}

int gpu_run_register(gpu_run* run, gpu_world* w, int kind) {
  if (kind == GPU_REG_WINDOW) return gpu_run_register_windows(run, w);
  if (kind == GPU_REG_LOCAL) return gpu_run_register_local(run, w);
  return GPU_RUN_OK;
}

/* ---- verify ------------------------------------------------------------------------------- */

/* A device pointer inside raw (downloaded at host_raw) as a host pointer. */
static unsigned char* host_of(const unsigned char* raw, unsigned char* host_raw, const void* p) {
  return host_raw + ((const unsigned char*)p - raw);
}

size_t gpu_run_verify(gpu_run* run, gpu_world* w) {
  const gpu_case* c = &run->c;
  const int n = run->nranks, ip = c->inplace;
  const size_t cnt = run->count, esz = run->esz;
  coll_checker ks[GPU_MAX_LOCAL];
  coll_checker* kp[GPU_MAX_LOCAL];
  unsigned char* outs[GPU_MAX_LOCAL];
  int nout = 0;
  for (int i = 0; i < w->nlocal; i++) {
    gpu_run_rank* r = &run->r[i];
    ks[i] = (coll_checker){&run->gen, c->type, esz, w->loc[i].rank, 0, 0};
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    if (r->raw_a) CUDA_OK(cudaMemcpy(r->host_a, r->raw_a, r->raw_a_len, cudaMemcpyDeviceToHost));
    if (r->raw_b) CUDA_OK(cudaMemcpy(r->host_b, r->raw_b, r->raw_b_len, cudaMemcpyDeviceToHost));
  }
  /* Where every rank gets the same result, the same bits (gpu_same.h). */
  if (c->kind == COLL_ALLREDUCE || c->kind == COLL_ALLGATHER || c->kind == COLL_BROADCAST)
    for (int i = 0; i < w->nlocal; i++) {
      gpu_run_rank* r = &run->r[i];
      if (!r->recvbuff) continue;
      size_t len = cnt * esz * (c->kind == COLL_ALLGATHER ? (size_t)n : 1);
      gpu_same_record(w->loc[i].rank, ip ? host_of(r->raw_a, r->host_a, r->recvbuff)
                                         : host_of(r->raw_b, r->host_b, r->recvbuff), len);
    }
  /* AllReduce: every local rank against one reference pass. */
  if (c->kind == COLL_ALLREDUCE) {
    for (int i = 0; i < w->nlocal; i++) {
      gpu_run_rank* r = &run->r[i];
      unsigned char* raw = ip ? r->raw_a : r->raw_b;
      unsigned char* host = ip ? r->host_a : r->host_b;
      kp[nout] = &ks[i];
      outs[nout++] = host_of(raw, host, r->recvbuff);
    }
    coll_check_reduce_n(kp, (const unsigned char* const*)outs, nout, cnt, 0);
  }
  for (int i = 0; i < w->nlocal; i++) {
    gpu_run_rank* r = &run->r[i];
    coll_checker* k = &ks[i];
    const int rank = w->loc[i].rank, isroot = rank == c->root;
    /* Output: recvbuff lies in a (in place) or b. */
    const unsigned char* out = NULL;
    if (r->recvbuff)
      out = ip ? host_of(r->raw_a, r->host_a, r->recvbuff)
               : host_of(r->raw_b, r->host_b, r->recvbuff);
    const unsigned char* in_a = r->raw_a ? host_of(r->raw_a, r->host_a, r->a) : NULL;
    switch (c->kind) {
      case COLL_REDUCE:
        if (isroot) {
          coll_check_reduce(k, out, cnt, 0);
        } else if (ip) {
          coll_check_copy(k, "buffer (not root, in place)", in_a, 0, cnt, rank, 0);
        } else if (r->raw_b) {
          coll_check_bytes(k, "recvbuff (not root)", host_of(r->raw_b, r->host_b, r->b),
                           cnt * esz, POISON_BYTE);
        }
        break;
      case COLL_REDUCESCATTER: coll_check_reduce(k, out, cnt, (size_t)rank * cnt); break;
      case COLL_BROADCAST: coll_check_copy(k, "recvbuff", out, 0, cnt, c->root, 0); break;
      case COLL_ALLGATHER:
        for (int j = 0; j < n; j++) coll_check_copy(k, "recvbuff", out, (size_t)j * cnt, cnt, j, 0);
        break;
      case COLL_SENDRECV:
        coll_check_copy(k, "recvbuff", out, 0, cnt, (rank - c->root + n) % n, 0);
        break;
      case COLL_ALLTOALL:
      case GPU_A2A_P2P:
        for (int j = 0; j < n; j++)
          coll_check_copy(k, "recvbuff", out, (size_t)j * cnt, cnt, j, (size_t)rank * cnt);
        break;
      case COLL_GATHER:
        if (isroot)
          for (int j = 0; j < n; j++)
            coll_check_copy(k, "recvbuff", out, (size_t)j * cnt, cnt, j, 0);
        else if (r->raw_b)
          coll_check_bytes(k, "recvbuff (not root)", host_of(r->raw_b, r->host_b, r->b),
                           run->lb * esz, POISON_BYTE);
        break;
      case COLL_SCATTER:
        coll_check_copy(k, "recvbuff", out, 0, cnt, c->root, (size_t)rank * cnt);
        break;
      default: break;
    }
    if (!ip && r->raw_a)
      coll_check_copy(k, "sendbuff (must stay unchanged)", in_a, 0, r->nsend, rank, 0);
    if (r->raw_a)
      coll_check_guards(k, ip ? "buffer" : "sendbuff", r->host_a, r->raw_a_len,
                        (size_t)(r->a - r->raw_a), run->la * esz);
    if (r->raw_b)
      coll_check_guards(k, "recvbuff", r->host_b, r->raw_b_len, (size_t)(r->b - r->raw_b),
                        run->lb * esz);
  }
  size_t total = 0;
  for (int i = 0; i < w->nlocal; i++) {
    if (!ks[i].problems) continue;
    total += ks[i].problems;
    fprintf(stderr, "FAIL rank %d: %s: %zu problem(s) (count %zu, %zu bytes per element, "
            "send offset %zu, recv offset %zu elements, seed 0x%" PRIx64 ")\n",
            ks[i].rank, run->name, ks[i].problems, cnt, esz, run->off_a,
            ip ? run->off_a : run->off_b, run->seed);
  }
  if (total) gpu_print_rerun(stderr, w->seed, run->name);
  return total;
}

size_t gpu_run_release(gpu_run* run, gpu_world* w) {
  size_t problems = gpu_run_deregister_windows(run, w); /* before the memory goes */
  problems += gpu_run_deregister_local(run, w);
  for (int i = 0; i < w->nlocal; i++) {
    gpu_run_rank* r = &run->r[i];
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    if (r->op_made) {
      ncclResult_t res = ncclRedOpDestroy(r->op, w->loc[i].comm);
      if (res != ncclSuccess) {
        fprintf(stderr, "FAIL rank %d: %s: ncclRedOpDestroy returned %d (%s)\n", w->loc[i].rank,
                run->name, (int)res, ncclGetErrorString(res));
        problems++;
      }
      r->op_made = 0;
    }
    unsigned char* raws[2] = {r->raw_a, r->raw_b};
    for (int j = 0; j < 2; j++) {
      if (!raws[j]) continue;
      if (run->mem == GPU_MEM_NCCL) {
        ncclResult_t res = ncclMemFree(raws[j]);
        if (res != ncclSuccess) {
          fprintf(stderr, "FAIL rank %d: %s: ncclMemFree returned %d (%s)\n", w->loc[i].rank,
                  run->name, (int)res, ncclGetErrorString(res));
          problems++;
        }
      } else {
        CUDA_OK(cudaFree(raws[j]));
      }
    }
    if (r->dscalar) CUDA_OK(cudaFree(r->dscalar));
    free(r->host_in);
    free(r->host_a);
    free(r->host_b);
    memset(r, 0, sizeof *r);
  }
  return problems;
}

int gpu_run_case_win(gpu_world* w, const gpu_case* c, uint64_t seed, gpu_mem_kind mem,
                     int reg) {
  gpu_run run;
  char name[GPU_CASE_STR];
  gpu_case_name(c, name);
  gpu_watchdog_arm("case %s%s", name, reg == GPU_REG_WINDOW ? " (in windows)"
                                     : reg == GPU_REG_LOCAL ? " (registered)" : "");
  int rc = gpu_run_prepare(&run, w, c, seed, mem);
  if (rc == GPU_RUN_OK) rc = gpu_run_register(&run, w, reg);
  if (rc == GPU_RUN_OK) rc = gpu_run_issue(&run, w);
  if (rc == GPU_RUN_FATAL) gpu_die(w);
  size_t problems = 0;
  if (rc == GPU_RUN_OK) {
    if (gpu_wait(w, name)) {
      gpu_print_rerun(stderr, w->seed, name);
      gpu_die(w);
    }
    problems = gpu_run_verify(&run, w);
  }
  problems += gpu_run_release(&run, w);
  gpu_watchdog_disarm();
  return problems ? GPU_FAIL : rc == GPU_RUN_NA ? GPU_SKIP : GPU_PASS;
}

int gpu_run_case(gpu_world* w, const gpu_case* c, uint64_t seed, gpu_mem_kind mem) {
  return gpu_run_case_win(w, c, seed, mem, 0);
}

int gpu_run_gate(gpu_world* w) {
  gpu_case gate = {COLL_ALLREDUCE, ncclFloat32, OP_SUM, 0, 2, 0, 0};
  int rc = gpu_run_case(w, &gate, w->seed, GPU_MEM_CUDA);
  if (rc == GPU_SKIP && w->loc[0].rank == 0)
    printf("SKIP: weft's device data path is not available yet (ncclAllReduce on a device "
           "communicator: %s)\n", ncclGetLastError(w->loc[0].comm));
  return rc;
}

int gpu_run_window_gate(gpu_world* w, gpu_mem_kind mem, int reg) {
  gpu_case gate = {COLL_ALLREDUCE, ncclFloat32, OP_SUM, 0, 2, 0, 0};
  int rc = gpu_run_case_win(w, &gate, w->seed, mem, reg);
  if (rc == GPU_SKIP && w->loc[0].rank == 0)
    printf("SKIP: %s buffers %s are not available yet: %s\n",
           mem == GPU_MEM_NCCL ? "ncclMemAlloc" : "cudaMalloc",
           reg == GPU_REG_WINDOW ? "in windows" : "registered", ncclGetLastError(w->loc[0].comm));
  return rc;
}
