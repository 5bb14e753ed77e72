/* libnccl-net-weft-socket.so's one-sided tables (rma_socket.h, built by
 * plugins/common/rma_common.h): ncclRmaPlugin_v15 (the
 * implementation), _v14 and _v13, and ncclGinPlugin_v13 (the same table as RMA v13: a GIN proxy
 * device whose puts the host issues; it has no device handle, so GPU code cannot drive it; GIN
 * v14 and later move data only from GPU code, which a TCP socket cannot offer). Not part of the
 * built-in net: libweft exports none of this. */
#include "net_export.h"
#include "rma_common.h"
#include "rma_socket.h"

WEFT_RMA_EXPORT_V15_V14(rma_socket, "weft-socket");
WEFT_RMA_EXPORT_V13_GIN13(rma_socket, "weft-socket");
