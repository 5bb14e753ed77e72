/* Reduction kernels for float and double: plain IEEE arithmetic in the type itself (round to
 * nearest even, as the CPU does by default), Max/Min as red_max_f32/red_min_f32 define. */
#include "host/reduce.h"
#include "host/reduce_kernels.h"

#define FLT_ID(x) (x)
#define FLT_ADD(x, y) ((x) + (y))
#define FLT_MUL(x, y) ((x) * (y))

/* SumPostDiv (never produced by redop_from_builtin for float types, but defined): float divides
 * in double, where any int divisor is exact; rounding that quotient to float is then the
 * correctly rounded result for divisors below 2^29 (a float tie and x/n differ by at least
 * 2^-(24+log2 n) relatively, more than double's 2^-53). */
WEFT_ALWAYS_INLINE float f32_quot(float x, int nd) { return (float)((double)x / nd); }
WEFT_ALWAYS_INLINE double f64_quot(double x, int nd) { return x / (double)nd; }

RED_DEFINE_FAMILY(f32, float, float, FLT_ID, FLT_ID, FLT_ADD, FLT_MUL, red_max_f32, red_min_f32,
                  f32_quot);
RED_DEFINE_FAMILY(f64, double, double, FLT_ID, FLT_ID, FLT_ADD, FLT_MUL, red_max_f64,
                  red_min_f64, f64_quot);
