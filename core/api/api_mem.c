/* Memory and registration entry points: MemAlloc/MemFree, CommRegister/Deregister,
 * CommWindowRegister/Deregister. These need the device data path; arguments are validated now
 * and each call says what is missing. (Reduction ops are in api_redop.c.) */
#include "api/api.h"
#include "topo/cuda_probe.h"
#include "util/check.h"

static ncclResult_t need_gpu(const char* fn) {
  weft_cuda_info cu;
  cuda_probe(&cu);
  if (!cu.usable) {
    WARN("%s: needs a CUDA device, and none is usable here (%s)", fn, cu.why);
    return ncclInvalidUsage;
  }
  return api_not_available(fn, "cuMem allocation");
}

WEFT_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  WEFT_ARG_NONNULL("ncclMemAlloc", ptr);
  if (size == 0) {
    WARN("ncclMemAlloc: size is 0");
    return ncclInvalidArgument;
  }
  return need_gpu("ncclMemAlloc");
}

WEFT_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == NULL) return ncclSuccess;
  WARN("ncclMemFree: %p was not allocated by ncclMemAlloc", ptr);
  return ncclInvalidArgument;
}

WEFT_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  const char* fn = "ncclCommRegister";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, buff);
  WEFT_ARG_NONNULL(fn, handle);
  if (size == 0) {
    WARN("%s: size is 0", fn);
    return ncclInvalidArgument;
  }
  return api_not_available(fn, "buffer registration");
}

WEFT_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  const char* fn = "ncclCommDeregister";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, handle);
  WARN("%s: handle %p was not returned by ncclCommRegister on comm %p", fn, handle,
       (void*)comm);
  return ncclInvalidArgument;
}

WEFT_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  const char* fn = "ncclCommWindowRegister";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, buff);
  WEFT_ARG_NONNULL(fn, win);
  if (size == 0) {
    WARN("%s: size is 0", fn);
    return ncclInvalidArgument;
  }
  if (winFlags != NCCL_WIN_DEFAULT && winFlags != NCCL_WIN_COLL_SYMMETRIC) {
    WARN("%s: winFlags = %d is not NCCL_WIN_DEFAULT or NCCL_WIN_COLL_SYMMETRIC", fn, winFlags);
    return ncclInvalidArgument;
  }
  return api_not_available(fn, "window registration");
}

WEFT_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  const char* fn = "ncclCommWindowDeregister";
  WEFT_CHECK(comm_check_handle(comm, fn));
  WEFT_ARG_NONNULL(fn, win);
  WARN("%s: window %p was not registered on comm %p", fn, (void*)win, (void*)comm);
  return ncclInvalidArgument;
}
