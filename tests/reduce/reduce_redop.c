/* From API reductions to weft_redop: builtin ops per type, Avg as PreMulSum(1/n) on float types
 * (scalar stored in the type) and SumPostDiv(n) on integers, invalid arguments refused; a whole
 * n-rank Avg carried out with the executor's steps; PreMulSum scalars copied; the custom
 * callback under every aliasing; datatype sizes and names. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host/reduce.h"
#include "reduce_ref.h"
#include "testutil.h"
#include "util/names.h"

static uint64_t rng;

static void test_dtypes(void) {
  static const struct {
    ncclDataType_t t;
    size_t size;
    const char* name;
    int is_float;
  } want[] = {
    {ncclInt8, 1, "int8", 0},          {ncclUint8, 1, "uint8", 0},
    {ncclInt32, 4, "int32", 0},        {ncclUint32, 4, "uint32", 0},
    {ncclInt64, 8, "int64", 0},        {ncclUint64, 8, "uint64", 0},
    {ncclFloat16, 2, "float16", 1},    {ncclFloat32, 4, "float32", 1},
    {ncclFloat64, 8, "float64", 1},    {ncclBfloat16, 2, "bfloat16", 1},
    {ncclFloat8e4m3, 1, "f8e4m3", 1},  {ncclFloat8e5m2, 1, "f8e5m2", 1},
  };
  EXPECT_EQ_INT(sizeof want / sizeof want[0], ncclNumTypes);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    EXPECT_EQ_INT(dtype_size(want[i].t), want[i].size);
    EXPECT(strcmp(dtype_name(want[i].t), want[i].name) == 0);
    EXPECT_EQ_INT(dtype_is_float(want[i].t), want[i].is_float);
  }
  EXPECT_EQ_INT(dtype_size(ncclNumTypes), 0);
  EXPECT_EQ_INT(dtype_size((ncclDataType_t)-1), 0);
  EXPECT(strcmp(dtype_name((ncclDataType_t)99), "invalid") == 0);
  EXPECT_EQ_INT(dtype_is_float((ncclDataType_t)99), 0);
}

static void test_builtin_map(void) {
  static const weft_red_kind direct[] = {WEFT_RED_SUM, WEFT_RED_PROD, WEFT_RED_MAX, WEFT_RED_MIN};
  for (int t = 0; t < ncclNumTypes; t++) {
    for (int o = 0; o < 4; o++) {
      weft_redop op;
      EXPECT_OK(redop_from_builtin((ncclRedOp_t)o, (ncclDataType_t)t, 5, &op));
      EXPECT_EQ_INT(op.kind, direct[o]);
      EXPECT_EQ_INT(op.type, t);
      EXPECT(!host_redop_has_prepare(&op) && !host_redop_has_finish(&op));
    }
    static const int sizes[] = {1, 2, 3, 7, 8, 1000, 1025, 100000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      int n = sizes[k];
      weft_redop op;
      EXPECT_OK(redop_from_builtin(ncclAvg, (ncclDataType_t)t, n, &op));
      EXPECT_EQ_INT(op.type, t);
      if (!dtype_is_float((ncclDataType_t)t)) {
        EXPECT_EQ_INT(op.kind, WEFT_RED_SUMPOSTDIV);
        EXPECT_EQ_INT(op.nranks, n);
        continue;
      }
      EXPECT_EQ_INT(op.kind, WEFT_RED_PREMULSUM);
      /* The scalar is 1/n rounded once, in the type itself. */
      if (t == ncclFloat64) {
        double s;
        memcpy(&s, op.scalar, sizeof s);
        EXPECT(s == 1.0 / n);
      } else {
        const ref_fmt* f = ref_fmt_of((ncclDataType_t)t);
        uint32_t got = 0;
        memcpy(&got, op.scalar, dtype_size((ncclDataType_t)t));
        EXPECT_EQ_INT(got, ref_round(f, 1.0 / n));
      }
    }
  }
  /* Invalid arguments: refused, output untouched. */
  weft_redop op, before;
  memset(&op, 0x5a, sizeof op);
  before = op;
  EXPECT_RES(redop_from_builtin(ncclNumOps, ncclFloat32, 2, &op), ncclInvalidArgument);
  EXPECT_RES(redop_from_builtin((ncclRedOp_t)1000, ncclFloat32, 2, &op), ncclInvalidArgument);
  EXPECT_RES(redop_from_builtin((ncclRedOp_t)-1, ncclFloat32, 2, &op), ncclInvalidArgument);
  EXPECT_RES(redop_from_builtin(ncclSum, ncclNumTypes, 2, &op), ncclInvalidArgument);
  EXPECT_RES(redop_from_builtin(ncclAvg, ncclInt32, 0, &op), ncclInvalidArgument);
  EXPECT(memcmp(&op, &before, sizeof op) == 0);
}

