/* The socket net as the core's built-in net: linked into libweft.so and libnccl.so.2 (not into
 * the plugin .so), this constructor hands weft_net_socket_v11 to core/plugin at load, and the
 * socket net's one-sided calls (rma_socket_*.c) as an RMA v15 table of its own, hidden, which
 * the device API's GIN proxy uses where no RMA plugin is loaded (core/gin/gin_comm.c). The core
 * names no plugin (tests/layering): the library target chooses its built-in net here. The
 * strong references pull the tables' code out of the static weft_net_socket_impl. */
#include "net_socket.h"
#include "plugin/net.h"
#include "rma_common.h"
#include "rma_socket.h"

static const ncclRma_v15_t builtin_rma = {
    "weft-socket", WEFT_RMA_CALLS_HEAD(rma_socket), rma_socket_create_context, rma_socket_reg,
    rma_socket_reg_dmabuf, WEFT_RMA_CALLS_MID(rma_socket), rma_socket_iput,
    rma_socket_iput_signal, rma_socket_iget, WEFT_RMA_CALLS_TAIL(rma_socket)};

__attribute__((constructor)) static void net_socket_register_builtin(void) {
  net_builtin_register(&weft_net_socket_v11);
  net_builtin_rma_register(&builtin_rma);
}
