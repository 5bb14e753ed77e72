/* libnccl-net-weft-socket.so's exports: ncclNetPlugin_v11, the implementation itself (NCCL
 * 2.28+), and the target that weft_net_export (plugins/common) adapts into ncclNetPlugin_v10 …
 * _v6 and _v12. Not part of weft_net_socket_impl, so libweft exports none of this. */
#include "net_common.h"
#include "net_export.h"
#include "net_socket.h"
#include "net_socket_internal.h"

WEFT_NET_PLUGIN_EXPORTS(net_socket, "weft-socket", &weft_net_socket_v11, net_socket_connect_tc);
