/* Self-test of the correctness matrix's own machinery, runnable without any data path: number
 * conversions (known values, ties, saturation, infinities, exhaustive round trips and
 * midpoints), the ulp function, the float error bound against simulated reduction orders, the
 * integer references, case text round trips and the sampler's coverage guarantees. */
#include <math.h>
#include <string.h>

#include "coll_case.h"
#include "coll_exec.h"
#include "coll_fp.h"
#include "coll_ref.h"
#include "testutil.h"

static int failures;

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                             \
      fprintf(stderr, "\n");                                    \
      if (++failures > 40) exit(1);                             \
    }                                                           \
  } while (0)

#define ENC(type, x, want)                                                                  \
  CHECK(fp_encode(type, x) == (uint64_t)(want), "%s(%.17g) = 0x%llx, expected 0x%llx",      \
        coll_type_name(type), (double)(x), (unsigned long long)fp_encode(type, x),          \
        (unsigned long long)(want))

static void known_values(void) {
  /* half */
  ENC(ncclFloat16, 1.0 / 3, 0x3555);
  ENC(ncclFloat16, 1.0, 0x3c00);
  ENC(ncclFloat16, -2.0, 0xc000);
  ENC(ncclFloat16, 65504.0, 0x7bff);
  ENC(ncclFloat16, 65519.99, 0x7bff);
  ENC(ncclFloat16, 65520.0, 0x7c00); /* tie between max (odd) and the next binade: inf */
  ENC(ncclFloat16, 1e6, 0x7c00);
  ENC(ncclFloat16, -INFINITY, 0xfc00);
  ENC(ncclFloat16, 0x1p-24, 0x0001);
  ENC(ncclFloat16, 0x1p-25, 0x0000);        /* tie, to even 0 */
  ENC(ncclFloat16, 0x1.8p-25, 0x0001);
  ENC(ncclFloat16, 0x3p-25, 0x0002);        /* tie between 1 and 2 ulps: even 2 */
  ENC(ncclFloat16, 0x1p-14, 0x0400);
  ENC(ncclFloat16, 1 + 0x1p-11, 0x3c00);    /* tie, to even */
  ENC(ncclFloat16, 1 + 0x3p-11, 0x3c02);    /* tie, to even */
  ENC(ncclFloat16, -0.0, 0x8000);
  CHECK(isnan(fp_decode(ncclFloat16, fp_encode(ncclFloat16, NAN))), "half NaN");
  CHECK(fp_decode(ncclFloat16, 0x3555) == 0.333251953125, "half 0x3555");
  CHECK(isinf(fp_decode(ncclFloat16, 0x7c00)), "half inf");
  /* bfloat16 */
  ENC(ncclBfloat16, 1.0 / 3, 0x3eab);
  ENC(ncclBfloat16, 1 + 0x1p-8, 0x3f80);    /* tie, to even */
  ENC(ncclBfloat16, 1 + 0x3p-8, 0x3f82);    /* tie, to even */
  ENC(ncclBfloat16, 1 + 0x1p-8 + 0x1p-20, 0x3f81);
  ENC(ncclBfloat16, 3.0, 0x4040);
  ENC(ncclBfloat16, 0x1.fep127, 0x7f7f);
  ENC(ncclBfloat16, 0x1.ffp127, 0x7f80);    /* tie above max: inf */
  ENC(ncclBfloat16, -1e39, 0xff80);
  CHECK(isnan(fp_decode(ncclBfloat16, 0x7fc0)), "bf16 NaN");
  /* fp8 e4m3: no inf, max 448, satfinite */
  ENC(ncclFloat8e4m3, 448.0, 0x7e);
  ENC(ncclFloat8e4m3, 464.0, 0x7e);
  ENC(ncclFloat8e4m3, 480.0, 0x7e);
  ENC(ncclFloat8e4m3, 1e4, 0x7e);
  ENC(ncclFloat8e4m3, -1e4, 0xfe);
  ENC(ncclFloat8e4m3, INFINITY, 0x7e);
  ENC(ncclFloat8e4m3, 1.0, 0x38);
  ENC(ncclFloat8e4m3, 0.1, 0x1d);
  ENC(ncclFloat8e4m3, 0x1p-9, 0x01);
  ENC(ncclFloat8e4m3, 0x1p-10, 0x00);
  ENC(ncclFloat8e4m3, 0x1p-6, 0x08);
  ENC(ncclFloat8e4m3, 1.0625, 0x38);        /* tie, to even */
  ENC(ncclFloat8e4m3, 1.1875, 0x3a);        /* tie, to even */
  CHECK(fp_decode(ncclFloat8e4m3, 0x7e) == 448, "e4m3 0x7e");
  CHECK(isnan(fp_decode(ncclFloat8e4m3, 0x7f)), "e4m3 0x7f is NaN");
  CHECK(isnan(fp_decode(ncclFloat8e4m3, 0xff)), "e4m3 0xff is NaN");
  CHECK(fp_decode(ncclFloat8e4m3, 0x78) == 256, "e4m3 0x78 is 256 (exponent all ones is finite)");
  CHECK(isnan(fp_decode(ncclFloat8e4m3, fp_encode(ncclFloat8e4m3, NAN))), "e4m3 NaN");
  /* fp8 e5m2: IEEE-like, max 57344 */
  ENC(ncclFloat8e5m2, 57344.0, 0x7b);
  ENC(ncclFloat8e5m2, 61440.0, 0x7c);       /* tie above max: inf */
  ENC(ncclFloat8e5m2, 1e6, 0x7c);
  ENC(ncclFloat8e5m2, INFINITY, 0x7c);
  ENC(ncclFloat8e5m2, -INFINITY, 0xfc);
  ENC(ncclFloat8e5m2, 1.0, 0x3c);
  ENC(ncclFloat8e5m2, 1.5, 0x3e);
  ENC(ncclFloat8e5m2, 1.125, 0x3c);         /* tie, to even */
  ENC(ncclFloat8e5m2, 1.375, 0x3e);         /* tie, to even */
  ENC(ncclFloat8e5m2, 0x1p-16, 0x01);
  CHECK(isinf(fp_decode(ncclFloat8e5m2, 0x7c)), "e5m2 0x7c is inf");
  CHECK(isnan(fp_decode(ncclFloat8e5m2, 0x7d)), "e5m2 0x7d is NaN");
  CHECK(fp_decode(ncclFloat8e5m2, 0x7b) == 57344, "e5m2 max");
  /* float and double go through C */
  ENC(ncclFloat32, 1.0 / 3, 0x3eaaaaab);
  ENC(ncclFloat64, 1.0, 0x3ff0000000000000ull);
}

