/* The CollNet plugin ABI (in-network reductions, e.g. SHARP): every version weft loads (v6 to
 * v12, one frozen header each under collnet/; NCCL 2.30 and 2.32 look up the same range). A net
 * plugin's library exports `ncclCollNetPlugin_vN` next to its ncclNetPlugin_vN; there is no
 * separate library or setting. Plain C, no CUDA headers needed. */
#ifndef NCCL_COLLNET_H_
#define NCCL_COLLNET_H_

#include "nccl.h"
#include "nccl_common.h"
#include "nccl_net.h"

#include "collnet/collnet_v6.h"
#include "collnet/collnet_v7.h"
#include "collnet/collnet_v8.h"
#include "collnet/collnet_v9.h"
#include "collnet/collnet_v10.h"
#include "collnet/collnet_v11.h"
#include "collnet/collnet_v12.h"

typedef ncclCollNet_v12_t ncclCollNet_t;
typedef ncclNetSGE_v12_t ncclNetSGE_t;
#define NCCL_COLLNET_PLUGIN_SYMBOL ncclCollNetPlugin_v12

#endif
