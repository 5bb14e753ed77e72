/* The TCP net plugin as the core sees it: one v11 table, named "Socket" like NCCL's built-in,
 * linked into libweft as the network that is always there. The same code is also shipped as
 * libnccl-net-weft-socket.so, which exports ncclNetPlugin_v11 … ncclNetPlugin_v6 (plugin_exports.c,
 * plugins/common) for stock NCCL; libweft itself exports none of those. */
#ifndef WEFT_NET_SOCKET_H
#define WEFT_NET_SOCKET_H

#include "nccl_net.h"

extern const ncclNet_v11_t weft_net_socket_v11 __attribute__((visibility("hidden")));

#endif
