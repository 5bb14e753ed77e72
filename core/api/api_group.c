/* ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd. */
#include "api/api.h"
#include "group/group.h"
#include "util/check.h"

WEFT_API(ncclResult_t, ncclGroupStart, void);
ncclResult_t ncclGroupStart(void) { return group_start(); }

WEFT_API(ncclResult_t, ncclGroupEnd, void);
ncclResult_t ncclGroupEnd(void) { return group_end(); }

WEFT_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  const char* fn = "ncclGroupSimulateEnd";
  WEFT_ARG_NONNULL(fn, simInfo);
  if (simInfo->magic != 0x74685283) {
    WARN("%s: simInfo->magic = 0x%x, expected 0x74685283 (use NCCL_SIM_INFO_INITIALIZER)", fn,
         simInfo->magic);
    return ncclInvalidArgument;
  }
  if (group_depth() == 0) {
    WARN("%s: no matching ncclGroupStart", fn);
    return ncclInvalidUsage;
  }
  return api_not_available(fn, "simulating a group (no cost model yet)");
}