/* Every code decodes and re-encodes to itself; every midpoint between neighbours rounds to the
 * even one, and just off the midpoint to the nearer one. */
static void exhaustive(ncclDataType_t type, unsigned ncodes) {
  unsigned signbit = ncodes >> 1;
  for (unsigned v = 0; v < ncodes; v++) {
    double d = fp_decode(type, v);
    if (isnan(d)) continue;
    CHECK(fp_encode(type, d) == v, "%s: code 0x%x decodes to %.17g which encodes to 0x%llx",
          coll_type_name(type), v, d, (unsigned long long)fp_encode(type, d));
  }
  for (unsigned v = 0; v + 1 < signbit; v++) {
    double lo = fp_decode(type, v), hi = fp_decode(type, v + 1);
    if (!isfinite(lo) || !isfinite(hi)) continue;
    double mid = (lo + hi) / 2, eps = (hi - lo) / 1024;
    unsigned even = (v & 1) ? v + 1 : v;
    CHECK(fp_encode(type, mid) == even, "%s: midpoint %.17g -> 0x%llx, expected 0x%x",
          coll_type_name(type), mid, (unsigned long long)fp_encode(type, mid), even);
    CHECK(fp_encode(type, mid - eps) == v, "%s: below midpoint %.17g", coll_type_name(type), mid);
    CHECK(fp_encode(type, mid + eps) == v + 1, "%s: above midpoint %.17g", coll_type_name(type),
          mid);
    CHECK(fp_encode(type, -mid) == (even | signbit), "%s: negative midpoint",
          coll_type_name(type));
  }
}

/* Cross-check half (and bfloat16 where the compiler has it) against the compiler's own type. */
static void compiler_cross_check(void) {
  uint64_t s = 12345;
  int checked = 0;
  for (int i = 0; i < 200000; i++) {
    uint64_t h = test_rand(&s);
    double d = (double)(int64_t)(h >> 1) * fp_pow2(-62 + (int)(h % 40) - 20);
    (void)d;
#ifdef __FLT16_MAX__
    _Float16 f = (_Float16)d;
    uint16_t b;
    memcpy(&b, &f, 2);
    CHECK(fp_to_half(d) == b, "half(%.17g) = 0x%x, compiler says 0x%x", d, fp_to_half(d), b);
    checked++;
#endif
  }
  printf("compiler cross-check of half: %d values%s\n", checked,
         checked ? "" : " (no _Float16 in this compiler)");
}

static void ulps(void) {
  CHECK(fp_ulp(ncclFloat16, 1.0) == 0x1p-10, "half ulp(1)");
  CHECK(fp_ulp(ncclFloat16, 1.999) == 0x1p-10, "half ulp(1.999)");
  CHECK(fp_ulp(ncclFloat16, 2.0) == 0x1p-9, "half ulp(2)");
  CHECK(fp_ulp(ncclFloat16, 0) == 0x1p-24, "half ulp(0)");
  CHECK(fp_ulp(ncclFloat16, 1e-7) == 0x1p-24, "half ulp(subnormal)");
  CHECK(fp_ulp(ncclBfloat16, 3.0) == 0x1p-6, "bf16 ulp(3)");
  CHECK(fp_ulp(ncclFloat8e4m3, 448) == 32, "e4m3 ulp(448)");
  CHECK(fp_ulp(ncclFloat8e4m3, 0.001) == 0x1p-9, "e4m3 ulp(subnormal)");
  CHECK(fp_ulp(ncclFloat8e5m2, 1.0) == 0.25, "e5m2 ulp(1)");
  CHECK(fp_ulp(ncclFloat32, 1.0) == 0x1p-23, "float ulp(1)");
  CHECK(fp_ulp(ncclFloat64, 1.0) == 0x1p-52, "double ulp(1)");
  CHECK(fp_unit_roundoff(ncclFloat16) == 0x1p-11, "half u");
}

