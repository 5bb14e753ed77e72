/* Reduction kernels for the integer types. Elements are handled as unsigned integers of their
 * width, so Sum, Prod and PreMulSum wrap around modulo 2^bits for signed types too, with no
 * undefined (or implementation-defined) conversions; Max and Min of signed types compare with
 * the sign bit flipped, which orders two's complement values as signed.
 *
 * SumPostDiv divides the wrapped sum as C does for the type: unsigned division, or signed
 * division truncating toward zero. Up to 32 bits the quotient is computed in floating point
 * (float for 8 bits, double for 32), which is exact for these operands: with |x| < 2^p the
 * correctly rounded quotient cannot reach the next integer. It vectorises where integer
 * division does not. */
#include <stdint.h>

#include "host/reduce.h"
#include "host/reduce_kernels.h"

#define INT_ID(x) (x)

/* Arithmetic shared by signed and unsigned types of one width. */
#define U8_ADD(x, y) ((uint8_t)((x) + (y)))
#define U8_MUL(x, y) ((uint8_t)((x) * (y)))
#define U32_ADD(x, y) ((uint32_t)((x) + (y)))
#define U32_MUL(x, y) ((uint32_t)((x) * (y)))
#define U64_ADD(x, y) ((uint64_t)((x) + (y)))
#define U64_MUL(x, y) ((uint64_t)((x) * (y)))

/* Unsigned order. */
#define UMAX(x, y) ((x) > (y) ? (x) : (y))
#define UMIN(x, y) ((x) < (y) ? (x) : (y))
/* Signed order of the two's complement values held in unsigned x, y with sign bit B. */
#define SMAX(B, x, y) (((x) ^ (B)) > ((y) ^ (B)) ? (x) : (y))
#define SMIN(B, x, y) (((x) ^ (B)) < ((y) ^ (B)) ? (x) : (y))
#define I8_MAX(x, y) SMAX(0x80u, x, y)
#define I8_MIN(x, y) SMIN(0x80u, x, y)
#define I32_MAX(x, y) SMAX(0x80000000u, x, y)
#define I32_MIN(x, y) SMIN(0x80000000u, x, y)
#define I64_MAX(x, y) SMAX(UINT64_C(0x8000000000000000), x, y)
#define I64_MIN(x, y) SMIN(UINT64_C(0x8000000000000000), x, y)

/* 8-bit quotients in float: exact for |x| < 2^24 once the divisor is exact too, and a divisor
 * above 256 gives 0 for every 8-bit x, as 256 does. */
WEFT_ALWAYS_INLINE float div8(int nd) {
  int clamped = nd < 256 ? nd : 256; /* an int select, so the loop-invariant divisor is hoisted */
  return (float)clamped;
}
WEFT_ALWAYS_INLINE uint8_t u8_quot(uint8_t x, int nd) {
  return (uint8_t)(int)((float)x / div8(nd));
}
WEFT_ALWAYS_INLINE uint8_t i8_quot(uint8_t x, int nd) {
  int v = (int)(x ^ 0x80u) - 0x80;
  return (uint8_t)(int)((float)v / div8(nd)); /* negative → unsigned: modulo 2^8, defined */
}
WEFT_ALWAYS_INLINE uint32_t u32_quot(uint32_t x, int nd) { return (uint32_t)((double)x / nd); }
WEFT_ALWAYS_INLINE uint32_t i32_quot(uint32_t x, int nd) {
  int64_t v = (int64_t)(x ^ 0x80000000u) - 0x80000000;
  return (uint32_t)(int64_t)((double)v / nd);
}
WEFT_ALWAYS_INLINE uint64_t u64_quot(uint64_t x, int nd) { return x / (uint64_t)nd; }
WEFT_ALWAYS_INLINE uint64_t i64_quot(uint64_t x, int nd) {
  int64_t v = x < UINT64_C(0x8000000000000000) ? (int64_t)x : -(int64_t)~x - 1;
  return (uint64_t)(v / nd);
}

RED_DEFINE_FAMILY(u8, uint8_t, uint8_t, INT_ID, INT_ID, U8_ADD, U8_MUL, UMAX, UMIN, u8_quot);
RED_DEFINE_FAMILY(i8, uint8_t, uint8_t, INT_ID, INT_ID, U8_ADD, U8_MUL, I8_MAX, I8_MIN, i8_quot);
RED_DEFINE_FAMILY(u32, uint32_t, uint32_t, INT_ID, INT_ID, U32_ADD, U32_MUL, UMAX, UMIN,
                  u32_quot);
RED_DEFINE_FAMILY(i32, uint32_t, uint32_t, INT_ID, INT_ID, U32_ADD, U32_MUL, I32_MAX, I32_MIN,
                  i32_quot);
RED_DEFINE_FAMILY(u64, uint64_t, uint64_t, INT_ID, INT_ID, U64_ADD, U64_MUL, UMAX, UMIN,
                  u64_quot);
RED_DEFINE_FAMILY(i64, uint64_t, uint64_t, INT_ID, INT_ID, U64_ADD, U64_MUL, I64_MAX, I64_MIN,
                  i64_quot);
