/* What a reduction is: its kind, the datatype, the PreMulSum scalar, the SumPostDiv divisor or
 * the user's function. A description only: host/reduce.h carries it out on host memory, the
 * kernels on device memory (device/dev_types.cuh). */
#ifndef WEFT_ALGO_REDOP_H
#define WEFT_ALGO_REDOP_H

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

#endif
