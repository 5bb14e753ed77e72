/* weft's own extensions (abi/weft.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "comm/comm_hang.h"
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

/* weftMemAllocTyped / weftMemFreeTyped live with the other allocators in api_mem.c. */

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

WEFT_EXT ncclResult_t weftCommHangReport(ncclComm_t comm) {
  WEFT_CHECK(comm_check_handle(comm, "weftCommHangReport"));
  return comm_hang_report_now(comm);
}
