/* Kernels for uint8 (device_kernel.cuh); one file per datatype so they compile in parallel. */
#include "device/device_kernel.cuh"

WEFT_DEFINE_LAUNCHER(weft_dev_launch_uint8, DT_UINT8)
