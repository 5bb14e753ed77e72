/* Executor choice and the version banner. WEFT_DEVICE=host forces host mode; device forces a
 * GPU (an error when none is usable); auto uses a GPU when the driver reports one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "topo/cuda_probe.h"
#include "util/check.h"
#include "util/param.h"

ncclResult_t comm_choose_mode(int requested_dev, weft_mode* mode, int* cuda_dev) {
  const char* want = param_str(WEFT_PARAM_DEVICE);
  if (!strcasecmp(want, "host")) {
    *mode = WEFT_MODE_HOST;
    *cuda_dev = -1;
    return ncclSuccess;
  }
  if (strcasecmp(want, "auto") != 0 && strcasecmp(want, "device") != 0) {
    WARN("WEFT_DEVICE=%s: expected auto, host or device", want);
    return ncclInvalidArgument;
  }
  weft_cuda_info cu;
  cuda_probe(&cu);
  if (!cu.usable) {
    if (!strcasecmp(want, "device")) {
      WARN("WEFT_DEVICE=device but no CUDA device is usable: %s", cu.why);
      return ncclInvalidUsage;
    }
    INFO(NCCL_INIT, "no CUDA device usable (%s): host mode", cu.why);
    *mode = WEFT_MODE_HOST;
    *cuda_dev = -1;
    return ncclSuccess;
  }
  int dev = requested_dev >= 0 ? requested_dev : cu.current_device;
  if (dev >= cu.device_count) {
    WARN("CUDA device %d requested but only %d are visible", dev, cu.device_count);
    return ncclInvalidArgument;
  }
  *mode = WEFT_MODE_DEVICE;
  *cuda_dev = dev;
  return ncclSuccess;
}

static pthread_once_t banner_once = PTHREAD_ONCE_INIT;

static void banner(void) {
  weft_cuda_info cu;
  cuda_probe(&cu);
  char cuda[96] = "no CUDA device";
  if (cu.usable)
    snprintf(cuda, sizeof cuda, "CUDA driver %d.%d, runtime %d.%d", cu.driver_version / 1000,
             (cu.driver_version % 1000) / 10, cu.runtime_version / 1000,
             (cu.runtime_version % 1000) / 10);
  VERSION_LOG("weft %s (NCCL %d.%d.%d compatible), %s", WEFT_VERSION_STRING, NCCL_MAJOR,
              NCCL_MINOR, NCCL_PATCH, cuda);
  INFO(NCCL_INIT, "weft %s, NCCL version %d.%d.%d compatible, %s", WEFT_VERSION_STRING,
       NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, cuda);
}

void comm_print_banner(void) { pthread_once(&banner_once, banner); }
