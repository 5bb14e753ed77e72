/* weft's device API: what a CUDA kernel includes to talk to peers through a communicator that
 * weft's library created. The same source compiles against NCCL's nccl_device.h; this header
 * covers NCCL's LSA subset (load/store access between GPUs of one node): teams, cooperative
 * groups, window and resource-buffer pointers, window lookup, LSA barriers, and the
 * requirements ncclDevCommCreate takes. Not here (yet): GIN (network), multimem reductions,
 * ncclSymPtr, the LL all-to-all, ncclBarrierSession (hybrid LSA + GIN) - docs/device-api.md.
 *
 * Read nccl_device/core.h, coop.h and lsa_barrier.h for what each function does;
 * nccl_device/impl/ holds the definitions. Build kernels with nvcc (C++17), with the directory
 * of this file (where nccl.h and nccl_devcomm.h are installed too) on the include path. */
#ifndef NCCL_DEVICE_H_
#define NCCL_DEVICE_H_

#include "nccl.h"
#include "nccl_device/core.h"
#include "nccl_device/coop.h"
#include "nccl_device/lsa_barrier.h"
#include "nccl_device/impl/coop__funcs.h"
#include "nccl_device/impl/core__funcs.h"
#include "nccl_device/impl/lsa_barrier__funcs.h"

#endif
