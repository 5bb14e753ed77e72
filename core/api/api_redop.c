/* User reduction ops: ncclRedOpCreatePreMulSum, weftRedOpCreateCustom and ncclRedOpDestroy.
 * Handles belong to one communicator (plan/plan_redop.c); any other communicator, and the same
 * one after destroy, rejects them with ncclInvalidArgument. A ncclScalarDevice scalar is read
 * when each operation using it runs (host executor: at launch; GPU: by the kernel, in stream
 * order); ncclScalarHostImmediate copies it now. */
#include "api/api.h"
#include "plan/plan.h"
#include "util/check.h"

static ncclResult_t need_plan(const char* fn, const struct ncclComm* comm) {
  if (comm->plan != NULL) return ncclSuccess;
  return api_not_available(fn, "user reductions without a data path (built without CUDA)");
}

WEFT_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, op);
  WEFT_ARG_NONNULL(fn, scalar);
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    WARN("%s: residence = %d is not ncclScalarDevice or ncclScalarHostImmediate", fn,
         (int)residence);
    return ncclInvalidArgument;
  }
  WEFT_CHECK(need_plan(fn, comm));
  weft_redop r;
  /* A device-resident scalar on a GPU communicator is GPU memory: the kernels read it when
   * they run; the host never dereferences it. */
  static const unsigned char zero[8] = {0};
  int on_gpu = residence == ncclScalarDevice && comm->mode == WEFT_MODE_DEVICE;
  redop_premulsum(datatype, on_gpu ? zero : scalar, &r);
  r.nranks = comm->nranks;
  return plan_redop_create(comm, &r, residence == ncclScalarDevice ? scalar : NULL, op);
}

WEFT_EXT ncclResult_t weftRedOpCreateCustom(ncclRedOp_t* op, weftReduceFn_t fn, void* user,
                                            ncclComm_t comm) {
  const char* name = "weftRedOpCreateCustom";
  WEFT_CHECK(comm_check(comm, name));
  WEFT_ARG_NONNULL(name, op);
  WEFT_ARG_NONNULL(name, fn);
  if (comm->mode != WEFT_MODE_HOST) {
    WARN("%s: custom reductions run on the host executor only; comm %p (rank %d) runs on a "
         "GPU",
         name, (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  WEFT_CHECK(need_plan(name, comm));
  weft_redop r = {0};
  r.kind = WEFT_RED_CUSTOM;
  r.fn = fn;
  r.user = user;
  r.nranks = comm->nranks;
  return plan_redop_create(comm, &r, NULL, op);
}

WEFT_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  const char* fn = "ncclRedOpDestroy";
  WEFT_CHECK(comm_check_handle(comm, fn));
  if ((int)op >= 0 && (int)op < ncclNumOps) {
    WARN("%s: op = %d is a built-in reduction and cannot be destroyed", fn, (int)op);
    return ncclInvalidArgument;
  }
  return plan_redop_destroy(comm, op, fn);
}
