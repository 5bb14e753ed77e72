/* Kernels for double (device_kernel.cuh); one file per datatype so they compile in parallel. */
#include "device/device_kernel.cuh"

WEFT_DEFINE_LAUNCHER(weft_dev_launch_double, DT_DOUBLE)
