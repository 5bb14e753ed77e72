/* User reduction ops (ncclRedOpCreatePreMulSum, weftRedOpCreateCustom) of one communicator.
 * A handle is ncclNumOps + ((generation << 12 | slot) XOR salt), the salt coming from the
 * communicator's hash: a handle of another communicator, or of a destroyed op whose slot was
 * reused, does not decode to a live entry and is rejected with ncclInvalidArgument. */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "plan/plan.h"
#include "util/check.h"
#include "util/names.h"

#define UOP_SLOT_BITS 12
#define UOP_MAX (1 << UOP_SLOT_BITS)
#define UOP_GEN_MASK 0x7fffu
#define UOP_VALUE_MASK 0x7ffffffu

static ncclRedOp_t encode(const struct weft_plan* p, int slot, uint32_t gen) {
  uint32_t v = ((gen & UOP_GEN_MASK) << UOP_SLOT_BITS) | (uint32_t)slot;
  return (ncclRedOp_t)(ncclNumOps + (int)((v ^ p->uop_salt) & UOP_VALUE_MASK));
}

/* The live entry for handle op, or NULL. Called with comm->lock held. */
static weft_user_op* lookup(struct weft_plan* p, ncclRedOp_t op) {
  if ((int)op < ncclNumOps) return NULL;
  uint32_t v = ((uint32_t)((int)op - ncclNumOps) ^ p->uop_salt) & UOP_VALUE_MASK;
  int slot = (int)(v & (UOP_MAX - 1));
  uint32_t gen = v >> UOP_SLOT_BITS;
  if (slot >= p->nuops) return NULL;
  weft_user_op* u = &p->uops[slot];
  return u->live && (u->gen & UOP_GEN_MASK) == gen ? u : NULL;
}

ncclResult_t plan_redop_create(struct ncclComm* comm, const weft_redop* op,
                               const void* device_scalar, ncclRedOp_t* out) {
  struct weft_plan* p = comm->plan;
  pthread_mutex_lock(&comm->lock);
  int slot = -1;
  for (int i = 0; i < p->nuops; i++)
    if (!p->uops[i].live) {
      slot = i;
      break;
    }
  if (slot < 0) {
    if (p->nuops >= UOP_MAX) {
      pthread_mutex_unlock(&comm->lock);
      WARN("rank %d: %d user reduction ops exist on comm %p; destroy some first", comm->rank,
           UOP_MAX, (void*)comm);
      return ncclInvalidUsage;
    }
    weft_user_op* grown = realloc(p->uops, (size_t)(p->nuops + 1) * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&comm->lock);
      WARN("rank %d: out of memory creating a reduction op", comm->rank);
      return ncclSystemError;
    }
    p->uops = grown;
    slot = p->nuops++;
    memset(&p->uops[slot], 0, sizeof p->uops[slot]);
  }
  weft_user_op* u = &p->uops[slot];
  u->gen++;
  u->live = 1;
  u->op = *op;
  u->device_scalar = device_scalar;
  *out = encode(p, slot, u->gen);
  pthread_mutex_unlock(&comm->lock);
  return ncclSuccess;
}

ncclResult_t plan_redop_destroy(struct ncclComm* comm, ncclRedOp_t op, const char* fn) {
  struct weft_plan* p = comm->plan;
  if (p == NULL) {
    WARN("%s: op = %d was not created on comm %p", fn, (int)op, (void*)comm);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&comm->lock);
  weft_user_op* u = lookup(p, op);
  if (u) u->live = 0;
  pthread_mutex_unlock(&comm->lock);
  if (!u) {
    WARN("%s: op = %d was not created on comm %p, or was destroyed already", fn, (int)op,
         (void*)comm);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t plan_redop_resolve(struct ncclComm* comm, ncclRedOp_t op, ncclDataType_t type,
                                const char* fn, weft_redop* out, const void** device_scalar) {
  *device_scalar = NULL;
  if ((int)op >= 0 && (int)op < ncclNumOps) return redop_from_builtin(op, type, comm->nranks, out);
  struct weft_plan* p = comm->plan;
  if ((int)op < 0 || p == NULL) {
    WARN("%s: op = %d is not a valid reduction on comm %p", fn, (int)op, (void*)comm);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&comm->lock);
  weft_user_op* u = lookup(p, op);
  weft_user_op copy;
  if (u) copy = *u;
  pthread_mutex_unlock(&comm->lock);
  if (!u) {
    WARN("%s: op = %d is not a built-in reduction and no live user op with that handle exists "
         "on comm %p (created on another communicator, or destroyed?)",
         fn, (int)op, (void*)comm);
    return ncclInvalidArgument;
  }
  if (copy.op.kind == WEFT_RED_PREMULSUM && copy.op.type != type) {
    WARN("%s: op = %d is a PreMulSum created for %s, used with %s", fn, (int)op,
         dtype_name(copy.op.type), dtype_name(type));
    return ncclInvalidArgument;
  }
  *out = copy.op;
  out->type = type;
  out->nranks = comm->nranks;
  *device_scalar = copy.device_scalar;
  return ncclSuccess;
}
