/* Names and sizes of NCCL's enums, for logs, tools and every layer's checks: datatypes,
 * collective functions (ncclFunc_t) and results. Pure tables; no state. */
#ifndef WEFT_UTIL_NAMES_H
#define WEFT_UTIL_NAMES_H

#include <stddef.h>
#include "nccl.h"
#include "util/names.h"

/* Size in bytes of one element; 0 for an invalid type. */
size_t dtype_size(ncclDataType_t type);
/* "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64",
 * "bfloat16", "f8e4m3", "f8e5m2" for logs and tools; "invalid" otherwise. */
const char* dtype_name(ncclDataType_t type);
/* 1 for half, float, double, bfloat16 and both fp8 types; 0 for integers and invalid types. */
int dtype_is_float(ncclDataType_t type);

/* "Broadcast" … "AllReduce", "Send", "Recv", "AlltoAll", "Gather", "Scatter" for an ncclFunc_t
 * value; "Unknown" otherwise. */
const char* weft_func_name(int func);

/* "LL", "LL128", "Simple" for NCCL_PROTO_x; "Unknown" otherwise. */
const char* weft_proto_name(int proto);

/* The text ncclGetErrorString returns for res (NCCL's wording). */
const char* weft_result_str(ncclResult_t res);

#endif
