/* The built-in socket net: plugins/net-socket's v11 table, linked into the core from the static
 * library weft_net_socket_impl. The reference is a strong one on purpose: a weak reference would
 * not pull the table out of the static library, and the core would silently lose its fallback.
 * A build without that plugin defines WEFT_NO_BUILTIN_SOCKET and gets "no built-in". */
#include "plugin/net.h"

#ifndef WEFT_NO_BUILTIN_SOCKET
#include "../../plugins/net-socket/net_socket.h"
#endif

const ncclNet_v11_t* net_builtin_socket(void) {
#ifdef WEFT_NO_BUILTIN_SOCKET
  return NULL;
#else
  return &weft_net_socket_v11;
#endif
}
