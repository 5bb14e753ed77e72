/* Sizes and names of ncclDataType_t values, names of ncclFunc_t values and of results. */
#include "util/names.h"
#include "nccl_common.h"

static const struct {
  size_t size;
  const char* name;
} dtype_info[ncclNumTypes] = {
  [ncclInt8] = {1, "int8"},         [ncclUint8] = {1, "uint8"},
  [ncclInt32] = {4, "int32"},       [ncclUint32] = {4, "uint32"},
  [ncclInt64] = {8, "int64"},       [ncclUint64] = {8, "uint64"},
  [ncclFloat16] = {2, "float16"},   [ncclFloat32] = {4, "float32"},
  [ncclFloat64] = {8, "float64"},   [ncclBfloat16] = {2, "bfloat16"},
  [ncclFloat8e4m3] = {1, "f8e4m3"}, [ncclFloat8e5m2] = {1, "f8e5m2"},
};

static int dtype_valid(ncclDataType_t type) { return (unsigned)type < (unsigned)ncclNumTypes; }

size_t dtype_size(ncclDataType_t type) { return dtype_valid(type) ? dtype_info[type].size : 0; }

const char* dtype_name(ncclDataType_t type) {
  return dtype_valid(type) ? dtype_info[type].name : "invalid";
}

int dtype_is_float(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16:
    case ncclFloat32:
    case ncclFloat64:
    case ncclBfloat16:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    default:
      return 0;
  }
}

const char* weft_func_name(int func) {
  switch (func) {
    case ncclFuncBroadcast: return "Broadcast";
    case ncclFuncReduce: return "Reduce";
    case ncclFuncAllGather: return "AllGather";
    case ncclFuncReduceScatter: return "ReduceScatter";
    case ncclFuncAllReduce: return "AllReduce";
    case ncclFuncSend: return "Send";
    case ncclFuncRecv: return "Recv";
    case ncclFuncAlltoAll: return "AlltoAll";
    case ncclFuncGather: return "Gather";
    case ncclFuncScatter: return "Scatter";
    default: return "Unknown";
  }
}

const char* weft_proto_name(int proto) {
  switch (proto) {
    case NCCL_PROTO_LL: return "LL";
    case NCCL_PROTO_LL128: return "LL128";
    case NCCL_PROTO_SIMPLE: return "Simple";
    default: return "Unknown";
  }
}

const char* weft_result_str(ncclResult_t res) {
  switch (res) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the weft developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "timeout";
    default: return "unknown result code";
  }
}
