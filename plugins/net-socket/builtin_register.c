/* The socket net as the core's built-in net: linked into libweft.so and libnccl.so.2 (not into
 * the plugin .so), this constructor hands weft_net_socket_v11 to core/plugin at load. The core
 * names no plugin (tests/layering): the library target chooses its built-in net here. The
 * strong reference pulls the table out of the static weft_net_socket_impl. */
#include "net_socket.h"
#include "plugin/net.h"

__attribute__((constructor)) static void net_socket_register_builtin(void) {
  net_builtin_register(&weft_net_socket_v11);
}
