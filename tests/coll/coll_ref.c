/* Input generation, reference reductions and the float error bound (see coll_ref.h). */
#include "coll_ref.h"

#include <math.h>
#include <string.h>

#include "coll_fp.h"

static uint64_t type_mask(int esz) { return esz == 8 ? ~0ull : (1ull << (esz * 8)) - 1; }

int64_t coll_sext(ncclDataType_t type, uint64_t bits) {
  switch (type) {
    case ncclInt8: return (int8_t)bits;
    case ncclInt32: return (int32_t)bits;
    default: return (int64_t)bits;
  }
}

/* Largest value of an integer type, as a uint64. */
static uint64_t int_max(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return INT8_MAX;
    case ncclUint8: return UINT8_MAX;
    case ncclInt32: return INT32_MAX;
    case ncclUint32: return UINT32_MAX;
    case ncclInt64: return INT64_MAX;
    default: return UINT64_MAX;
  }
}

/* Bits of a float element: sign, unbiased exponent e (a normal binade), fraction. */
static inline uint64_t make_float(const coll_gen* g, uint64_t sign, int e, uint64_t frac) {
  return sign << (g->esz * 8 - 1) | (uint64_t)(g->bias + e) << g->mbits | (frac & g->fracmask);
}

/* Finite and non-zero (raw bits of a float type)? */
static inline int finite_nonzero(const coll_gen* g, uint64_t v) {
  uint64_t mag = v & (g->mask >> 1);
  if (mag == 0) return 0;
  if (g->type == ncclFloat8e4m3) return mag != 0x7f; /* only S.1111.111 is NaN */
  return ((v >> g->mbits) & g->expmask) != g->expmask;
}

void coll_gen_init(coll_gen* g, const coll_case* c, uint64_t seed) {
  memset(g, 0, sizeof *g);
  g->type = c->type;
  g->op = c->op;
  g->nranks = c->nranks;
  g->esz = (int)fp_type_size(c->type);
  g->mask = type_mask(g->esz);
  g->is_float = fp_is_float(c->type);
  g->table = fp_decode_table(c->type);
  if (g->is_float) {
    g->mbits = fp_mant_bits(c->type);
    int ebits = g->esz * 8 - 1 - g->mbits;
    g->bias = (1 << (ebits - 1)) - 1;
    g->expmask = (1ull << ebits) - 1;
    g->fracmask = (1ull << g->mbits) - 1;
  }
  if (c->op == OP_NONE)
    g->domain = DOM_BITS;
  else if (!g->is_float)
    g->domain = c->op == OP_PROD ? DOM_ODD : c->op == OP_AVG ? DOM_SMALL : DOM_BITS;
  else
    g->domain = c->op == OP_PROD ? DOM_NEAR_ONE
                : (c->op == OP_SUM || c->op == OP_AVG || c->op == OP_PREMULSUM) ? DOM_WIDE
                                                                                 : DOM_FINITE;
  g->avg_bound = int_max(c->type) / (uint64_t)c->nranks; /* >= 15 for every type */
  uint64_t key = coll_case_key(seed, c);
  g->key = key;
  uint64_t h = coll_mix64(key ^ 0x5ca1a25ca1a2ull);
  if (g->is_float) {
    double s = (h & 1 ? -1.0 : 1.0) * (0.5 + 1.5 * (double)(h >> 11) * fp_pow2(-53));
    g->scalar_bits = fp_encode(c->type, s);
    g->scalar = fp_decode(c->type, g->scalar_bits);
  } else {
    g->scalar_bits = (h >> 8) & g->mask;
    if (g->scalar_bits == 0) g->scalar_bits = 3;
  }
}

uint64_t coll_gen_value(const coll_gen* g, int rank, size_t i) {
  uint64_t rankkey = coll_mix64(g->key ^ ((uint64_t)(rank + 1) * 0xa0761d6478bd642full));
  uint64_t h = coll_mix64(rankkey ^ ((uint64_t)i * 0xd6e8feb86659fd93ull));
  uint64_t v, m;
  switch (g->domain) {
    case DOM_ODD: v = (h | 1) & g->mask; break;
    case DOM_SMALL:
      m = g->avg_bound;
      if (fp_is_signed_int(g->type))
        v = (h % (2 * m + 1) - m) & g->mask; /* in [-m, m], two's complement */
      else
        v = m == UINT64_MAX ? h : h % (m + 1);
      break;
    case DOM_WIDE: /* +-[0.25, 4): one of four binades, uniform fraction and sign */
      v = make_float(g, (h >> 2) & 1, -2 + (int)(h & 3), h >> 12);
      break;
    case DOM_NEAR_ONE: { /* +-[0.75, 1): upper half of binade -1; [1, 1.5): lower half of 0 */
      uint64_t half = 1ull << (g->mbits - 1), frac = (h >> 12) & (half - 1);
      v = (h & 2) ? make_float(g, h & 1, -1, half | frac) : make_float(g, h & 1, 0, frac);
      break;
    }
    case DOM_FINITE:
      while (!finite_nonzero(g, v = h & g->mask)) h = coll_mix64(h);
      break;
    default: v = h & g->mask; break;
  }
  return v ? v : 1; /* never zero (1 is a non-zero value of every type) */
}

/* Element value of a float type (through the table for the narrow ones). */
static inline double val(const coll_gen* g, uint64_t v) {
  return g->table ? g->table[v] : fp_decode(g->type, v);
}

