/* Kernels for bf16 (device_kernel.cuh); one file per datatype so they compile in parallel. */
#include "device/device_kernel.cuh"

WEFT_DEFINE_LAUNCHER(weft_dev_launch_bf16, DT_BF16)
