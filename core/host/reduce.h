/* Element-wise reduction on host memory for every ncclDataType_t and every reduction the API
 * offers. Narrow float types (half, bfloat16, fp8 e4m3 and e5m2) are widened to float, combined,
 * and rounded back to nearest-even at every step, as a GPU kernel would do.
 *
 * A reduction x_0 ⊕ pre(x_1) ⊕ … is applied in three places by the executors:
 *   host_prepare:        a rank's own input enters the reduction: dst = pre(local).
 *                        pre(x) = round(scalar·x) for PreMulSum, x for every other kind.
 *   host_reduce:         two partial results meet: dst = in ⊕ local. Both operands are already
 *                        prepared (or partial results); host_reduce never applies pre().
 *   host_reduce_prepare: the fused hot-path step, dst = in ⊕ pre(local) with `local` a rank's
 *                        raw input; bit for bit the same as host_prepare into a temporary
 *                        followed by host_reduce (pre's result is rounded to the type first).
 *   host_finish:         the fully reduced value is finalised: dst = post(src); SumPostDiv
 *                        divides by nranks, every other kind copies.
 * The executor applies pre() exactly once to each rank's input: through host_prepare, or
 * through host_reduce_prepare; a single-rank reduction is host_prepare then host_finish.
 * ⊕ is + for Sum, PreMulSum and SumPostDiv, × for Prod, max/min for Max/Min, the user's
 * function for Custom.
 *
 * Aliasing: dst may be the same pointer as any source (or all of them); otherwise buffers must
 * not overlap. Partial overlap is not supported. count == 0 does nothing and touches no pointer.
 *
 * Arithmetic, per type:
 *   integers: Sum, Prod and PreMulSum wrap modulo 2^bits (signed types too: no overflow UB);
 *     Max/Min compare signed types as signed; SumPostDiv divides the wrapped sum as C does for
 *     the type (unsigned division; signed division truncates toward zero, e.g. -7/2 = -3).
 *   float, double: IEEE operations in the type, round to nearest even (the default mode).
 *   narrow floats: exact widening to float, one float operation, one rounding back; for one
 *     + or × this equals rounding the exact result directly. (SumPostDiv, which builtin ops
 *     use only for integers, is correctly rounded for every type; for float while nranks
 *     < 2^29.) Which NaN (sign, payload) an operation returns is unspecified.
 *   Max/Min on float types: a NaN operand is ignored (the other comes back, as CUDA's fmaxf /
 *     fminf do); NaN results only when both are NaN; -0 < +0. Every builtin ⊕ is therefore
 *     commutative bit for bit (up to which NaN payload comes back), and results do not depend
 *     on which operand is the accumulator.
 *   Custom: fn(inout, in, n, type, user) computes inout = inout ⊕ in; weft.h requires it to be
 *     commutative and associative, and host_reduce passes whichever source dst already holds
 *     as inout (copying `in` to dst first when dst is a third buffer).
 * Results under non-default floating-point environments (FTZ/DAZ, other rounding modes) are
 * whatever the CPU gives; conversions assume round-to-nearest. */
#ifndef WEFT_HOST_REDUCE_H
#define WEFT_HOST_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "weft.h"
#include "algo/redop.h"


/* The redop an API op means for this type and communicator size: Avg becomes PreMulSum(1/n)
 * for float types (1/n rounded to nearest even in the type itself, so it underflows to 0 from
 * n = 1024 on for fp8 e4m3 and from n = 131072 for e5m2) and SumPostDiv(n) for integers.
 * ncclInvalidArgument, with a WARN, for ops ≥ ncclNumOps (user-created handles are resolved by
 * the caller), invalid types or nranks < 1; *out is written only on success. */
ncclResult_t redop_from_builtin(ncclRedOp_t op, ncclDataType_t type, int nranks, weft_redop* out);
/* PreMulSum with a host scalar of the datatype (dtype_size(type) bytes, copied now). */
void redop_premulsum(ncclDataType_t type, const void* scalar, weft_redop* out);

/* The four steps; contracts at the top of this file. On an invalid datatype or kind they WARN
 * once and leave dst untouched. */
void host_prepare(const weft_redop* op, void* dst, const void* local, size_t count);
void host_reduce(const weft_redop* op, void* dst, const void* in, const void* local, size_t count);
void host_reduce_prepare(const weft_redop* op, void* dst, const void* in, const void* local,
                         size_t count);
void host_finish(const weft_redop* op, void* dst, const void* src, size_t count);

/* 1 when host_prepare does more than copy (PreMulSum): an executor may otherwise send a rank's
 * input straight from the user buffer. */
int host_redop_has_prepare(const weft_redop* op);
/* 1 when host_finish does more than copy (SumPostDiv). */
int host_redop_has_finish(const weft_redop* op);

/* Conversions. Widening is exact. Narrowing rounds to nearest, ties to even, subnormals
 * included; NaN stays NaN and keeps the payload bits that fit (so every narrow pattern
 * round-trips through float unchanged); overflow gives inf for half, bf16 and e5m2, and ±448
 * for e4m3 (which has no inf), from infinities too, as CUDA's __NV_SATFINITE does. Exposed for
 * tests and tools; the kernels inline the same code (dtype_narrow.h). */
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float fp8e4m3_to_float(uint8_t v);
uint8_t float_to_fp8e4m3(float f);
float fp8e5m2_to_float(uint8_t v);
uint8_t float_to_fp8e5m2(float f);

#endif