static double rnd(ncclDataType_t t, double x) { return fp_decode(t, fp_encode(t, x)); }

/* Simulated implementations: the reduction in several orders, rounding to the type at every
 * step as a GPU kernel or the host executor might. Each must lie within coll_tolerance. */
static void tolerance_vs_orders(void) {
  static const ncclDataType_t floats[] = {ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16,
                                          ncclFloat8e4m3, ncclFloat8e5m2};
  static const coll_op ops[] = {OP_SUM, OP_PROD, OP_AVG, OP_PREMULSUM};
  int checked = 0;
  double worst[6] = {0}; /* largest error/bound seen per type (n >= 2): how tight the bound is */
  for (int n = 1; n <= 8; n++)
    for (size_t ti = 0; ti < sizeof floats / sizeof *floats; ti++)
      for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++) {
        ncclDataType_t t = floats[ti];
        coll_case c = {n, TR_SHM, ALGO_RING, PROTO_SIMPLE, COLL_ALLREDUCE, t, ops[oi], SIZE_7, 0, 0};
        coll_gen g;
        coll_gen_init(&g, &c, 77);
        double inv_n = rnd(t, 1.0 / n);
        for (size_t i = 0; i < 3000; i++) {
          double x[8];
          for (int r = 0; r < n; r++) {
            x[r] = fp_decode(t, coll_gen_value(&g, r, i));
            if (ops[oi] == OP_PREMULSUM) x[r] = rnd(t, x[r] * g.scalar);
            if (ops[oi] == OP_AVG) x[r] = rnd(t, x[r] * inv_n);
          }
          double fwd = x[0], rev = x[n - 1], tree[8];
          for (int r = 1; r < n; r++) {
            fwd = ops[oi] == OP_PROD ? rnd(t, fwd * x[r]) : rnd(t, fwd + x[r]);
            rev = ops[oi] == OP_PROD ? rnd(t, rev * x[n - 1 - r]) : rnd(t, rev + x[n - 1 - r]);
          }
          memcpy(tree, x, sizeof tree);
          for (int w = 1; w < n; w *= 2)
            for (int r = 0; r + w < n; r += 2 * w)
              tree[r] = ops[oi] == OP_PROD ? rnd(t, tree[r] * tree[r + w]) : rnd(t, tree[r] + tree[r + w]);
          coll_expect e;
          coll_ref_reduce(&g, i, &e);
          double want = fp_decode(t, e.bits);
          double sims[4] = {fwd, rev, tree[0], 0};
          int nsims = 3;
          if (ops[oi] == OP_AVG) { /* sum, then divide */
            double s = fp_decode(t, coll_gen_value(&g, 0, i));
            for (int r = 1; r < n; r++) s = rnd(t, s + fp_decode(t, coll_gen_value(&g, r, i)));
            sims[nsims++] = rnd(t, s / n);
          }
          for (int k = 0; k < nsims; k++) {
            if (n >= 2 && e.tol > 0 && fabs(sims[k] - want) / e.tol > worst[ti])
              worst[ti] = fabs(sims[k] - want) / e.tol;
            CHECK(fabs(sims[k] - want) <= e.tol,
                  "%s %s n=%d elem %zu order %d: %.17g vs expected %.17g, tol %.3g",
                  coll_type_name(t), coll_op_name[ops[oi]], n, i, k, sims[k], want, e.tol);
            checked++;
          }
        }
      }
  printf("error bound vs simulated reduction orders: %d results within bound; largest "
         "error/bound:", checked);
  for (size_t ti = 0; ti < sizeof floats / sizeof *floats; ti++)
    printf(" %s %.2f", coll_type_name(floats[ti]), worst[ti]);
  printf("\n");
}

