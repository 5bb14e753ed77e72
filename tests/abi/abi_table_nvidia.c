/* The comparison table expanded against NVIDIA's installed nccl.h (path given by the build as
 * WEFT_NVIDIA_NCCL_H, included by full path so weft's abi/nccl.h cannot shadow it). Only types
 * and macros are used: nothing here links against CUDA. */
#include WEFT_NVIDIA_NCCL_H

#define ABI_TABLE_FN abi_table_nvidia
#include "abi_table.h"
