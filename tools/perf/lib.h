/* The NCCL-ABI library under test, loaded with dlopen: weft-perf links no libnccl, so --lib
 * can point at weft, stock NCCL or any other library with NCCL's ABI. Every entry the tool
 * calls is resolved here; optional ones that are missing get a stub (never NULL), so callers
 * need no checks. */
#ifndef WEFT_PERF_LIB_H
#define WEFT_PERF_LIB_H

#include <limits.h>

#include "nccl.h"

struct perf_nccl {
  void* handle;
  char path[PATH_MAX]; /* the file the loader actually mapped (realpath) */
  char requested[PATH_MAX];
  int version;      /* ncclGetVersion */
  int has_alltoall; /* ncclAlltoAll exported (else grouped send/recv, as nccl-tests) */
  int has_premulsum;
  int has_oob_allgather; /* weftCommOobAllGather: control-plane exchange without the data path */
  int has_get_mode;      /* weftCommGetMode */
  int has_tune_query;    /* weftCommTuneQuery: what the library decides per collective */

  ncclResult_t (*GetVersion)(int*);
  const char* (*GetErrorString)(ncclResult_t);
  const char* (*GetLastError)(ncclComm_t);
  ncclResult_t (*GetUniqueId)(ncclUniqueId*);
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*CommAbort)(ncclComm_t);
  ncclResult_t (*CommFinalize)(ncclComm_t);
  ncclResult_t (*CommCount)(const ncclComm_t, int*);
  ncclResult_t (*CommUserRank)(const ncclComm_t, int*);
  ncclResult_t (*CommCuDevice)(const ncclComm_t, int*);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                cudaStream_t);
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*Reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                         cudaStream_t);
  ncclResult_t (*Send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*AlltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t,
                                       ncclComm_t);
  ncclResult_t (*RedOpDestroy)(ncclRedOp_t, ncclComm_t);
  /* Registration (-R; stubs answer ncclInvalidUsage where the library has none). */
  ncclResult_t (*MemAlloc)(void**, size_t);
  ncclResult_t (*MemFree)(void*);
  ncclResult_t (*CommRegister)(const ncclComm_t, void*, size_t, void**);
  ncclResult_t (*CommDeregister)(const ncclComm_t, void*);
  ncclResult_t (*CommWindowRegister)(ncclComm_t, void*, size_t, ncclWindow_t*, int);
  ncclResult_t (*CommWindowDeregister)(ncclComm_t, ncclWindow_t);
  /* weft extensions (stubs answer ncclInvalidUsage elsewhere). */
  ncclResult_t (*weftCommGetMode)(ncclComm_t, int*);
  ncclResult_t (*weftCommOobAllGather)(ncclComm_t, const void*, void*, size_t);
  /* (comm, ncclFunc_t, count, type, algorithm, protocol, channels, predicted µs) */
  ncclResult_t (*weftCommTuneQuery)(ncclComm_t, int, size_t, ncclDataType_t, int*, int*, int*,
                                    float*);
};

/* The library weft-perf uses when --lib is not given, relative to the directory of the running
 * executable: the installed LIBDIR/weft/libnccl.so.2 when it exists, else ../lib/libnccl.so.2
 * (the build tree). Writes the path into buf; 0 on success. */
int perf_default_lib_path(char* buf, size_t len);

/* dlopen()s path (NULL: the default above) and resolves every entry. 0 on success, else
 * -1 with the reason in err (missing file, dlerror, missing required symbol). */
int perf_nccl_load(struct perf_nccl* lib, const char* path, char* err, size_t errlen);

/* ncclGetVersion's code as text: 22803 -> "2.28.3" (codes before 2.9 are major*1000+…). */
void perf_nccl_version_text(int code, char* buf, size_t len);

/* A short name for tables and JSON: "weft" when the library has weft's extensions, else
 * "nccl". */
const char* perf_nccl_label(const struct perf_nccl* lib);

/* "ncclAllReduce failed: invalid usage (…): <last error text>" into buf. */
void perf_nccl_describe(const struct perf_nccl* lib, ncclResult_t res, ncclComm_t comm,
                        const char* what, char* buf, size_t len);

#endif