static void integer_refs(void) {
  for (int n = 1; n <= 8; n++) {
    coll_case c = {n, TR_SHM, ALGO_RING, PROTO_SIMPLE, COLL_ALLREDUCE, ncclInt8, OP_SUM, SIZE_7, 0, 0};
    coll_gen g;
    coll_expect e;
    for (int op = 0; op < OP_NUM; op++) {
      c.op = (coll_op)op;
      c.type = ncclInt8;
      coll_gen_init(&g, &c, 99);
      for (size_t i = 0; i < 500; i++) {
        int v[8], acc;
        for (int r = 0; r < n; r++) v[r] = (int8_t)coll_gen_value(&g, r, i);
        acc = op == OP_PREMULSUM ? v[0] * (int8_t)g.scalar_bits : v[0];
        for (int r = 1; r < n; r++) {
          switch (op) {
            case OP_SUM: case OP_AVG: acc += v[r]; break;
            case OP_PROD: acc = (int8_t)(acc * v[r]); break;
            case OP_MAX: acc = v[r] > acc ? v[r] : acc; break;
            case OP_MIN: acc = v[r] < acc ? v[r] : acc; break;
            case OP_PREMULSUM: acc += v[r] * (int8_t)g.scalar_bits; break;
            case OP_CUSTOM: acc ^= v[r]; break;
          }
        }
        if (op == OP_AVG) {
          CHECK(acc >= -128 && acc <= 127, "int8 avg inputs overflow: sum %d", acc);
          acc /= n;
        }
        coll_ref_reduce(&g, i, &e);
        CHECK(e.exact && (int8_t)e.bits == (int8_t)acc, "int8 %s n=%d: ref %d, expected %d",
              coll_op_name[op], n, (int8_t)e.bits, (int8_t)acc);
      }
      c.type = ncclUint32;
      coll_gen_init(&g, &c, 98);
      for (size_t i = 0; i < 500; i++) {
        uint32_t acc = (uint32_t)coll_gen_value(&g, 0, i);
        unsigned long long wide = acc;
        if (op == OP_PREMULSUM) acc *= (uint32_t)g.scalar_bits;
        for (int r = 1; r < n; r++) {
          uint32_t x = (uint32_t)coll_gen_value(&g, r, i);
          switch (op) {
            case OP_SUM: acc += x; break;
            case OP_AVG: wide += x; break;
            case OP_PROD: acc *= x; break;
            case OP_MAX: acc = x > acc ? x : acc; break;
            case OP_MIN: acc = x < acc ? x : acc; break;
            case OP_PREMULSUM: acc += x * (uint32_t)g.scalar_bits; break;
            case OP_CUSTOM: acc ^= x; break;
          }
        }
        if (op == OP_AVG) {
          CHECK(wide <= UINT32_MAX, "uint32 avg inputs overflow");
          acc = (uint32_t)(wide / (unsigned)n);
        }
        if (op == OP_PROD) CHECK(acc & 1, "uint32 prod of odd inputs is odd");
        coll_ref_reduce(&g, i, &e);
        CHECK(e.exact && e.bits == acc, "uint32 %s n=%d: ref %llu, expected %u", coll_op_name[op],
              n, (unsigned long long)e.bits, acc);
      }
    }
  }
  /* Truncation toward zero of a negative average, and sign extension. */
  CHECK(coll_sext(ncclInt8, 0xf9) == -7, "sext int8");
  CHECK(coll_sext(ncclInt32, 0xfffffff9u) == -7, "sext int32");
  CHECK(coll_custom_combine(ncclFloat16, 0x3c00, 0xbc00) == 0x3c00, "custom tie -> positive");
  CHECK(coll_custom_combine(ncclFloat16, 0xc000, 0x3c00) == 0xc000, "custom larger magnitude");
  CHECK(coll_custom_combine(ncclInt32, 6, 3) == 5, "custom int xor");
}

/* Inputs: never zero, inside their documented domains. */
static void input_domains(void) {
  for (int t = 0; t < COLL_NUM_TYPES; t++)
    for (int op = OP_NONE; op < OP_NUM; op++) {
      coll_case c = {8, TR_SHM, ALGO_RING, PROTO_SIMPLE, op == OP_NONE ? COLL_BROADCAST : COLL_ALLREDUCE,
                     (ncclDataType_t)t, (coll_op)op, SIZE_7, 0, 0};
      coll_gen g;
      coll_gen_init(&g, &c, 5);
      for (int r = 0; r < 8; r++)
        for (size_t i = 0; i < 2000; i++) {
          uint64_t v = coll_gen_value(&g, r, i);
          CHECK(v != 0 && (v & ~g.mask) == 0, "%s/%d: value 0x%llx", coll_type_name(c.type), op,
                (unsigned long long)v);
          if (!fp_is_float(c.type) || op == OP_NONE) continue;
          double d = fabs(fp_decode(c.type, v));
          if (op == OP_SUM || op == OP_AVG || op == OP_PREMULSUM)
            CHECK(d >= 0.25 && d <= 4, "%s sum domain: %g", coll_type_name(c.type), d);
          else if (op == OP_PROD)
            CHECK(d >= 0.75 && d <= 1.5, "%s prod domain: %g", coll_type_name(c.type), d);
          else
            CHECK(isfinite(d) && d > 0, "%s minmax domain: %g", coll_type_name(c.type), d);
        }
    }
}

