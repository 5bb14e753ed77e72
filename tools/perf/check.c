/* Input generation and the independent reference (see check.h).
 *
 * Values, per type kind and operator, chosen so the exact result is known and representable:
 *   integers, sum/avg/mulsum: 1..B with B = max / (ranks * 3 for mulsum), signed ones with a
 *                             random sign (avg: non-negative, so the division is unambiguous);
 *   integers, prod:           small factors (1, 2, 3, -1); wrap-around is exact modulo 2^bits;
 *   integers, max/min:        full-width random bits;
 *   floats, all but prod:     ±k/16, k = 1..16 (exact in every type but e5m2, where the value
 *                             is rounded once when stored and read back for the reference);
 *   floats, prod:             ±0.5, ±1, ±2 on the first 6 ranks, ±1 on the others.
 * The reference computes in double (floats) or uint64 (integers) and accepts a float within
 * (ranks + 2) * eps * sum|terms| (products: (ranks + 1) * eps * |result|) plus the type's
 * smallest subnormal. Element (rank, index) is a hash of (seed, rank, index): O(1) to
 * regenerate, so checking costs a few hash evaluations per element and rank. */
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static inline uint64_t rank_seed(uint64_t seed, int rank) {
  return mix64(seed ^ mix64((uint64_t)(uint32_t)rank + 0x5851f42d4c957f2dULL));
}

/* Everything about a check that does not change per element. */
struct gen {
  const struct perf_check* c;
  const struct perf_type* t;
  int op; /* enum perf_opkind, SUM for collectives without a reduction */
  int is_float, is_signed, exact;
  uint64_t mask, bound;
  double eps, tiny;
  uint64_t* seeds; /* per rank */
};

static int gen_init(struct gen* g, const struct perf_check* c) {
  const struct perf_coll* coll = &perf_colls[c->coll];
  const struct perf_type* t = c->type;
  memset(g, 0, sizeof *g);
  g->c = c;
  g->t = t;
  g->op = coll->has_op && !coll->op_label_only ? (int)c->op->kind : PERF_OP_SUM;
  g->is_float = t->kind == PERF_KIND_FLOAT;
  g->is_signed = t->kind == PERF_KIND_INT;
  g->mask = t->size >= 8 ? ~0ULL : (1ULL << (t->size * 8)) - 1;
  uint64_t maxpos = g->mask >> (g->is_signed ? 1 : 0);
  g->bound = maxpos / ((uint64_t)c->nranks * (g->op == PERF_OP_MULSUM ? 3 : 1));
  if (g->bound < 1) g->bound = 1;
  if (g->is_float) {
    g->exact = t->mant_bits + 1 >= 4; /* k/16 needs 4 significant bits */
    g->eps = perf_type_eps(t);
    g->tiny = ldexp(1.0, 2 - (1 << (t->exp_bits - 1)) - t->mant_bits);
  }
  g->seeds = malloc((size_t)c->nranks * sizeof *g->seeds);
  if (!g->seeds) return -1;
  for (int r = 0; r < c->nranks; r++) g->seeds[r] = rank_seed(c->seed, r);
  return 0;
}

static void gen_fini(struct gen* g) { free(g->seeds); }

static inline uint64_t hash_at(const struct gen* g, int rank, size_t index) {
  return mix64(g->seeds[rank] ^ (uint64_t)index);
}

static inline uint64_t int_value(const struct gen* g, uint64_t h) {
  uint64_t v;
  switch (g->op) {
    case PERF_OP_PROD: {
      static const int64_t sf[4] = {1, -1, 2, 1}, uf[4] = {1, 2, 1, 3};
      v = (uint64_t)(g->is_signed ? sf[h & 3] : uf[h & 3]);
      break;
    }
    case PERF_OP_MAX:
    case PERF_OP_MIN:
      v = h & g->mask;
      if (!v) v = 1;
      break;
    default: /* sum, avg, mulsum */
      v = 1 + (h >> 8) % g->bound;
      if (g->is_signed && g->op != PERF_OP_AVG && (h & 1)) v = (uint64_t)0 - v;
      break;
  }
  return v & g->mask;
}

/* The value as generated, before rounding to the type. */
static inline double float_raw(const struct gen* g, int rank, uint64_t h) {
  double sign = (h & 1) ? -1.0 : 1.0;
  if (g->op == PERF_OP_PROD) {
    if (rank >= 6) return sign;
    static const double pow2[3] = {0.5, 1.0, 2.0};
    return sign * pow2[(h >> 8) % 3];
  }
  return sign * (double)(1 + (h >> 8) % 16) * 0.0625;
}

/* The value as stored in the type. */
static inline double float_value(const struct gen* g, int rank, uint64_t h) {
  double v = float_raw(g, rank, h);
  if (g->exact) return v;
  char tmp[8];
  perf_store_float(g->t, tmp, 0, v);
  return perf_load_float(g->t, tmp, 0);
}

