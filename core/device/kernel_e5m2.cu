/* Kernels for e5m2 (device_kernel.cuh); one file per datatype so they compile in parallel. */
#include "device/device_kernel.cuh"

WEFT_DEFINE_LAUNCHER(weft_dev_launch_e5m2, DT_E5M2)
