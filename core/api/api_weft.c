/* weft's own extensions (abi/weft.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "util/check.h"

WEFT_EXT int weftVersionCode(void) {
  int major = 0, minor = 0, patch = 0;
  sscanf(WEFT_VERSION_STRING, "%d.%d.%d", &major, &minor, &patch);
  return major * 10000 + minor * 100 + patch;
}

WEFT_EXT const char* weftVersionString(void) { return WEFT_VERSION_STRING; }

WEFT_EXT ncclResult_t weftCommGetMode(ncclComm_t comm, int* isDevice) {
  WEFT_CHECK(comm_check_handle(comm, "weftCommGetMode"));
  WEFT_ARG_NONNULL("weftCommGetMode", isDevice);
  *isDevice = comm->mode == WEFT_MODE_DEVICE;
  return ncclSuccess;
}

/* Host memory is page-aligned so it can later be registered with a NIC as is. */
WEFT_EXT ncclResult_t weftMemAllocTyped(void** ptr, size_t size, weftMemType_t type) {
  const char* fn = "weftMemAllocTyped";
  WEFT_ARG_NONNULL(fn, ptr);
  if (size == 0) {
    WARN("%s: size is 0", fn);
    return ncclInvalidArgument;
  }
  switch (type) {
    case weftMemHost: {
      void* p = NULL;
      if (posix_memalign(&p, 4096, size) != 0) {
        WARN("%s: cannot allocate %zu bytes of host memory", fn, size);
        return ncclSystemError;
      }
      *ptr = p;
      return ncclSuccess;
    }
    case weftMemDevice:
    case weftMemManaged: return api_not_available(fn, "device and managed allocation");
    default:
      WARN("%s: type = %d is not a weftMemType_t", fn, (int)type);
      return ncclInvalidArgument;
  }
}

WEFT_EXT ncclResult_t weftMemFreeTyped(void* ptr, weftMemType_t type) {
  if (ptr == NULL) return ncclSuccess;
  switch (type) {
    case weftMemHost: free(ptr); return ncclSuccess;
    case weftMemDevice:
    case weftMemManaged: return api_not_available("weftMemFreeTyped", "device and managed memory");
    default:
      WARN("weftMemFreeTyped: type = %d is not a weftMemType_t", (int)type);
      return ncclInvalidArgument;
  }
}

#define WEFT_OOB_MAX_BYTES (1u << 20)

WEFT_EXT ncclResult_t weftCommOobAllGather(ncclComm_t comm, const void* sendbuf, void* recvbuf,
                                           size_t bytes) {
  const char* fn = "weftCommOobAllGather";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_ARG_NONNULL(fn, sendbuf);
  WEFT_ARG_NONNULL(fn, recvbuf);
  if (bytes == 0 || bytes > WEFT_OOB_MAX_BYTES) {
    WARN("%s: bytes = %zu must be in [1, %u]", fn, bytes, WEFT_OOB_MAX_BYTES);
    return ncclInvalidArgument;
  }
  char* out = recvbuf;
  if (out + (size_t)comm->rank * bytes != sendbuf)
    memmove(out + (size_t)comm->rank * bytes, sendbuf, bytes);
  return bootstrap_allgather(comm->bootstrap, recvbuf, bytes);
}
