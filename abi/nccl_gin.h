/* The GIN (GPU-initiated networking) plugin ABI: every version weft loads (v11 to v15, one frozen
 * header each under gin/), the constants they share, and the current view (v15, NCCL 2.32's). A
 * plugin exports `ncclGinPlugin_vN` from a libnccl-gin*.so (NCCL_GIN_PLUGIN) or from its net
 * plugin's library; core/plugin/ probes the newest first and adapts older versions to the view.
 * Plain C, no CUDA headers needed. */
#ifndef NCCL_GIN_H_
#define NCCL_GIN_H_

#include <stdint.h>

#include "nccl.h"
#include "nccl_common.h"
#include "nccl_net.h"

/* Bytes of the handle GIN and RMA listen write (the same as a net handle). */
#define NCCL_GIN_HANDLE_MAXSIZE 128

/* signalOp of iputSignal: add 1 to the 64-bit signal, or add signalValue. */
#define NCCL_GIN_SIGNAL_OP_INC 0x1
#define NCCL_GIN_SIGNAL_OP_ADD 0x2

/* mrFlags of regMrSym / regMrSymDmaBuf (values are NCCL's). FORCE_SO: keep writes into this
 * registration strictly ordered (NCCL passes it for a window registered with
 * NCCL_WIN_STRICT_ORDERING, and for its own signal buffers); SIGNAL_NEVER_RESET: signals in it
 * only ever grow, so the plugin may cache them. */
#ifndef NCCL_NET_MR_FLAG_FORCE_SO
#define NCCL_NET_MR_FLAG_FORCE_SO (1 << 0)
#endif
#ifndef NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET
#define NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET (1 << 1)
#endif

/* GIN plugin libraries one process may load. */
#ifndef NCCL_GIN_MAX_PLUGINS
#define NCCL_GIN_MAX_PLUGINS 16
#endif

#include "gin/gin_v11.h"
#include "gin/gin_v12.h"
#include "gin/gin_v13.h"
#include "gin/gin_v14.h"
#include "gin/gin_v15.h"

/* The current view. */
typedef ncclGin_v15_t ncclGin_t;
typedef ncclGinConfig_v15_t ncclGinConfig_t;
typedef ncclGinProperties_v15_t ncclGinProperties_t;
#define NCCL_GIN_PLUGIN_SYMBOL ncclGinPlugin_v15

#endif
