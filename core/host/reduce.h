/* Element-wise reduction on host memory for every ncclDataType_t and every reduction the API
 * offers. Narrow float types (half, bfloat16, fp8 e4m3 and e5m2) are widened to float, combined,
 * and rounded back to nearest-even at every step, as a GPU kernel would do.
 *
 * A reduction is applied in three places by the executors:
 *   host_prepare: a rank's own input enters the reduction (PreMulSum scales it here);
 *   host_reduce:  an incoming partial result meets a local one;
 *   host_finish:  the fully reduced value is finalised (SumPostDiv divides by nranks here).
 * All three accept dst aliasing any source. */
#ifndef WEFT_HOST_REDUCE_H
#define WEFT_HOST_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "weft.h"

typedef enum {
  WEFT_RED_SUM = 0,
  WEFT_RED_PROD,
  WEFT_RED_MAX,
  WEFT_RED_MIN,
  WEFT_RED_PREMULSUM, /* sum of scalar*x; ncclAvg on float types is PreMulSum(1/nranks) */
  WEFT_RED_SUMPOSTDIV, /* sum, then divide by nranks; ncclAvg on integer types */
  WEFT_RED_CUSTOM      /* weftRedOpCreateCustom: user callback */
} weft_red_kind;

typedef struct {
  weft_red_kind kind;
  ncclDataType_t type;
  /* PreMulSum scalar, stored as the datatype's own value (bytes of one element). */
  unsigned char scalar[8];
  int nranks;          /* SumPostDiv divisor */
  weftReduceFn_t fn;   /* CUSTOM */
  void* user;          /* CUSTOM */
} weft_redop;

/* Size in bytes of one element; 0 for an invalid type. */
size_t dtype_size(ncclDataType_t type);
/* "float32", "bfloat16", "f8e4m3", … for logs and tools. */
const char* dtype_name(ncclDataType_t type);

/* The redop an API op means for this type and communicator size: Avg becomes PreMulSum(1/n)
 * for float types and SumPostDiv(n) for integers. ncclInvalidArgument for ops ≥ ncclNumOps. */
ncclResult_t redop_from_builtin(ncclRedOp_t op, ncclDataType_t type, int nranks, weft_redop* out);
/* PreMulSum with a host scalar of the datatype (copied now). */
void redop_premulsum(ncclDataType_t type, const void* scalar, weft_redop* out);

void host_prepare(const weft_redop* op, void* dst, const void* local, size_t count);
void host_reduce(const weft_redop* op, void* dst, const void* in, const void* local, size_t count);
void host_finish(const weft_redop* op, void* dst, const void* src, size_t count);

/* Conversions (round to nearest even; NaN stays NaN; overflow: inf for half/bf16/e5m2, the
 * saturating max-normal … as NCCL/CUDA's __nv_cvt rules for e4m3 with satfinite). Exposed for
 * tests and tools. */
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float fp8e4m3_to_float(uint8_t v);
uint8_t float_to_fp8e4m3(float f);
float fp8e5m2_to_float(uint8_t v);
uint8_t float_to_fp8e5m2(float f);

#endif
