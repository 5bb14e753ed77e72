/* Every datatype × reduction (host_reduce, host_prepare, host_reduce_prepare, host_finish) on
 * random data against a reference computed independently (reduce_ref.c; integers in 64-bit
 * arithmetic with explicit wrap-around), under every aliasing the header allows, at lengths
 * and offsets that exercise the vector loops' tails. fp8: all 65536 operand pairs, and the
 * lookup-table kernels against the conversion kernels they are filled from. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/reduce.h"
#include "host/reduce_kernels.h"
#include "reduce_ref.h"
#include "testutil.h"
#include "util/names.h"

enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_N };
static const char* op_names[] = {"sum", "prod", "max", "min"};

static uint64_t rng;

/* ---- raw element access (elements as up to 64 bits) ---- */

static uint64_t get_raw(const void* buf, size_t i, size_t size) {
  uint64_t v = 0;
  memcpy(&v, (const char*)buf + i * size, size); /* little-endian hosts */
  return v;
}

static void put_raw(void* buf, size_t i, size_t size, uint64_t v) {
  memcpy((char*)buf + i * size, &v, size);
}

static int is_signed_int(ncclDataType_t t) {
  return t == ncclInt8 || t == ncclInt32 || t == ncclInt64;
}

/* ---- integer reference ---- */

static int64_t sval(uint64_t raw, int w) {
  if (w == 64) return raw < (1ull << 63) ? (int64_t)raw : -(int64_t)~raw - 1;
  uint64_t top = 1ull << (w - 1);
  return (int64_t)raw - ((raw & top) ? (int64_t)(top << 1) : 0);
}

static uint64_t wrap(uint64_t v, int w) { return w == 64 ? v : v & ((1ull << w) - 1); }

static uint64_t mul64(uint64_t a, uint64_t b) { /* modulo 2^64 from 32-bit halves */
  uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
  return al * bl + (((al * bh + ah * bl) & 0xffffffffu) << 32);
}

static uint64_t ref_int(ncclDataType_t t, int op, uint64_t a, uint64_t b) {
  int w = (int)dtype_size(t) * 8;
  int sgn = is_signed_int(t);
  switch (op) {
    case OP_SUM:
      if (w == 64) return a + b;
      return sgn ? wrap((uint64_t)(sval(a, w) + sval(b, w)), w) : wrap(a + b, w);
    case OP_PROD:
      if (w == 64) return mul64(a, b);
      return sgn ? wrap((uint64_t)(sval(a, w) * sval(b, w)), w) : wrap(a * b, w);
    case OP_MAX:
      if (sgn) return sval(a, w) > sval(b, w) ? a : b;
      return a > b ? a : b;
    default:
      if (sgn) return sval(a, w) < sval(b, w) ? a : b;
      return a < b ? a : b;
  }
}

static uint64_t ref_int_div(ncclDataType_t t, uint64_t x, int n) {
  int w = (int)dtype_size(t) * 8;
  if (is_signed_int(t)) return wrap((uint64_t)(sval(x, w) / (int64_t)n), w);
  return x / (uint64_t)n;
}

/* ---- float reference (values carried in double) ---- */

static double fdecode(ncclDataType_t t, uint64_t raw) {
  if (t == ncclFloat64) {
    double d;
    memcpy(&d, &raw, sizeof d);
    return d;
  }
  return ref_decode(ref_fmt_of(t), (uint32_t)raw);
}

static uint64_t fround(ncclDataType_t t, double v) {
  if (t == ncclFloat64) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
  }
  return ref_round(ref_fmt_of(t), v);
}

static double ref_float_op(int op, double a, double b) {
  switch (op) {
    case OP_SUM: return a + b;
    case OP_PROD: return a * b;
    case OP_MAX: return ref_max(a, b);
    default: return ref_min(a, b);
  }
}

/* Expected raw result of a ⊕ b. */
static uint64_t ref_op(ncclDataType_t t, int op, uint64_t a, uint64_t b) {
  if (!dtype_is_float(t)) return ref_int(t, op, a, b);
  return fround(t, ref_float_op(op, fdecode(t, a), fdecode(t, b)));
}