static void text_round_trip(void) {
  int checked = 0;
  for (int n = 1; n <= 8; n += 3)
    for (int tr = 0; tr < TR_NUM; tr++) {
      coll_space sp = {n, (coll_transport)tr, (1u << COLL_NUM) - 1, 2, 0};
      coll_case_list l = {0};
      coll_full_matrix(&sp, 1, &l);
      int n48 = 0;
      for (int i = 0; i < l.n; i++) n48 += l.v[i].size == SIZE_48M;
      coll_case_list l1 = {0};
      sp.big = 1;
      coll_full_matrix(&sp, 1, &l1);
      int m48 = 0;
      for (int i = 0; i < l1.n; i++) m48 += l1.v[i].size == SIZE_48M;
      CHECK(m48 == COLL_NUM * COLL_NUM_TYPES && l1.n == l.n - n48 + m48,
            "full matrix with sampled 48M: %d of %d 48M cases, %d cases", m48, n48, l1.n);
      coll_list_free(&l1);
      for (int i = 0; i < l.n; i++) {
        char s[COLL_CASE_STR];
        coll_case back;
        coll_case_format(&l.v[i], s);
        CHECK(coll_case_parse(s, &back) == 0 && memcmp(&back, &l.v[i], sizeof back) == 0,
              "round trip of %s", s);
        CHECK(coll_case_key(1, &back) == coll_case_key(1, &l.v[i]), "key of %s", s);
        checked++;
      }
      coll_list_free(&l);
    }
  coll_case c;
  CHECK(coll_case_parse("3/net/Tree/LL/Reduce/int8/sum/7/inplace/root0", &c) != 0,
        "Tree Reduce rejected");
  CHECK(coll_case_parse("3/net/Ring/LL/Broadcast/int8/sum/7/inplace/root0", &c) != 0,
        "op on Broadcast rejected");
  CHECK(coll_case_parse("3/net/Ring/LL/Broadcast/int8/none/7/inplace/root3", &c) != 0,
        "root out of range rejected");
  CHECK(coll_case_parse("2/shm/ring/ll/allreduce/BFLOAT16/prod/1M+3/outofplace/root0", &c) == 0 &&
            coll_case_count(&c) == (1u << 19) + 3,
        "case-insensitive parse and 1M+3 count");
  printf("case text round trips: %d\n", checked);
}