/* An n-rank Avg the way an executor runs it: rank 0's input prepared, the others folded in with
 * host_reduce_prepare, then host_finish. Floats: sum of round(s·x_r) in rank order, rounded
 * each step (here float32, checked in double); integers: wrapped sum, truncating division. */
static void test_avg_whole(void) {
  enum { N = 999, R = 5 };
  static float xf[R][N], accf[N];
  static int32_t xi[R][N], acci[N];
  static uint8_t xu[R][N], accu[N];
  for (int r = 0; r < R; r++)
    for (int i = 0; i < N; i++) {
      uint64_t v = test_rand(&rng);
      xf[r][i] = (float)((int64_t)(v % 2000001) - 1000000) / 1024.0f;
      xi[r][i] = (int32_t)(uint32_t)(v >> 20); /* large: sums wrap */
      xu[r][i] = (uint8_t)(v >> 40);
    }
  weft_redop f, i32, u8;
  EXPECT_OK(redop_from_builtin(ncclAvg, ncclFloat32, R, &f));
  EXPECT_OK(redop_from_builtin(ncclAvg, ncclInt32, R, &i32));
  EXPECT_OK(redop_from_builtin(ncclAvg, ncclUint8, R, &u8));
  host_prepare(&f, accf, xf[0], N);
  host_prepare(&i32, acci, xi[0], N);
  host_prepare(&u8, accu, xu[0], N);
  for (int r = 1; r < R; r++) {
    host_reduce_prepare(&f, accf, accf, xf[r], N);
    host_reduce_prepare(&i32, acci, acci, xi[r], N);
    host_reduce_prepare(&u8, accu, xu[r], accu, N); /* the other aliasing */
  }
  host_finish(&f, accf, accf, N);
  host_finish(&i32, acci, acci, N);
  host_finish(&u8, accu, accu, N);
  float s = (float)(1.0 / R);
  for (int i = 0; i < N; i++) {
    double want = (double)(float)((double)s * xf[0][i]);
    int64_t sum = xi[0][i];
    unsigned usum = xu[0][i];
    for (int r = 1; r < R; r++) {
      want = (double)(float)(want + (double)(float)((double)s * xf[r][i]));
      sum += xi[r][i];
      usum += xu[r][i];
    }
    EXPECT((double)accf[i] == want);
    /* wrap the 64-bit sum to 32 bits arithmetically, then divide truncating */
    int64_t m = ((sum % 4294967296LL) + 4294967296LL) % 4294967296LL;
    if (m >= 2147483648LL) m -= 4294967296LL;
    EXPECT_EQ_INT(acci[i], m / R);
    EXPECT_EQ_INT(accu[i], (usum % 256) / R);
  }
}