uint64_t coll_custom_combine(ncclDataType_t type, uint64_t a, uint64_t b) {
  if (!fp_is_float(type)) return a ^ b;
  int bits = (int)fp_type_size(type) * 8;
  uint64_t sign = 1ull << (bits - 1);
  uint64_t ma = a & ~sign, mb = b & ~sign; /* magnitudes order like their codes (no NaN here) */
  if (ma != mb) return ma > mb ? a : b;
  return (a & sign) ? b : a;
}

static double pow1p_int(double u, int k) {
  double r = 1;
  for (int i = 0; i < k; i++) r *= 1 + u;
  return r;
}

double coll_tolerance(ncclDataType_t type, coll_op op, int n, double part, double sabs,
                      double ref) {
  double u = fp_unit_roundoff(type), lib;
  /* Computed partials may exceed exact ones by the errors made so far (and rounded terms their
   * exact values): the magnitude at which ulps are taken is widened by 2(n+1)u. */
  double m = part * (1 + 2 * (n + 1) * u);
  switch (op) {
    case OP_SUM: lib = (n - 1) * 0.5 * fp_ulp(type, m); break;
    case OP_PREMULSUM: lib = (2 * n - 1) * 0.5 * fp_ulp(type, m); break;
    case OP_AVG: lib = (2 * n - 1) * 0.5 * fp_ulp(type, m) + u * sabs; break;
    case OP_PROD: lib = sabs * (pow1p_int(u, n - 1) - 1); break;
    default: return 0;
  }
  double conv = 0.5 * fp_ulp(type, fabs(ref) * (1 + 0x1p-40));
  double own = 4.0 * n * 0x1p-53 * sabs;
  return lib + conv + own;
}

static void ref_int(const coll_gen* g, size_t i, coll_expect* e) {
  const int n = g->nranks, sgn = fp_is_signed_int(g->type);
  uint64_t acc = coll_gen_value(g, 0, i);
  int64_t sacc = coll_sext(g->type, acc);
  if (g->op == OP_PREMULSUM) acc *= g->scalar_bits;
  for (int r = 1; r < n; r++) {
    uint64_t v = coll_gen_value(g, r, i);
    int64_t sv = coll_sext(g->type, v);
    switch (g->op) {
      case OP_SUM: acc += v; break;
      case OP_PROD: acc *= v; break;
      case OP_MAX:
        if (sgn ? sv > coll_sext(g->type, acc) : v > acc) acc = v;
        break;
      case OP_MIN:
        if (sgn ? sv < coll_sext(g->type, acc) : v < acc) acc = v;
        break;
      case OP_AVG: /* the signed sum only where it is used: bounded inputs keep it in range */
        if (sgn) sacc += sv;
        acc += v;
        break;
      case OP_PREMULSUM: acc += v * g->scalar_bits; break;
      case OP_CUSTOM: acc ^= v; break;
      default: break;
    }
  }
  if (g->op == OP_AVG) acc = sgn ? (uint64_t)(sacc / n) : acc / (uint64_t)n;
  e->bits = acc & g->mask;
  e->exact = 1;
  e->tol = 0;
  e->ref = 0;
  e->inf_ok = 0;
}

static void ref_float(const coll_gen* g, size_t i, coll_expect* e) {
  const int n = g->nranks;
  uint64_t win = 0;
  double acc = 0, sabs = 0, pos = 0, neg = 0, grow = 1;
  e->inf_ok = 0;
  for (int r = 0; r < n; r++) {
    uint64_t v = coll_gen_value(g, r, i);
    double x = val(g, v), term = x;
    if (fabs(x) > 1) grow *= fabs(x); /* the largest partial product any order can reach */
    if (r == 0) {
      win = v;
      acc = g->op == OP_PROD ? 1 : 0;
    }
    switch (g->op) {
      case OP_PROD: acc *= x; break;
      case OP_MAX:
        if (x > val(g, win)) win = v;
        break;
      case OP_MIN:
        if (x < val(g, win)) win = v;
        break;
      case OP_CUSTOM: win = coll_custom_combine(g->type, win, v); break;
      case OP_AVG: term = x / n; break;
      case OP_PREMULSUM: term = x * g->scalar; break;
      default: break;
    }
    if (g->op == OP_SUM || g->op == OP_AVG || g->op == OP_PREMULSUM) {
      acc += term;
      sabs += fabs(term);
      if (term > 0) pos += term;
      else neg -= term;
    }
  }
  if (g->op == OP_MAX || g->op == OP_MIN || g->op == OP_CUSTOM) {
    e->bits = win;
    e->exact = 1;
    e->tol = 0;
    e->ref = fp_decode(g->type, win);
    return;
  }
  if (g->op == OP_PROD) {
    sabs = fabs(acc);
    e->inf_ok = isinf(fp_decode(g->type, fp_encode(g->type, grow)));
  }
  e->ref = acc;
  e->bits = fp_encode(g->type, acc);
  e->exact = 0;
  e->tol = coll_tolerance(g->type, g->op, n, pos > neg ? pos : neg, sabs, acc);
}

void coll_ref_reduce(const coll_gen* g, size_t i, coll_expect* e) {
  if (fp_is_float(g->type))
    ref_float(g, i, e);
  else
    ref_int(g, i, e);
}

int coll_ref_ok(const coll_gen* g, const coll_expect* e, uint64_t got) {
  got &= g->mask;
  if (e->exact) return got == e->bits;
  double d = fp_decode(g->type, got), want = fp_decode(g->type, e->bits);
  /* The expected value itself is right whatever the tolerance: also an infinity (a product
   * past the type's range), where the difference below would be NaN. */
  if (got == e->bits || d == want) return 1;
  if (e->inf_ok && isinf(d) && (d < 0) == (e->ref < 0)) return 1;
  return fabs(d - want) <= e->tol; /* false for NaN */
}