/* The sampler's guarantees, for many seeds and spaces. */
static void sampler_coverage(void) {
  const unsigned core = (1u << COLL_ALLREDUCE) | (1u << COLL_REDUCE) | (1u << COLL_BROADCAST) |
                        (1u << COLL_ALLGATHER) | (1u << COLL_REDUCESCATTER) | (1u << COLL_SENDRECV);
  const unsigned extra = (1u << COLL_ALLTOALL) | (1u << COLL_GATHER) | (1u << COLL_SCATTER);
  int samples = 0, biggest = 0;
  for (uint64_t seed = 1; seed <= 40; seed++)
    for (int n = 1; n <= 8; n++)
      for (int fam = 0; fam < 2; fam++) {
        coll_space sp = {n, (coll_transport)(seed & 1), fam ? extra : core, (int)(seed % 3 == 0), 8};
        coll_case_list l = {0}, l2 = {0};
        coll_sample(&sp, seed * 0x9e3779b97f4a7c15ull, &l);
        coll_sample(&sp, seed * 0x9e3779b97f4a7c15ull, &l2);
        CHECK(l.n == l2.n && !memcmp(l.v, l2.v, (size_t)l.n * sizeof *l.v), "deterministic");
        static char ct[COLL_NUM][COLL_NUM_TYPES], co[COLL_NUM][OP_NUM], to[COLL_NUM_TYPES][OP_NUM],
            cs[COLL_NUM][SIZE_NUM], cp[COLL_NUM][PROTO_NUM], ci[COLL_NUM][2], ap[ALGO_NUM][PROTO_NUM],
            cr[COLL_NUM][8];
        memset(ct, 0, sizeof ct), memset(co, 0, sizeof co), memset(to, 0, sizeof to);
        memset(cs, 0, sizeof cs), memset(cp, 0, sizeof cp), memset(ci, 0, sizeof ci);
        memset(ap, 0, sizeof ap), memset(cr, 0, sizeof cr);
        static char dt[ALGO_NUM][COLL_NUM][COLL_NUM_TYPES], dop[ALGO_NUM][COLL_NUM][OP_NUM],
            dip[ALGO_NUM][COLL_NUM][2];
        memset(dt, 0, sizeof dt), memset(dop, 0, sizeof dop), memset(dip, 0, sizeof dip);
        for (int i = 0; i < l.n; i++) {
          const coll_case* c = &l.v[i];
          CHECK(coll_case_valid(c) && c->nranks == n && c->transport == sp.transport, "valid");
          CHECK((sp.colls >> c->coll) & 1, "collective of the space");
          CHECK(sp.big || c->size != SIZE_48M, "48M only with big");
          ct[c->coll][c->type] = 1;
          if (c->op >= 0) co[c->coll][c->op] = 1, to[c->type][c->op] = 1;
          cs[c->coll][c->size] = 1;
          cp[c->coll][c->proto] = 1;
          ci[c->coll][c->inplace] = 1;
          if (c->coll == COLL_ALLREDUCE) ap[c->algo][c->proto] = 1;
          dt[c->algo][c->coll][c->type] = 1;
          if (c->op >= 0) dop[c->algo][c->coll][c->op] = 1;
          dip[c->algo][c->coll][c->inplace] = 1;
          cr[c->coll][c->root] = 1;
          if (i > 0) /* grouped by configuration */
            CHECK(c->algo * 2 + c->proto >= l.v[i - 1].algo * 2 + l.v[i - 1].proto, "ordered");
        }
        int has_red = 0, has_big_ar = 0;
        for (int i = 0; i < l.n; i++)
          has_big_ar |= l.v[i].coll == COLL_ALLREDUCE && l.v[i].size == SIZE_48M;
        for (int c = 0; c < COLL_NUM; c++) {
          if (!((sp.colls >> c) & 1)) continue;
          has_red |= coll_is_reduction((coll_kind)c);
          for (int t = 0; t < COLL_NUM_TYPES; t++) CHECK(ct[c][t], "%s x %s", coll_kind_name[c], coll_type_name((ncclDataType_t)t));
          if (coll_is_reduction((coll_kind)c))
            for (int o = 0; o < OP_NUM; o++) CHECK(co[c][o], "%s x %s", coll_kind_name[c], coll_op_name[o]);
          for (int s = 0; s < SIZE_48M; s++) CHECK(cs[c][s], "%s x size %s", coll_kind_name[c], coll_size_name[s]);
          for (int p = 0; p < PROTO_NUM; p++) CHECK(cp[c][p], "%s x %s", coll_kind_name[c], coll_proto_name[p]);
          if (coll_has_inplace((coll_kind)c)) CHECK(ci[c][0] && ci[c][1], "%s in/out of place", coll_kind_name[c]);
          if (coll_has_root((coll_kind)c))
            for (int r = 0; r < n; r++) CHECK(cr[c][r], "%s root %d", coll_kind_name[c], r);
        }
        if (has_red)
          for (int t = 0; t < COLL_NUM_TYPES; t++)
            for (int o = 0; o < OP_NUM; o++) CHECK(to[t][o], "%s x %s", coll_type_name((ncclDataType_t)t), coll_op_name[o]);
        if ((sp.colls >> COLL_ALLREDUCE) & 1)
          for (int a = 0; a < ALGO_NUM; a++)
            for (int p = 0; p < PROTO_NUM; p++) CHECK(ap[a][p], "AllReduce %s/%s", coll_algo_name[a], coll_proto_name[p]);
        if (sp.big && ((sp.colls >> COLL_ALLREDUCE) & 1)) CHECK(has_big_ar, "48M AllReduce");
        for (int a = ALGO_ONESHOT; a <= ALGO_TWOSHOT; a++)
          for (int c = 0; c < COLL_NUM; c++) {
            if (!((sp.colls >> c) & 1) || !coll_algo_fits((coll_algo)a, (coll_kind)c, n)) continue;
            for (int t = 0; t < COLL_NUM_TYPES; t++)
              CHECK(dt[a][c][t], "%s %s x %s", coll_algo_name[a], coll_kind_name[c], coll_type_name((ncclDataType_t)t));
            if (coll_is_reduction((coll_kind)c))
              for (int o = 0; o < OP_NUM; o++) CHECK(dop[a][c][o], "%s %s x %s", coll_algo_name[a], coll_kind_name[c], coll_op_name[o]);
            if (coll_has_inplace((coll_kind)c))
              CHECK(dip[a][c][0] && dip[a][c][1], "%s %s in/out of place", coll_algo_name[a], coll_kind_name[c]);
          }
        if (l.n > biggest) biggest = l.n;
        samples++;
        coll_list_free(&l);
        coll_list_free(&l2);
      }
  printf("sampler: %d samples meet every coverage guarantee (largest %d cases)\n", samples, biggest);
}


/* ---- the runner against a simulated library ----------------------------------------------
 * Every rank of a case is prepared in this process (coll_run_prepare with no communicator), a
 * straightforward implementation written here moves and reduces the real buffers (rounding to
 * the type at every step, in a ring order that starts at a different rank per element), and
 * coll_run_verify must accept the result on every rank. Then deliberate corruptions (a wrong
 * element, a guard byte, a changed input) must be reported. This checks the runner's layouts,
 * in-place offsets, NULL buffers, reference indexing and tolerance without the data path. */

static uint64_t ld_elem(const void* p, size_t esz, size_t i) {
  uint64_t v = 0;
  memcpy(&v, (const char*)p + i * esz, esz);
  return v;
}

