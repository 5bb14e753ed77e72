/* devcomm_interop's kernel compiled against NVIDIA's 2.30.7 nccl_device.h. */
#include <string.h>

#include <nccl_device.h>

#define INTEROP_KERNEL interopKernelNvidia
#define INTEROP_LAUNCH interopLaunchNvidia
#include "devcomm_interop_kernel.cuh"
