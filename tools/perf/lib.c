/* Loading the library under test (see lib.h). Required entries are the ones every NCCL since
 * 2.7 exports; optional ones (ncclAlltoAll, ncclGetLastError, PreMulSum, weft's extensions) get
 * stubs that behave the way an application would have to cope with their absence. */
#include "lib.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct perf_nccl* stub_lib; /* the loaded library, for the stubs below */

static const char* stub_last_error(ncclComm_t comm) {
  (void)comm;
  return "";
}

static ncclResult_t stub_unsupported_destroy(ncclComm_t comm) {
  (void)comm;
  return ncclInvalidUsage;
}

static ncclResult_t stub_finalize(ncclComm_t comm) {
  (void)comm;
  return ncclSuccess;
}

/* ncclAlltoAll as nccl-tests builds it on libraries without one: grouped send/recv. */
static ncclResult_t stub_alltoall(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  static const size_t sizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  int nranks;
  ncclResult_t res = stub_lib->CommCount(comm, &nranks);
  if (res != ncclSuccess) return res;
  if ((int)type < 0 || (int)type >= ncclNumTypes) return ncclInvalidArgument;
  size_t chunk = count * sizes[type];
  res = stub_lib->GroupStart();
  for (int r = 0; r < nranks && res == ncclSuccess; r++) {
    res = stub_lib->Send((const char*)sendbuff + (size_t)r * chunk, count, type, r, comm, stream);
    if (res == ncclSuccess)
      res = stub_lib->Recv((char*)recvbuff + (size_t)r * chunk, count, type, r, comm, stream);
  }
  ncclResult_t end = stub_lib->GroupEnd();
  return res != ncclSuccess ? res : end;
}

static ncclResult_t stub_premulsum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                   ncclScalarResidence_t residence, ncclComm_t comm) {
  (void)op, (void)scalar, (void)type, (void)residence, (void)comm;
  return ncclInvalidUsage;
}

static ncclResult_t stub_opdestroy(ncclRedOp_t op, ncclComm_t comm) {
  (void)op, (void)comm;
  return ncclSuccess;
}

/* A library without registration (older than NCCL 2.19 / 2.27): -R cannot run on it. */
static ncclResult_t stub_mem_alloc(void** p, size_t n) {
  (void)p, (void)n;
  return ncclInvalidUsage;
}
static ncclResult_t stub_mem_free(void* p) {
  (void)p;
  return ncclInvalidUsage;
}
static ncclResult_t stub_register(const ncclComm_t c, void* b, size_t n, void** h) {
  (void)c, (void)b, (void)n, (void)h;
  return ncclInvalidUsage;
}
static ncclResult_t stub_deregister(const ncclComm_t c, void* h) {
  (void)c, (void)h;
  return ncclInvalidUsage;
}
static ncclResult_t stub_window_register(ncclComm_t c, void* b, size_t n, ncclWindow_t* w, int f) {
  (void)c, (void)b, (void)n, (void)w, (void)f;
  return ncclInvalidUsage;
}
static ncclResult_t stub_window_deregister(ncclComm_t c, ncclWindow_t w) {
  (void)c, (void)w;
  return ncclInvalidUsage;
}

static ncclResult_t stub_get_mode(ncclComm_t comm, int* isDevice) {
  (void)comm;
  *isDevice = -1; /* unknown: not weft */
  return ncclSuccess;
}

static ncclResult_t stub_oob(ncclComm_t comm, const void* s, void* r, size_t bytes) {
  (void)comm, (void)s, (void)r, (void)bytes;
  return ncclInvalidUsage;
}

static ncclResult_t stub_tune_query(ncclComm_t comm, int coll, size_t count, ncclDataType_t type,
                                    int* algo, int* proto, int* nch, float* us) {
  (void)comm, (void)coll, (void)count, (void)type, (void)algo, (void)proto, (void)nch, (void)us;
  return ncclInvalidUsage;
}

