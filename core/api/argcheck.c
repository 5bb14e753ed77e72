/* Argument validation shared by the API entry points (see api.h). */
#include "api/api.h"
#include "util/check.h"

ncclResult_t api_not_available(const char* fn, const char* what) {
  WARN("%s: %s is not available yet in weft %s", fn, what, WEFT_VERSION_STRING);
  return ncclInvalidUsage;
}

ncclResult_t arg_check_datatype(const char* fn, ncclDataType_t type) {
  if ((int)type < 0 || (int)type >= ncclNumTypes) {
    WARN("%s: datatype = %d is not a valid ncclDataType_t (0..%d)", fn, (int)type,
         ncclNumTypes - 1);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t arg_check_op(const char* fn, const struct ncclComm* comm, ncclRedOp_t op) {
  if ((int)op >= 0 && (int)op < ncclNumOps) return ncclSuccess;
  WARN("%s: op = %d is not a built-in reduction and no user op with that handle exists on "
       "comm %p",
       fn, (int)op, (void*)comm);
  return ncclInvalidArgument;
}

ncclResult_t arg_check_root(const char* fn, const struct ncclComm* comm, const char* what,
                            int root) {
  if (root < 0 || root >= comm->nranks) {
    WARN("%s: %s = %d is out of range for a communicator of %d ranks", fn, what, root,
         comm->nranks);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t arg_check_buffer(const char* fn, const char* what, const void* ptr, size_t count) {
  if (ptr == NULL && count > 0) {
    WARN("%s: %s is NULL with count %zu", fn, what, count);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}
