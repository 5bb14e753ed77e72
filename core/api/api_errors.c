/* Error strings, the last error text, and the debug reset. */
#include "api/api.h"
#include "util/log.h"
#include "util/names.h"

WEFT_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* ncclGetErrorString(ncclResult_t result) { return weft_result_str(result); }

/* The text of the last WARN in this process (NCCL keeps one process-wide string too); the
 * copy is per thread so the pointer stays valid while other threads log. */
WEFT_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* ncclGetLastError(ncclComm_t comm) {
  static __thread char buf[1024];
  (void)comm;
  weft_log_last_error(buf, sizeof buf);
  return buf;
}

WEFT_API(void, ncclResetDebugInit, void);
void ncclResetDebugInit(void) { weft_log_reset(); }

/* NCCL exports this internal entry too; tools that resolve every exported symbol find it. */
WEFT_EXT void ncclResetDebugInitInternal(void);
void ncclResetDebugInitInternal(void) { weft_log_reset(); }