int perf_default_lib_path(char* buf, size_t len) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  char* slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = '\0';
#ifdef WEFT_PERF_INSTALLED_LIB
  /* Installed (cmake/install.cmake): LIBDIR/weft/libnccl.so.2, tried first so that an installed
   * weft-perf never picks up another NCCL that happens to sit in ../lib. */
  int wi = snprintf(buf, len, "%s/%s", exe, WEFT_PERF_INSTALLED_LIB);
  if (wi > 0 && (size_t)wi < len && access(buf, R_OK) == 0) return 0;
#endif
  int w = snprintf(buf, len, "%s/../lib/libnccl.so.2", exe);
  return w > 0 && (size_t)w < len ? 0 : -1;
}

#define RESOLVE(field, name, required)                                                          \
  do {                                                                                          \
    void* sym_ = dlsym(lib->handle, name);                                                      \
    memcpy(&lib->field, &sym_, sizeof sym_);                                                    \
    if (!sym_ && (required)) {                                                                  \
      snprintf(err, errlen, "%s does not export %s: not an NCCL-ABI library", lib->path, name); \
      goto fail_close;                                                                          \
    }                                                                                           \
  } while (0)

int perf_nccl_load(struct perf_nccl* lib, const char* path, char* err, size_t errlen) {
  memset(lib, 0, sizeof *lib);
  if (path) {
    snprintf(lib->requested, sizeof lib->requested, "%s", path);
  } else if (perf_default_lib_path(lib->requested, sizeof lib->requested)) {
    snprintf(err, errlen, "cannot locate this executable to find ../lib/libnccl.so.2; use --lib");
    return -1;
  }
  if (!path && access(lib->requested, R_OK) != 0) {
    snprintf(err, errlen, "weft's library %s is not there (build the 'nccl' target, or use --lib)",
             lib->requested);
    return -1;
  }
  /* A bare name (no '/') goes through the loader's search path, like dlopen itself. */
  lib->handle = dlopen(lib->requested, RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    snprintf(err, errlen, "cannot load %s: %s", lib->requested, dlerror());
    return -1;
  }
  snprintf(lib->path, sizeof lib->path, "%s", lib->requested);

  RESOLVE(GetVersion, "ncclGetVersion", 1);
  Dl_info info;
  void* addr;
  memcpy(&addr, &lib->GetVersion, sizeof addr);
  if (dladdr(addr, &info) && info.dli_fname) {
    char real[PATH_MAX];
    if (realpath(info.dli_fname, real))
      snprintf(lib->path, sizeof lib->path, "%s", real);
    else
      snprintf(lib->path, sizeof lib->path, "%s", info.dli_fname);
  }
  RESOLVE(GetErrorString, "ncclGetErrorString", 1);
  RESOLVE(GetLastError, "ncclGetLastError", 0);
  RESOLVE(GetUniqueId, "ncclGetUniqueId", 1);
  RESOLVE(CommInitRank, "ncclCommInitRank", 1);
  RESOLVE(CommDestroy, "ncclCommDestroy", 1);
  RESOLVE(CommAbort, "ncclCommAbort", 0);
  RESOLVE(CommFinalize, "ncclCommFinalize", 0);
  RESOLVE(CommCount, "ncclCommCount", 1);
  RESOLVE(CommUserRank, "ncclCommUserRank", 1);
  RESOLVE(CommCuDevice, "ncclCommCuDevice", 1);
  RESOLVE(GroupStart, "ncclGroupStart", 1);
  RESOLVE(GroupEnd, "ncclGroupEnd", 1);
  RESOLVE(AllReduce, "ncclAllReduce", 1);
  RESOLVE(AllGather, "ncclAllGather", 1);
  RESOLVE(ReduceScatter, "ncclReduceScatter", 1);
  RESOLVE(Broadcast, "ncclBroadcast", 1);
  RESOLVE(Reduce, "ncclReduce", 1);
  RESOLVE(Send, "ncclSend", 1);
  RESOLVE(Recv, "ncclRecv", 1);
  RESOLVE(AlltoAll, "ncclAlltoAll", 0);
  RESOLVE(RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum", 0);
  RESOLVE(RedOpDestroy, "ncclRedOpDestroy", 0);
  RESOLVE(MemAlloc, "ncclMemAlloc", 0);
  RESOLVE(MemFree, "ncclMemFree", 0);
  RESOLVE(CommRegister, "ncclCommRegister", 0);
  RESOLVE(CommDeregister, "ncclCommDeregister", 0);
  RESOLVE(CommWindowRegister, "ncclCommWindowRegister", 0);
  RESOLVE(CommWindowDeregister, "ncclCommWindowDeregister", 0);
  RESOLVE(weftCommGetMode, "weftCommGetMode", 0);
  RESOLVE(weftCommOobAllGather, "weftCommOobAllGather", 0);
  RESOLVE(weftCommTuneQuery, "weftCommTuneQuery", 0);

  lib->has_alltoall = lib->AlltoAll != NULL;
  lib->has_premulsum = lib->RedOpCreatePreMulSum != NULL;
  lib->has_get_mode = lib->weftCommGetMode != NULL;
  lib->has_oob_allgather = lib->weftCommOobAllGather != NULL;
  lib->has_tune_query = lib->weftCommTuneQuery != NULL;
  if (!lib->GetLastError) lib->GetLastError = stub_last_error;
  if (!lib->CommAbort) lib->CommAbort = stub_unsupported_destroy;
  if (!lib->CommFinalize) lib->CommFinalize = stub_finalize;
  if (!lib->AlltoAll) lib->AlltoAll = stub_alltoall;
  if (!lib->RedOpCreatePreMulSum) lib->RedOpCreatePreMulSum = stub_premulsum;
  if (!lib->RedOpDestroy) lib->RedOpDestroy = stub_opdestroy;
  if (!lib->MemAlloc) lib->MemAlloc = stub_mem_alloc;
  if (!lib->MemFree) lib->MemFree = stub_mem_free;
  if (!lib->CommRegister) lib->CommRegister = stub_register;
  if (!lib->CommDeregister) lib->CommDeregister = stub_deregister;
  if (!lib->CommWindowRegister) lib->CommWindowRegister = stub_window_register;
  if (!lib->CommWindowDeregister) lib->CommWindowDeregister = stub_window_deregister;
  if (!lib->weftCommGetMode) lib->weftCommGetMode = stub_get_mode;
  if (!lib->weftCommOobAllGather) lib->weftCommOobAllGather = stub_oob;
  if (!lib->weftCommTuneQuery) lib->weftCommTuneQuery = stub_tune_query;
  stub_lib = lib;

  ncclResult_t res = lib->GetVersion(&lib->version);
  if (res != ncclSuccess) {
    snprintf(err, errlen, "%s: ncclGetVersion failed: %s", lib->path, lib->GetErrorString(res));
    goto fail_close;
  }
  return 0;

fail_close:
  dlclose(lib->handle);
  lib->handle = NULL;
  return -1;
}

void perf_nccl_version_text(int code, char* buf, size_t len) {
  if (code >= 10000)
    snprintf(buf, len, "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  else
    snprintf(buf, len, "%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}

const char* perf_nccl_label(const struct perf_nccl* lib) {
  return lib->has_get_mode ? "weft" : "nccl";
}

void perf_nccl_describe(const struct perf_nccl* lib, ncclResult_t res, ncclComm_t comm,
                        const char* what, char* buf, size_t len) {
  const char* last = lib->GetLastError(comm);
  snprintf(buf, len, "%s failed: %s (ncclResult_t %d)%s%s", what, lib->GetErrorString(res),
           (int)res, last && *last ? ": " : "", last ? last : "");
}
