/* The RMA plugin ABI (host-initiated one-sided put/get/signal on a group): every version weft
 * loads (v13 to v15, one frozen header each under rma/) and the current view (v15, NCCL 2.32's).
 * A plugin exports `ncclRmaPlugin_vN` from a libnccl-rma*.so (NCCL_RMA_PLUGIN), its GIN library
 * or its net library; an RMA v13 table may also be found as ncclGinPlugin_v13 (the same shape).
 * NCCL 2.32 also knows v16 and v17, whose layouts are published nowhere yet; weft does not load
 * them. Plain C, no CUDA headers needed. */
#ifndef NCCL_RMA_H_
#define NCCL_RMA_H_

#include "nccl_gin.h"

#ifndef NCCL_RMA_MAX_PLUGINS
#define NCCL_RMA_MAX_PLUGINS 16
#endif

#include "rma/rma_v13.h"
#include "rma/rma_v14.h"
#include "rma/rma_v15.h"

/* The current view. */
typedef ncclRma_v15_t ncclRma_t;
typedef ncclRmaConfig_v15_t ncclRmaConfig_t;
#define NCCL_RMA_PLUGIN_SYMBOL ncclRmaPlugin_v15

#endif
