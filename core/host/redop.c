/* From an API reduction (ncclRedOp_t, or a PreMulSum scalar) to the weft_redop the executors
 * apply. */
#include <string.h>

#include "host/dtype_narrow.h"
#include "host/reduce.h"
#include "util/log.h"
#include "util/names.h"

/* Store v, rounded to nearest even, as one element of a float type. */
static void store_float_scalar(ncclDataType_t type, double v, unsigned char* out) {
  /* double → float → narrow rounds like double → narrow directly: each step keeps at least
   * 2p+2 bits of the next (53 ≥ 2·24+2, 24 ≥ 2·11+2). */
  float f = (float)v;
  switch (type) {
    case ncclFloat64: memcpy(out, &v, sizeof v); break;
    case ncclFloat32: memcpy(out, &f, sizeof f); break;
    case ncclFloat16: {
      uint16_t h = cvt_f32_to_f16(f);
      memcpy(out, &h, sizeof h);
      break;
    }
    case ncclBfloat16: {
      uint16_t h = cvt_f32_to_bf16(f);
      memcpy(out, &h, sizeof h);
      break;
    }
    case ncclFloat8e4m3: out[0] = cvt_f32_to_e4m3(f); break;
    case ncclFloat8e5m2: out[0] = cvt_f32_to_e5m2(f); break;
    default: break;
  }
}

ncclResult_t redop_from_builtin(ncclRedOp_t op, ncclDataType_t type, int nranks,
                                weft_redop* out) {
  if (dtype_size(type) == 0) {
    WARN("reduction: invalid datatype %d", (int)type);
    return ncclInvalidArgument;
  }
  if ((int)op < 0 || op >= ncclNumOps) {
    WARN("reduction: invalid operation %d (builtin ops are 0..%d)", (int)op, ncclNumOps - 1);
    return ncclInvalidArgument;
  }
  if (nranks < 1) {
    WARN("reduction: invalid communicator size %d", nranks);
    return ncclInvalidArgument;
  }
  weft_redop r;
  memset(&r, 0, sizeof r);
  r.type = type;
  r.nranks = nranks;
  switch (op) {
    case ncclSum: r.kind = WEFT_RED_SUM; break;
    case ncclProd: r.kind = WEFT_RED_PROD; break;
    case ncclMax: r.kind = WEFT_RED_MAX; break;
    case ncclMin: r.kind = WEFT_RED_MIN; break;
    default: /* ncclAvg */
      if (dtype_is_float(type)) {
        r.kind = WEFT_RED_PREMULSUM;
        store_float_scalar(type, 1.0 / nranks, r.scalar);
      } else {
        r.kind = WEFT_RED_SUMPOSTDIV;
      }
      break;
  }
  *out = r;
  return ncclSuccess;
}

void redop_premulsum(ncclDataType_t type, const void* scalar, weft_redop* out) {
  weft_redop r;
  memset(&r, 0, sizeof r);
  r.kind = WEFT_RED_PREMULSUM;
  r.type = type;
  size_t size = dtype_size(type);
  if (size == 0)
    WARN("reduction: PreMulSum with invalid datatype %d", (int)type);
  else
    memcpy(r.scalar, scalar, size);
  *out = r;
}
