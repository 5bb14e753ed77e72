/* libnccl-net-weft-ib.so's exports: ncclNetPlugin_v11, the implementation itself (NCCL 2.28+),
 * and the target that weft_net_export (plugins/common) adapts into ncclNetPlugin_v10 … _v6 and
 * _v12. Not part of weft_net_ib_impl. */
#include "net_common.h"
#include "net_export.h"
#include "net_ib.h"
#include "net_ib_internal.h"

WEFT_NET_PLUGIN_EXPORTS(net_ib, "weft-ib", &weft_net_ib_v11, net_ib_connect_tc);
