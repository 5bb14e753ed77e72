/* ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd. */
#include <stddef.h>
#include <string.h>

#include "api/api.h"
#include "group/group.h"
#include "util/check.h"

WEFT_API(ncclResult_t, ncclGroupStart, void);
ncclResult_t ncclGroupStart(void) { return group_start(); }

WEFT_API(ncclResult_t, ncclGroupEnd, void);
ncclResult_t ncclGroupEnd(void) { return group_end(); }

#define SIM_INFO_MAGIC 0x74685283u

/* Ends the group as ncclGroupEnd would, launching nothing: estimatedTime is the cost model's
 * time for the group's collectives (µs; the slowest communicator of the group). The caller's
 * struct is read and written up to its own size (NCCL's rule for versioned structs). A bad
 * simInfo still closes the group, dropping its operations, so the next call is not swallowed
 * by a group left open. */
WEFT_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  const char* fn = "ncclGroupSimulateEnd";
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  size_t size = 0;
  ncclResult_t bad = ncclSuccess;
  info.magic = 0;
  if (simInfo == NULL) {
    WARN("%s: simInfo is NULL; the group is closed and its operations dropped", fn);
    bad = ncclInvalidArgument;
  } else {
    memcpy(&size, &simInfo->size, sizeof size);
    if (size > sizeof info) size = sizeof info;
    memcpy(&info, simInfo, size);
    if (info.magic != SIM_INFO_MAGIC) {
      WARN("%s: simInfo->magic = 0x%x (size %zu), expected 0x%x: start from "
           "NCCL_SIM_INFO_INITIALIZER; the group is closed and its operations dropped",
           fn, info.magic, size, SIM_INFO_MAGIC);
      bad = ncclInvalidArgument;
    }
  }
  double us;
  ncclResult_t res = group_end_simulated(bad, &us);
  if (res != ncclSuccess || us < 0) return res; /* an inner level: nothing to report yet */
  info.estimatedTime = (float)us;
  memcpy(simInfo, &info, size);
  return ncclSuccess;
}
