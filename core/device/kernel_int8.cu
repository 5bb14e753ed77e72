/* Kernels for int8 (device_kernel.cuh); one file per datatype so they compile in parallel. */
#include "device/device_kernel.cuh"

WEFT_DEFINE_LAUNCHER(weft_dev_launch_int8, DT_INT8)