static inline double load_f(const struct perf_type* t, const void* buf, size_t i) {
  if (t->nccl == ncclFloat32) return ((const float*)buf)[i];
  if (t->nccl == ncclFloat64) return ((const double*)buf)[i];
  return perf_load_float(t, buf, i);
}

static inline void store_f(const struct perf_type* t, void* buf, size_t i, double v) {
  if (t->nccl == ncclFloat32)
    ((float*)buf)[i] = (float)v;
  else if (t->nccl == ncclFloat64)
    ((double*)buf)[i] = v;
  else
    perf_store_float(t, buf, i, v);
}

static inline void store_elem(const struct gen* g, int rank, size_t index, void* dst, size_t di) {
  uint64_t h = hash_at(g, rank, index);
  if (g->is_float)
    store_f(g->t, dst, di, float_raw(g, rank, h));
  else
    perf_store_int(g->t, dst, di, int_value(g, h));
}

void perf_check_element(const struct perf_check* c, int rank, size_t index, void* dst) {
  struct gen g;
  if (gen_init(&g, c)) return;
  store_elem(&g, rank, index, dst, 0);
  gen_fini(&g);
}

void perf_check_premul_scalar(const struct perf_type* t, int rank, void* buf) {
  memset(buf, 0, 8);
  double s = 1 + rank % 3;
  if (t->kind == PERF_KIND_FLOAT)
    perf_store_float(t, buf, 0, s);
  else
    perf_store_int(t, buf, 0, (uint64_t)s);
}

void perf_check_fill_range(const struct perf_check* c, void* in, size_t first, size_t end) {
  struct gen g;
  if (gen_init(&g, c)) return;
  if (end > c->counts.sendcount) end = c->counts.sendcount;
  for (size_t j = first; j < end; j++) store_elem(&g, c->rank, j, in, j);
  gen_fini(&g);
}

void perf_check_fill(const struct perf_check* c, void* in) {
  perf_check_fill_range(c, in, 0, c->counts.sendcount);
}

void perf_check_poison(void* buf, size_t bytes) {
  /* All ones: NaN in every float type (never within a tolerance), -1 or the maximum for
   * integers (rarely a right answer; a missing write shows on most elements anyway). */
  memset(buf, 0xFF, bytes);
}

/* Sign-extends an integer of the type's width for ordered comparisons. */
static inline int64_t as_signed(const struct gen* g, uint64_t v) {
  if (g->t->size >= 8) return (int64_t)v;
  uint64_t sign = (g->mask >> 1) + 1;
  return (int64_t)((v ^ sign) - sign);
}

static uint64_t int_reduce(const struct gen* g, size_t index) {
  int n = g->c->nranks;
  uint64_t acc = 0;
  for (int r = 0; r < n; r++) {
    uint64_t v = int_value(g, hash_at(g, r, index));
    if (g->op == PERF_OP_MULSUM) {
      acc += v * (uint64_t)(1 + r % 3);
    } else if (r == 0) {
      acc = v;
    } else if (g->op == PERF_OP_PROD) {
      acc *= v;
    } else if (g->op == PERF_OP_MAX) {
      if (g->is_signed ? as_signed(g, v) > as_signed(g, acc) : v > acc) acc = v;
    } else if (g->op == PERF_OP_MIN) {
      if (g->is_signed ? as_signed(g, v) < as_signed(g, acc) : v < acc) acc = v;
    } else {
      acc += v; /* sum, avg */
    }
  }
  if (g->op == PERF_OP_AVG) acc /= (uint64_t)n; /* inputs are non-negative */
  return acc & g->mask;
}

/* Reference and tolerance of a float reduction at index. */
static double float_reduce(const struct gen* g, size_t index, double* tol) {
  int n = g->c->nranks;
  double acc = 0, mag = 0;
  for (int r = 0; r < n; r++) {
    double x = float_value(g, r, hash_at(g, r, index));
    if (g->op == PERF_OP_MULSUM) x *= 1 + r % 3;
    if (r == 0) {
      acc = x;
      mag = fabs(x);
    } else if (g->op == PERF_OP_PROD) {
      acc *= x;
    } else if (g->op == PERF_OP_MAX) {
      acc = x > acc ? x : acc;
    } else if (g->op == PERF_OP_MIN) {
      acc = x < acc ? x : acc;
    } else {
      acc += x;
      mag += fabs(x);
    }
  }
  if (g->op == PERF_OP_AVG) {
    acc /= n;
    mag /= n;
  }
  if (g->op == PERF_OP_MAX || g->op == PERF_OP_MIN)
    *tol = 0;
  else if (g->op == PERF_OP_PROD)
    *tol = (n + 1) * g->eps * fabs(acc) + g->tiny;
  else
    *tol = (n + 2) * g->eps * mag + g->tiny;
  return acc;
}