static void st_elem(void* p, size_t esz, size_t i, uint64_t v) {
  memcpy((char*)p + i * esz, &v, esz);
}

/* One rank's contribution as it enters the reduction (PreMulSum / float Avg scale it). */
static uint64_t sim_prepare(const coll_run* r, uint64_t x) {
  ncclDataType_t t = r->c.type;
  int n = r->c.nranks;
  if (r->c.op == OP_PREMULSUM)
    return fp_is_float(t) ? fp_encode(t, fp_decode(t, x) * r->gen.scalar)
                          : (x * r->gen.scalar_bits) & r->gen.mask;
  if (r->c.op == OP_AVG && fp_is_float(t))
    return fp_encode(t, fp_decode(t, x) * fp_decode(t, fp_encode(t, 1.0 / n)));
  return x;
}

static uint64_t sim_combine(const coll_run* r, uint64_t a, uint64_t b) {
  ncclDataType_t t = r->c.type;
  uint64_t m = r->gen.mask;
  if (r->c.op == OP_CUSTOM) return coll_custom_combine(t, a, b);
  if (fp_is_float(t)) {
    double x = fp_decode(t, a), y = fp_decode(t, b);
    switch (r->c.op) {
      case OP_PROD: return fp_encode(t, x * y);
      case OP_MAX: return x >= y ? a : b;
      case OP_MIN: return x <= y ? a : b;
      default: return fp_encode(t, x + y);
    }
  }
  int sgn = fp_is_signed_int(t);
  switch (r->c.op) {
    case OP_PROD: return (a * b) & m;
    case OP_MAX: return (sgn ? coll_sext(t, a) >= coll_sext(t, b) : a >= b) ? a : b;
    case OP_MIN: return (sgn ? coll_sext(t, a) <= coll_sext(t, b) : a <= b) ? a : b;
    case OP_AVG: return a + b; /* unmasked 64-bit sum of sign-extended values; divided later */
    default: return (a + b) & m;
  }
}

/* Element idx of every rank's send buffer reduced, in ring order from rank `first`. */
static uint64_t sim_reduce(coll_run* runs, int n, size_t idx, int first) {
  const coll_run* r0 = &runs[0];
  int int_avg = r0->c.op == OP_AVG && !fp_is_float(r0->c.type);
  uint64_t acc = 0;
  for (int k = 0; k < n; k++) {
    int j = (first + k) % n;
    uint64_t x = ld_elem(runs[j].sendbuff, r0->esz, idx);
    if (int_avg) x = (uint64_t)coll_sext(r0->c.type, x);
    x = sim_prepare(r0, x);
    acc = k == 0 ? x : sim_combine(r0, acc, x);
  }
  if (int_avg)
    acc = (fp_is_signed_int(r0->c.type) ? (uint64_t)((int64_t)acc / n) : acc / (uint64_t)n) &
          r0->gen.mask;
  return acc;
}

static void sim_execute(coll_run* runs, int n) {
  const coll_case* c = &runs[0].c;
  const size_t cnt = runs[0].count, esz = runs[0].esz;
  const int root = c->root;
  size_t outn = cnt * (c->coll == COLL_ALLGATHER || c->coll == COLL_ALLTOALL || c->coll == COLL_GATHER ? (size_t)n : 1);
  /* Outputs are computed first, then written: in-place inputs must not change under us. */
  uint64_t** out = calloc((size_t)n, sizeof *out);
  for (int r = 0; r < n; r++) {
    out[r] = malloc((outn + 1) * sizeof **out);
    for (size_t k = 0; k < outn; k++) {
      uint64_t v = 0;
      switch (c->coll) {
        case COLL_ALLREDUCE:
        case COLL_REDUCE: v = sim_reduce(runs, n, k, (int)(k % (size_t)n)); break;
        case COLL_REDUCESCATTER: v = sim_reduce(runs, n, (size_t)r * cnt + k, (int)(k % (size_t)n)); break;
        case COLL_BROADCAST: v = ld_elem(runs[root].sendbuff, esz, k); break;
        case COLL_ALLGATHER:
        case COLL_GATHER: v = ld_elem(runs[k / cnt].sendbuff, esz, k % cnt); break;
        case COLL_SENDRECV: v = ld_elem(runs[(r - root + n) % n].sendbuff, esz, k); break;
        case COLL_ALLTOALL: v = ld_elem(runs[k / cnt].sendbuff, esz, (size_t)r * cnt + k % cnt); break;
        case COLL_SCATTER: v = ld_elem(runs[root].sendbuff, esz, (size_t)r * cnt + k); break;
        default: break;
      }
      out[r][k] = v;
    }
  }
  for (int r = 0; r < n; r++) {
    int writes = !((c->coll == COLL_REDUCE || c->coll == COLL_GATHER) && r != root);
    if (writes)
      for (size_t k = 0; k < outn; k++) st_elem(runs[r].recvbuff, esz, k, out[r][k]);
    free(out[r]);
  }
  free(out);
}