/* round(s·x) in the type */
static uint64_t ref_pre(ncclDataType_t t, uint64_t s, uint64_t x) {
  if (!dtype_is_float(t)) return ref_int(t, OP_PROD, s, x);
  return fround(t, fdecode(t, s) * fdecode(t, x));
}

static uint64_t ref_div(ncclDataType_t t, uint64_t x, int n) {
  if (!dtype_is_float(t)) return ref_int_div(t, x, n);
  return fround(t, fdecode(t, x) / n);
}

static int raw_is_nan(ncclDataType_t t, uint64_t raw) {
  if (!dtype_is_float(t)) return 0;
  return isnan(fdecode(t, raw));
}

/* ---- random data ---- */

static uint64_t rand_elem(ncclDataType_t t) {
  uint64_t r = test_rand(&rng);
  size_t size = dtype_size(t);
  if (t == ncclFloat32 || t == ncclFloat64) {
    /* Mostly ordinary values within a few binades, so sums and products round; some arbitrary
     * patterns (specials, subnormals, extremes). */
    if ((r & 7) == 0) return wrap(test_rand(&rng), (int)size * 8);
    double m = 1.0 + (double)(test_rand(&rng) >> 11) / 9007199254740992.0;
    double v = ldexp(m, (int)((r >> 8) % 41) - 20);
    if (r & 0x10) v = -v;
    if (t == ncclFloat32) {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, sizeof u);
      return u;
    }
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
  }
  if (t == ncclInt8 || t == ncclUint8 || t == ncclInt32 || t == ncclUint32) {
    if ((r & 3) == 0) return wrap((r >> 8) % 7, (int)size * 8); /* small: products stay exact */
  }
  /* Narrow floats: any pattern (NaN, inf, subnormals included); integers: any value. */
  return wrap(r >> 3, (int)size * 8);
}

static void fill(void* buf, ncclDataType_t t, size_t n) {
  for (size_t i = 0; i < n; i++) put_raw(buf, i, dtype_size(t), rand_elem(t));
}

/* ---- checking ---- */

static void expect_elem(ncclDataType_t t, const char* what, size_t i, uint64_t got, uint64_t want) {
  if (raw_is_nan(t, want)) {
    if (raw_is_nan(t, got)) return;
  } else if (got == want) {
    return;
  }
  fprintf(stderr, "%s %s: element %zu = 0x%llx, expected 0x%llx\n", dtype_name(t), what, i,
          (unsigned long long)got, (unsigned long long)want);
  exit(1);
}

/* Buffers with one element of slack in front, used at offset 1 to misalign them. */
typedef struct {
  unsigned char* base;
  void* p;
} buf_t;

static buf_t buf_new(ncclDataType_t t, size_t n, int offset) {
  size_t size = dtype_size(t);
  buf_t b;
  b.base = malloc((n + 1) * size);
  EXPECT(b.base != NULL);
  b.p = b.base + (size_t)offset * size;
  return b;
}

/* host_reduce under every aliasing; a and b hold the inputs, n elements. */
static void check_reduce(const weft_redop* op, int opi, const void* a, const void* b, size_t n,
                         int offset) {
  ncclDataType_t t = op->type;
  size_t size = dtype_size(t);
  buf_t d = buf_new(t, n, offset);
  char what[64];

  snprintf(what, sizeof what, "%s dst separate", op_names[opi]);
  host_reduce(op, d.p, a, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_op(t, opi, get_raw(a, i, size), get_raw(b, i, size)));

  snprintf(what, sizeof what, "%s dst == in", op_names[opi]);
  memcpy(d.p, a, n * size);
  host_reduce(op, d.p, d.p, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_op(t, opi, get_raw(a, i, size), get_raw(b, i, size)));

  snprintf(what, sizeof what, "%s dst == local", op_names[opi]);
  memcpy(d.p, b, n * size);
  host_reduce(op, d.p, a, d.p, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_op(t, opi, get_raw(a, i, size), get_raw(b, i, size)));

  snprintf(what, sizeof what, "%s in == local", op_names[opi]);
  host_reduce(op, d.p, a, a, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_op(t, opi, get_raw(a, i, size), get_raw(a, i, size)));

  snprintf(what, sizeof what, "%s dst == in == local", op_names[opi]);
  memcpy(d.p, a, n * size);
  host_reduce(op, d.p, d.p, d.p, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_op(t, opi, get_raw(a, i, size), get_raw(a, i, size)));

  /* host_reduce_prepare is host_reduce for every kind but PreMulSum. */
  snprintf(what, sizeof what, "%s reduce_prepare", op_names[opi]);
  host_reduce_prepare(op, d.p, a, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_op(t, opi, get_raw(a, i, size), get_raw(b, i, size)));
  free(d.base);
}