static inline int reduced_wrong(const struct gen* g, const void* out, size_t i, size_t index) {
  if (g->is_float) {
    double tol;
    double want = float_reduce(g, index, &tol);
    double got = load_f(g->t, out, i);
    return !(fabs(got - want) <= tol);
  }
  return ((perf_load_int(g->t, out, i) ^ int_reduce(g, index)) & g->mask) != 0;
}

/* Output element i is a copy of rank src's input element index. */
static inline int copy_wrong(const struct gen* g, const void* out, size_t i, int src,
                             size_t index) {
  char want[8];
  size_t es = g->t->size;
  store_elem(g, src, index, want, 0);
  return memcmp(want, (const char*)out + i * es, es) != 0;
}

size_t perf_check_verify_range(const struct perf_check* c, const void* out, size_t first,
                               size_t end) {
  if (end > c->counts.recvcount) end = c->counts.recvcount;
  if (first >= end) return 0;
  struct gen g;
  if (gen_init(&g, c)) return end - first;
  size_t wrong = 0;
  size_t part = c->counts.paramcount;
  int rank = c->rank, nranks = c->nranks;
  switch (c->coll) {
    case PERF_ALL_REDUCE:
      for (size_t i = first; i < end; i++) wrong += (size_t)reduced_wrong(&g, out, i, i);
      break;
    case PERF_REDUCE:
      if (rank != c->root) break;
      for (size_t i = first; i < end; i++) wrong += (size_t)reduced_wrong(&g, out, i, i);
      break;
    case PERF_REDUCE_SCATTER:
      for (size_t i = first; i < end; i++)
        wrong += (size_t)reduced_wrong(&g, out, i, (size_t)rank * part + i);
      break;
    case PERF_BROADCAST:
      for (size_t i = first; i < end; i++) wrong += (size_t)copy_wrong(&g, out, i, c->root, i);
      break;
    case PERF_ALL_GATHER:
      for (size_t i = first; i < end; i++)
        wrong += (size_t)copy_wrong(&g, out, i, (int)(i / part), i % part);
      break;
    case PERF_SENDRECV:
      for (size_t i = first; i < end; i++)
        wrong += (size_t)copy_wrong(&g, out, i, (rank - 1 + nranks) % nranks, i);
      break;
    case PERF_ALLTOALL:
      for (size_t i = first; i < end; i++)
        wrong += (size_t)copy_wrong(&g, out, i, (int)(i / part), (size_t)rank * part + i % part);
      break;
    default: break;
  }
  gen_fini(&g);
  return wrong;
}

size_t perf_check_verify(const struct perf_check* c, const void* out) {
  return perf_check_verify_range(c, out, 0, c->counts.recvcount);
}

/* --- the same split over threads ------------------------------------------------------------ */

enum { PAR_MIN_PER_THREAD = 1 << 20, PAR_MAX_THREADS = 64 };

struct par_part {
  const struct perf_check* c;
  void* buf;
  size_t first, end;
  int verify;
  size_t wrong;
};

static void* par_main(void* arg) {
  struct par_part* w = arg;
  if (w->verify)
    w->wrong = perf_check_verify_range(w->c, w->buf, w->first, w->end);
  else
    perf_check_fill_range(w->c, w->buf, w->first, w->end);
  return NULL;
}

static size_t par_run(const struct perf_check* c, void* buf, size_t n, int verify, int nthreads) {
  size_t most = n / PAR_MIN_PER_THREAD;
  if (nthreads > PAR_MAX_THREADS) nthreads = PAR_MAX_THREADS;
  if ((size_t)nthreads > most) nthreads = (int)most;
  if (nthreads < 2) {
    struct par_part w = {c, buf, 0, n, verify, 0};
    par_main(&w);
    return w.wrong;
  }
  struct par_part w[PAR_MAX_THREADS];
  pthread_t tid[PAR_MAX_THREADS];
  int started[PAR_MAX_THREADS] = {0};
  size_t step = n / (size_t)nthreads;
  for (int k = 0; k < nthreads; k++) {
    size_t first = step * (size_t)k, end = k == nthreads - 1 ? n : first + step;
    w[k] = (struct par_part){c, buf, first, end, verify, 0};
  }
  for (int k = 1; k < nthreads; k++)
    started[k] = pthread_create(&tid[k], NULL, par_main, &w[k]) == 0;
  par_main(&w[0]);
  size_t wrong = w[0].wrong;
  for (int k = 1; k < nthreads; k++) {
    if (started[k])
      pthread_join(tid[k], NULL);
    else
      par_main(&w[k]); /* no thread: do that part here */
    wrong += w[k].wrong;
  }
  return wrong;
}

void perf_check_fill_par(const struct perf_check* c, void* in, int nthreads) {
  (void)par_run(c, in, c->counts.sendcount, 0, nthreads);
}

size_t perf_check_verify_par(const struct perf_check* c, const void* out, int nthreads) {
  return par_run(c, (void*)out, c->counts.recvcount, 1, nthreads);
}