static void test_premulsum_scalar(void) {
  /* The scalar is copied at creation: later changes to the caller's variable do not matter. */
  uint16_t h = 0x4200; /* 3.0 in half */
  weft_redop op;
  redop_premulsum(ncclFloat16, &h, &op);
  h = 0;
  uint16_t x[3] = {0x3c00, 0xc000, 0x7c00}, d[3]; /* 1, -2, inf */
  host_prepare(&op, d, x, 3);
  EXPECT_EQ_INT(d[0], 0x4200);
  EXPECT_EQ_INT(d[1], 0xc600); /* -6 */
  EXPECT_EQ_INT(d[2], 0x7c00);
  double s64 = -0.5;
  redop_premulsum(ncclFloat64, &s64, &op);
  double xd[2] = {3.0, -1.0}, dd[2];
  host_prepare(&op, dd, xd, 2);
  EXPECT(dd[0] == -1.5 && dd[1] == 0.5);
  int64_t s = -3;
  redop_premulsum(ncclInt64, &s, &op);
  int64_t xl[2] = {INT64_MAX, 5}, dl[2];
  host_prepare(&op, dl, xl, 2);
  EXPECT(dl[0] == (int64_t)((uint64_t)INT64_MAX * (uint64_t)-3) && dl[1] == -15);
}

/* Custom callback: inout = inout + in on int32, counting calls and elements. */
static long custom_calls, custom_elems;
static void custom_add(void* inout, const void* in, size_t count, ncclDataType_t type, void* user) {
  EXPECT_EQ_INT(type, ncclInt32);
  EXPECT(user == &custom_calls);
  int32_t* io = inout;
  const int32_t* b = in;
  for (size_t i = 0; i < count; i++) io[i] = (int32_t)((uint32_t)io[i] + (uint32_t)b[i]);
  custom_calls++;
  custom_elems += (long)count;
}

static void test_custom(void) {
  enum { N = 3001 }; /* more than one bounce slice */
  static int32_t a[N], b[N], d[N];
  for (int i = 0; i < N; i++) {
    a[i] = (int32_t)(test_rand(&rng) % 100000);
    b[i] = (int32_t)(test_rand(&rng) % 100000);
  }
  weft_redop op = {.kind = WEFT_RED_CUSTOM, .type = ncclInt32, .fn = custom_add,
                   .user = &custom_calls};
  EXPECT(!host_redop_has_prepare(&op) && !host_redop_has_finish(&op));
  host_reduce(&op, d, a, b, N);
  for (int i = 0; i < N; i++) EXPECT_EQ_INT(d[i], a[i] + b[i]);
  EXPECT_EQ_INT(custom_calls, 1);
  memcpy(d, a, sizeof d);
  host_reduce(&op, d, d, b, N);
  for (int i = 0; i < N; i++) EXPECT_EQ_INT(d[i], a[i] + b[i]);
  memcpy(d, b, sizeof d);
  host_reduce(&op, d, a, d, N);
  for (int i = 0; i < N; i++) EXPECT_EQ_INT(d[i], a[i] + b[i]);
  memcpy(d, a, sizeof d);
  host_reduce_prepare(&op, d, d, d, N); /* the callback never sees inout == in */
  for (int i = 0; i < N; i++) EXPECT_EQ_INT(d[i], 2 * a[i]);
  EXPECT_EQ_INT(custom_elems, 4L * N);
  /* Prepare and finish copy; count 0 never calls back. */
  long calls = custom_calls;
  host_prepare(&op, d, a, N);
  EXPECT(memcmp(d, a, sizeof d) == 0);
  host_finish(&op, d, b, N);
  EXPECT(memcmp(d, b, sizeof d) == 0);
  host_reduce(&op, NULL, NULL, NULL, 0);
  EXPECT_EQ_INT(custom_calls, calls);
}

int main(void) {
  test_require_weft_lib();
  rng = test_seed(0xa5a5);
  test_dtypes();
  test_builtin_map();
  test_avg_whole();
  test_premulsum_scalar();
  test_custom();
  printf("dtypes, builtin ops, Avg, PreMulSum scalar, custom op: ok\n");
  return 0;
}