static int verify_quiet(coll_run* r) {
  fflush(stderr);
  FILE* saved = stderr;
  FILE* null = fopen("/dev/null", "w");
  stderr = null;
  size_t p = coll_run_verify(r);
  stderr = saved;
  fclose(null);
  return p != 0;
}

static void runner_vs_simulation(void) {
  int cases = 0, detected = 0, corruptions = 0;
  coll_set_argv0("coll_reference_selftest");
  for (int n = 1; n <= 8; n++)
    for (int fam = 0; fam < 2; fam++) {
      coll_space sp = {n, TR_SHM, fam ? 0x1c0u : 0x3fu, n == 2, 12};
      coll_case_list l = {0};
      coll_sample(&sp, 0xabcdef + (uint64_t)n, &l);
      for (int i = 0; i < l.n; i++) {
        coll_case* c = &l.v[i];
        /* Keep the self-test quick: sizes up to 7, and every 16th case of 1M+3. */
        if (c->size == SIZE_48M || (c->size == SIZE_1M3 && i % 16)) continue;
        coll_run runs[8];
        for (int r = 0; r < n; r++)
          CHECK(coll_run_prepare(&runs[r], c, 42, r, NULL) == COLL_OK, "prepare");
        sim_execute(runs, n);
        for (int r = 0; r < n; r++) {
          size_t p = coll_run_verify(&runs[r]);
          CHECK(p == 0, "simulated %s: rank %d found %zu problems", runs[r].name, r, p);
        }
        /* Corruptions the runner must see (on a rank that has output). */
        int r = c->coll == COLL_REDUCE || c->coll == COLL_GATHER ? c->root : n - 1;
        coll_run* x = &runs[r];
        size_t outn = x->count * (c->coll == COLL_ALLGATHER || c->coll == COLL_ALLTOALL ||
                                  c->coll == COLL_GATHER ? (size_t)n : 1);
        if (outn > 0) {
          /* A NaN (floats) or one flipped bit (integers, data movement) must be reported; for
           * float reductions also a value just outside the bound. */
          size_t k = outn / 2;
          uint64_t v = ld_elem(x->recvbuff, x->esz, k), bad[2];
          int nbad = 0;
          int fl = fp_is_float(c->type) && coll_is_reduction(c->coll);
          bad[nbad++] = fl ? fp_encode(c->type, NAN) : v ^ 1;
          if (fl && c->op != OP_MAX && c->op != OP_MIN && c->op != OP_CUSTOM) {
            coll_expect e;
            coll_ref_reduce(&x->gen, (c->coll == COLL_REDUCESCATTER ? (size_t)r * x->count : 0) + k, &e);
            double want = fp_decode(c->type, e.bits);
            uint64_t out = fp_encode(c->type, want + e.tol + fp_ulp(c->type, want + e.tol));
            if (fabs(fp_decode(c->type, out) - want) > e.tol) bad[nbad++] = out;
          }
          for (int b = 0; b < nbad; b++) {
            st_elem(x->recvbuff, x->esz, k, bad[b]);
            corruptions++;
            if (verify_quiet(x)) detected++;
            else CHECK(0, "%s: element %zu = 0x%llx went unnoticed", x->name, k, (unsigned long long)bad[b]);
          }
          st_elem(x->recvbuff, x->esz, k, v);
        }
        unsigned char* g = x->has_b ? x->alloc_b : x->alloc_a;
        g[3] ^= 1;
        corruptions++;
        if (verify_quiet(x)) detected++;
        else CHECK(0, "%s: a guard byte went unnoticed", x->name);
        g[3] ^= 1;
        if (!c->inplace && x->has_a && x->nsend > 0) {
          x->a[0] ^= 0x40;
          corruptions++;
          if (verify_quiet(x)) detected++;
          else CHECK(0, "%s: a changed input went unnoticed", x->name);
          x->a[0] ^= 0x40;
        }
        CHECK(coll_run_verify(x) == 0, "%s: clean again", x->name);
        for (int q = 0; q < n; q++) coll_run_release(&runs[q], NULL);
        cases++;
      }
      coll_list_free(&l);
    }
  printf("runner vs simulated library: %d cases verified on every rank, %d of %d corruptions "
         "detected\n", cases, detected, corruptions);
}

int main(void) {
  test_require_weft_lib();
  known_values();
  exhaustive(ncclFloat8e4m3, 256);
  exhaustive(ncclFloat8e5m2, 256);
  exhaustive(ncclFloat16, 65536);
  exhaustive(ncclBfloat16, 65536);
  compiler_cross_check();
  ulps();
  integer_refs();
  input_domains();
  tolerance_vs_orders();
  text_round_trip();
  sampler_coverage();
  runner_vs_simulation();
  if (failures) {
    fprintf(stderr, "coll_reference_selftest: %d check(s) failed\n", failures);
    return 1;
  }
  printf("coll_reference_selftest: all checks passed\n");
  return 0;
}
