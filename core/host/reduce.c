/* host_prepare, host_reduce, host_reduce_prepare and host_finish: pick the kernel table for the
 * datatype and the entry for the operation and the caller's aliasing, then run one loop.
 * Nothing here loops over elements except reduce_self, when every pointer is the same. */
#include <string.h>

#include "host/reduce.h"
#include "host/reduce_kernels.h"
#include "util/log.h"
#include "util/names.h"

/* Scratch for the case dst == in == local: the kernels take each operand restrict, so one of
 * them goes through this buffer in slices. Small enough to stay in L1. */
#define RED_BOUNCE_BYTES 4096

const red_kernels* red_kernels_for(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return &red_kernels_i8;
    case ncclUint8: return &red_kernels_u8;
    case ncclInt32: return &red_kernels_i32;
    case ncclUint32: return &red_kernels_u32;
    case ncclInt64: return &red_kernels_i64;
    case ncclUint64: return &red_kernels_u64;
    case ncclFloat16: return &red_kernels_f16;
    case ncclFloat32: return &red_kernels_f32;
    case ncclFloat64: return &red_kernels_f64;
    case ncclBfloat16: return &red_kernels_bf16;
    case ncclFloat8e4m3: return &red_kernels_e4m3;
    case ncclFloat8e5m2: return &red_kernels_e5m2;
    default: return NULL;
  }
}

static const red_kernels* kernels_or_warn(const weft_redop* op) {
  const red_kernels* k = red_kernels_for(op->type);
  if (k == NULL) WARN_ONCE("host reduce: invalid datatype %d, nothing done", (int)op->type);
  return k;
}

static void copy_elems(const weft_redop* op, void* dst, const void* src, size_t count) {
  size_t size = dtype_size(op->type);
  if (size == 0) {
    WARN_ONCE("host reduce: invalid datatype %d, nothing done", (int)op->type);
    return;
  }
  if (dst != src) memcpy(dst, src, count * size);
}

/* dst = dst ⊕ dst, or dst ⊕ pre(dst) when fused: every operand is the same buffer, but the
 * kernels (and the custom callback) take their operands as distinct buffers, so one operand
 * goes through an L1-sized copy, a slice at a time. k is unused for custom ops. */
static void reduce_self(const weft_redop* op, const red_kernels* k, int bin, int fused,
                        void* dst, size_t count) {
  size_t size = dtype_size(op->type);
  unsigned char tmp[RED_BOUNCE_BYTES];
  size_t slice = sizeof tmp / size;
  for (size_t off = 0; off < count; off += slice) {
    size_t n = count - off < slice ? count - off : slice;
    void* d = (char*)dst + off * size;
    memcpy(tmp, d, n * size);
    if (op->kind == WEFT_RED_CUSTOM)
      op->fn(d, tmp, n, op->type, op->user);
    else if (fused)
      k->fma_acc(d, tmp, op->scalar, n);
    else
      k->acc[bin](d, tmp, n);
  }
}

int host_redop_has_prepare(const weft_redop* op) { return op->kind == WEFT_RED_PREMULSUM; }
int host_redop_has_finish(const weft_redop* op) { return op->kind == WEFT_RED_SUMPOSTDIV; }

void host_prepare(const weft_redop* op, void* dst, const void* local, size_t count) {
  if (count == 0) return;
  if (op->kind != WEFT_RED_PREMULSUM) {
    copy_elems(op, dst, local, count);
    return;
  }
  const red_kernels* k = kernels_or_warn(op);
  if (k == NULL) return;
  if (dst == local)
    k->scale_ip(dst, op->scalar, count);
  else
    k->scale(dst, local, op->scalar, count);
}

/* dst = in ⊕ local through fn(inout, in): the callback is commutative (weft.h), so whichever
 * source dst already holds becomes inout. */
static void reduce_custom(const weft_redop* op, void* dst, const void* in, const void* local,
                          size_t count) {
  size_t size = dtype_size(op->type);
  if (op->fn == NULL || size == 0) {
    WARN_ONCE("host reduce: custom operator without function or with invalid datatype %d",
              (int)op->type);
    return;
  }
  if (dst == in && dst == local) {
    reduce_self(op, NULL, 0, 0, dst, count);
  } else if (dst == in) {
    op->fn(dst, local, count, op->type, op->user);
  } else if (dst == local) {
    op->fn(dst, in, count, op->type, op->user);
  } else {
    memcpy(dst, in, count * size);
    op->fn(dst, local, count, op->type, op->user);
  }
}

void host_reduce(const weft_redop* op, void* dst, const void* in, const void* local,
                 size_t count) {
  if (count == 0) return;
  int bin;
  switch (op->kind) {
    case WEFT_RED_SUM:
    case WEFT_RED_PREMULSUM:
    case WEFT_RED_SUMPOSTDIV: bin = RED_BIN_SUM; break;
    case WEFT_RED_PROD: bin = RED_BIN_PROD; break;
    case WEFT_RED_MAX: bin = RED_BIN_MAX; break;
    case WEFT_RED_MIN: bin = RED_BIN_MIN; break;
    case WEFT_RED_CUSTOM: reduce_custom(op, dst, in, local, count); return;
    default:
      WARN_ONCE("host reduce: invalid reduction kind %d, nothing done", (int)op->kind);
      return;
  }
  const red_kernels* k = kernels_or_warn(op);
  if (k == NULL) return;
  /* Every builtin ⊕ is commutative bit for bit, so either source can be the accumulator. */
  if (dst == in && dst == local) {
    reduce_self(op, k, bin, 0, dst, count);
  } else if (dst == in) {
    k->acc[bin](dst, local, count);
  } else if (dst == local) {
    k->acc[bin](dst, in, count);
  } else {
    k->bin[bin](dst, in, local, count);
  }
}

void host_reduce_prepare(const weft_redop* op, void* dst, const void* in, const void* local,
                         size_t count) {
  if (op->kind != WEFT_RED_PREMULSUM) {
    host_reduce(op, dst, in, local, count);
    return;
  }
  if (count == 0) return;
  const red_kernels* k = kernels_or_warn(op);
  if (k == NULL) return;
  if (dst == in && dst == local) {
    reduce_self(op, k, RED_BIN_SUM, 1, dst, count);
  } else if (dst == in) {
    k->fma_acc(dst, local, op->scalar, count);
  } else if (dst == local) {
    k->fma_rev(dst, in, op->scalar, count);
  } else {
    k->fma(dst, in, local, op->scalar, count);
  }
}

void host_finish(const weft_redop* op, void* dst, const void* src, size_t count) {
  if (count == 0) return;
  if (op->kind != WEFT_RED_SUMPOSTDIV) {
    copy_elems(op, dst, src, count);
    return;
  }
  const red_kernels* k = kernels_or_warn(op);
  if (k == NULL) return;
  if (op->nranks < 1) {
    WARN_ONCE("host reduce: SumPostDiv by %d, result left undivided", op->nranks);
    copy_elems(op, dst, src, count);
    return;
  }
  if (dst == src)
    k->div_ip(dst, op->nranks, count);
  else
    k->div(dst, src, op->nranks, count);
}