/* PreMulSum: host_prepare, host_reduce_prepare (every aliasing), host_finish copies. */
static void check_premulsum(ncclDataType_t t, uint64_t s, const void* a, const void* b, size_t n,
                            int offset) {
  size_t size = dtype_size(t);
  weft_redop op;
  redop_premulsum(t, &s, &op);
  EXPECT_EQ_INT(op.kind, WEFT_RED_PREMULSUM);
  EXPECT(host_redop_has_prepare(&op) && !host_redop_has_finish(&op));
  buf_t d = buf_new(t, n, offset);

  host_prepare(&op, d.p, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum prepare", i, get_raw(d.p, i, size), ref_pre(t, s, get_raw(b, i, size)));
  memcpy(d.p, b, n * size);
  host_prepare(&op, d.p, d.p, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum prepare in place", i, get_raw(d.p, i, size), ref_pre(t, s, get_raw(b, i, size)));

#define WANT_FMA(x, y) ref_op(t, OP_SUM, (x), ref_pre(t, s, (y)))
  host_reduce_prepare(&op, d.p, a, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum fused", i, get_raw(d.p, i, size), WANT_FMA(get_raw(a, i, size), get_raw(b, i, size)));
  memcpy(d.p, a, n * size);
  host_reduce_prepare(&op, d.p, d.p, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum fused dst == in", i, get_raw(d.p, i, size), WANT_FMA(get_raw(a, i, size), get_raw(b, i, size)));
  memcpy(d.p, b, n * size);
  host_reduce_prepare(&op, d.p, a, d.p, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum fused dst == local", i, get_raw(d.p, i, size), WANT_FMA(get_raw(a, i, size), get_raw(b, i, size)));
  memcpy(d.p, a, n * size);
  host_reduce_prepare(&op, d.p, d.p, d.p, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum fused all same", i, get_raw(d.p, i, size), WANT_FMA(get_raw(a, i, size), get_raw(a, i, size)));
#undef WANT_FMA

  /* The fused step equals prepare then reduce, bit for bit. */
  buf_t tmp = buf_new(t, n, 0), d2 = buf_new(t, n, 0);
  host_prepare(&op, tmp.p, b, n);
  host_reduce(&op, d2.p, a, tmp.p, n);
  host_reduce_prepare(&op, d.p, a, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum fused vs prepare+reduce", i, get_raw(d.p, i, size),
                get_raw(d2.p, i, size));

  /* Reduce of prepared partials is a plain sum; finish copies. */
  host_reduce(&op, d.p, a, b, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, "premulsum reduce", i, get_raw(d.p, i, size), ref_op(t, OP_SUM, get_raw(a, i, size), get_raw(b, i, size)));
  host_finish(&op, d.p, a, n);
  EXPECT(memcmp(d.p, a, n * size) == 0);
  free(tmp.base);
  free(d2.base);
  free(d.base);
}

/* SumPostDiv: finish divides (out of place and in place); prepare copies. */
static void check_postdiv(ncclDataType_t t, int nranks, const void* a, size_t n, int offset) {
  size_t size = dtype_size(t);
  weft_redop op = {.kind = WEFT_RED_SUMPOSTDIV, .type = t, .nranks = nranks};
  EXPECT(host_redop_has_finish(&op) && !host_redop_has_prepare(&op));
  buf_t d = buf_new(t, n, offset);
  char what[64];
  snprintf(what, sizeof what, "sumpostdiv /%d", nranks);
  host_finish(&op, d.p, a, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_div(t, get_raw(a, i, size), nranks));
  memcpy(d.p, a, n * size);
  host_finish(&op, d.p, d.p, n);
  for (size_t i = 0; i < n; i++)
    expect_elem(t, what, i, get_raw(d.p, i, size), ref_div(t, get_raw(a, i, size), nranks));
  host_prepare(&op, d.p, a, n);
  EXPECT(memcmp(d.p, a, n * size) == 0);
  free(d.base);
}

static void test_type(ncclDataType_t t) {
  static const size_t lengths[] = {1, 15, 16, 17, 1037, 5000};
  size_t size = dtype_size(t);
  for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
    size_t n = lengths[li];
    int offset = (int)(li & 1);
    buf_t a = buf_new(t, n, offset), b = buf_new(t, n, 1 - offset);
    fill(a.p, t, n);
    fill(b.p, t, n);
    for (int o = 0; o < OP_N; o++) {
      weft_redop op;
      EXPECT_OK(redop_from_builtin((ncclRedOp_t)o, t, 4, &op));
      check_reduce(&op, o, a.p, b.p, n, offset);
      /* Other kinds copy in prepare and finish. */
      buf_t d = buf_new(t, n, offset);
      host_prepare(&op, d.p, a.p, n);
      EXPECT(memcmp(d.p, a.p, n * size) == 0);
      host_finish(&op, d.p, b.p, n);
      EXPECT(memcmp(d.p, b.p, n * size) == 0);
      host_prepare(&op, d.p, d.p, n);
      host_finish(&op, d.p, d.p, n);
      EXPECT(memcmp(d.p, b.p, n * size) == 0);
      free(d.base);
    }
    for (int k = 0; k < 3; k++) {
      uint64_t s = rand_elem(t);
      if (raw_is_nan(t, s)) s = 0;
      check_premulsum(t, s, a.p, b.p, n, offset);
    }
    static const int divisors[] = {1, 2, 3, 7, 8, 255, 256, 257, 1000, 65536, 2147483647};
    for (size_t k = 0; k < sizeof divisors / sizeof divisors[0]; k++)
      if (t != ncclFloat32 || divisors[k] < (1 << 29)) /* float's documented bound */
        check_postdiv(t, divisors[k], a.p, n, offset);
    free(a.base);
    free(b.base);
  }
}

/* Integer edge values that random data rarely hits. */
static void test_int_edges(void) {
  int32_t v[] = {INT32_MIN, INT32_MAX, -7, 7, -1, 0, 1, INT32_MIN + 1};
  size_t n = sizeof v / sizeof v[0];
  int32_t d[sizeof v / sizeof v[0]];
  weft_redop op = {.kind = WEFT_RED_SUMPOSTDIV, .type = ncclInt32, .nranks = 2};
  host_finish(&op, d, v, n);
  EXPECT_EQ_INT(d[0], INT32_MIN / 2);
  EXPECT_EQ_INT(d[2], -3); /* truncation toward zero */
  EXPECT_EQ_INT(d[3], 3);
  EXPECT_EQ_INT(d[4], 0);
  weft_redop sum;
  EXPECT_OK(redop_from_builtin(ncclSum, ncclInt32, 2, &sum));
  host_reduce(&sum, d, v, v, n);
  EXPECT_EQ_INT(d[0], 0);  /* INT32_MIN + INT32_MIN wraps to 0 */
  EXPECT_EQ_INT(d[1], -2); /* INT32_MAX + INT32_MAX wraps */
  int8_t c[] = {-128, 127, -1}, cd[3];
  weft_redop div8 = {.kind = WEFT_RED_SUMPOSTDIV, .type = ncclInt8, .nranks = 3};
  host_finish(&div8, cd, c, 3);
  EXPECT_EQ_INT(cd[0], -42);
  EXPECT_EQ_INT(cd[1], 42);
  EXPECT_EQ_INT(cd[2], 0);
  int64_t l[] = {INT64_MIN, INT64_MAX, -9}, ld[3];
  weft_redop div64 = {.kind = WEFT_RED_SUMPOSTDIV, .type = ncclInt64, .nranks = 4};
  host_finish(&div64, ld, l, 3);
  EXPECT(ld[0] == INT64_MIN / 4 && ld[1] == INT64_MAX / 4 && ld[2] == -2);
}

/* Max/Min of floats: NaN ignored, -0 < +0, the same whichever operand comes first. */
static void test_float_maxmin_rules(void) {
  float a[] = {NAN, 1.0f, NAN, -0.0f, 0.0f, -0.0f, -INFINITY, 2.0f};
  float b[] = {1.0f, NAN, NAN, 0.0f, -0.0f, -0.0f, NAN, -3.0f};
  size_t n = sizeof a / sizeof a[0];
  float mx[8], mn[8], mx2[8], mn2[8];
  weft_redop max, min;
  EXPECT_OK(redop_from_builtin(ncclMax, ncclFloat32, 2, &max));
  EXPECT_OK(redop_from_builtin(ncclMin, ncclFloat32, 2, &min));
  host_reduce(&max, mx, a, b, n);
  host_reduce(&min, mn, a, b, n);
  host_reduce(&max, mx2, b, a, n);
  host_reduce(&min, mn2, b, a, n);
  EXPECT(mx[0] == 1.0f && mx[1] == 1.0f && isnan(mx[2]) && mx[6] == -INFINITY && mx[7] == 2.0f);
  EXPECT(mn[0] == 1.0f && mn[1] == 1.0f && isnan(mn[2]) && mn[6] == -INFINITY && mn[7] == -3.0f);
  EXPECT(mx[3] == 0 && !signbit(mx[3]) && !signbit(mx[4]) && signbit(mx[5]));
  EXPECT(mn[3] == 0 && signbit(mn[3]) && signbit(mn[4]) && signbit(mn[5]));
  for (size_t i = 0; i < n; i++) {
    if (i == 2) continue;
    EXPECT(memcmp(&mx[i], &mx2[i], sizeof(float)) == 0);
    EXPECT(memcmp(&mn[i], &mn2[i], sizeof(float)) == 0);
  }
}

/* Equal bytes, or both NaN: which NaN an operation returns (sign, payload) depends on operand
 * order, which compilers may swap in one loop and not in another. */
static void expect_same(ncclDataType_t t, const uint8_t* want, const uint8_t* got, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (want[k] != got[k] && !(raw_is_nan(t, want[k]) && raw_is_nan(t, got[k]))) {
      fprintf(stderr, "%s: element %zu: table 0x%02x, conversion 0x%02x\n", dtype_name(t), k,
              got[k], want[k]);
      exit(1);
    }
}

/* fp8: every operand pair through the lookup kernels against the reference and against the
 * conversion kernels the tables are filled from; per-call tables (long calls) against the
 * conversion kernels too. */
static void test_fp8_exhaustive(ncclDataType_t t, const red_kernels* table,
                                const red_kernels* conv) {
  enum { N = 65536 };
  static uint8_t a[N], b[N], d[N], c[N];
  for (int k = 0; k < N; k++) {
    a[k] = (uint8_t)(k >> 8);
    b[k] = (uint8_t)k;
  }
  for (int o = 0; o < OP_N; o++) {
    weft_redop op;
    EXPECT_OK(redop_from_builtin((ncclRedOp_t)o, t, 2, &op));
    host_reduce(&op, d, a, b, N);
    for (int k = 0; k < N; k++) expect_elem(t, op_names[o], (size_t)k, d[k], ref_op(t, o, a[k], b[k]));
    conv->bin[o](c, a, b, N);
    expect_same(t, c, d, N);
    memcpy(d, a, N);
    table->acc[o](d, b, N);
    expect_same(t, c, d, N);
  }
  for (int s = 0; s < 256; s += 37) {
    uint8_t sc = (uint8_t)s;
    table->scale(d, b, &sc, N);
    conv->scale(c, b, &sc, N);
    expect_same(t, c, d, N);
    for (int k = 0; k < N; k += 97) expect_elem(t, "premul table", (size_t)k, d[k], ref_pre(t, sc, b[k]));
    table->fma(d, a, b, &sc, N);
    conv->fma(c, a, b, &sc, N);
    expect_same(t, c, d, N);
    memcpy(d, a, N);
    table->fma_acc(d, b, &sc, N);
    expect_same(t, c, d, N);
    memcpy(d, b, N);
    table->fma_rev(d, a, &sc, N);
    expect_same(t, c, d, N);
  }
  for (int nd = 1; nd < 300; nd += 13) {
    table->div(d, b, nd, N);
    conv->div(c, b, nd, N);
    expect_same(t, c, d, N);
    memcpy(d, b, N);
    table->div_ip(d, nd, N);
    expect_same(t, c, d, N);
  }
}

/* Random operand pairs for the 16-bit floats, many more than test_type uses. */
static void test_16bit_pairs(ncclDataType_t t) {
  enum { N = 200000 };
  uint16_t* a = malloc(N * 2);
  uint16_t* b = malloc(N * 2);
  uint16_t* d = malloc(N * 2);
  EXPECT(a && b && d);
  for (int k = 0; k < N; k++) {
    uint64_t r = test_rand(&rng);
    a[k] = (uint16_t)r;
    /* Half the pairs close in magnitude (exponents within 2), where sums round. */
    b[k] = (k & 1) ? (uint16_t)(r >> 16) : (uint16_t)((a[k] & 0xfc00u) ^ ((r >> 20) & 0x8fffu));
  }
  for (int o = 0; o < OP_N; o++) {
    weft_redop op;
    EXPECT_OK(redop_from_builtin((ncclRedOp_t)o, t, 2, &op));
    host_reduce(&op, d, a, b, N);
    for (int k = 0; k < N; k++) expect_elem(t, op_names[o], (size_t)k, d[k], ref_op(t, o, a[k], b[k]));
  }
  free(a);
  free(b);
  free(d);
}

static void test_count_zero(void) {
  for (int t = 0; t < ncclNumTypes; t++) {
    weft_redop op;
    EXPECT_OK(redop_from_builtin(ncclAvg, (ncclDataType_t)t, 3, &op));
    host_prepare(&op, NULL, NULL, 0);
    host_reduce(&op, NULL, NULL, NULL, 0);
    host_reduce_prepare(&op, NULL, NULL, NULL, 0);
    host_finish(&op, NULL, NULL, 0);
    EXPECT_OK(redop_from_builtin(ncclMax, (ncclDataType_t)t, 3, &op));
    host_reduce(&op, NULL, NULL, NULL, 0);
  }
}

int main(void) {
  test_require_weft_lib();
  rng = test_seed(0x0dd5eed);
  for (int t = 0; t < ncclNumTypes; t++) {
    test_type((ncclDataType_t)t);
    printf("%s: sum/prod/max/min, premulsum, sumpostdiv match the reference\n",
           dtype_name((ncclDataType_t)t));
  }
  test_int_edges();
  test_float_maxmin_rules();
  test_fp8_exhaustive(ncclFloat8e4m3, &red_kernels_e4m3, &red_kernels_e4m3c);
  test_fp8_exhaustive(ncclFloat8e5m2, &red_kernels_e5m2, &red_kernels_e5m2c);
  test_16bit_pairs(ncclFloat16);
  test_16bit_pairs(ncclBfloat16);
  test_count_zero();
  printf("fp8 exhaustive pairs, 16-bit random pairs, edges, count 0: ok\n");
  return 0;
}
