/* The socket plugin's v11 table and its per-communicator lifecycle: init makes a context
 * (comm id, traffic class, profFn, the connects still under way), finalize frees it. Devices
 * are found once per process at the first init. */
#include "net_socket.h"
#include "net_socket_internal.h"

#define NS_CTX_MAGIC 0x6e735f6374785f31ull

ncclResult_t net_socket_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                             ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  net_socket_set_logger(logger);
  if (ctx == NULL) {
    NS_WARN("NET/Socket: init: ctx is NULL");
    return ncclInternalError;
  }
  ncclResult_t res = net_socket_devices_init();
  if (res != ncclSuccess) return res;
  if (net_socket_ndevs() == 0) {
    NS_WARN("NET/Socket: no usable network interface");
    return ncclSystemError;
  }
  ns_ctx* c = weft_net_ctx_new(sizeof *c, NS_CTX_MAGIC, comm_id, config, prof,
                               net_socket_logger(), "NET/Socket");
  if (c == NULL) return ncclSystemError;
  *ctx = c;
  return ncclSuccess;
}

ns_ctx* net_socket_ctx_check(void* ctx, const char* fn) {
  return weft_net_ctx_check(ctx, NS_CTX_MAGIC, net_socket_logger(), "NET/Socket", fn);
}

ncclResult_t net_socket_finalize(void* ctx) {
  ns_ctx* c = net_socket_ctx_check(ctx, "finalize");
  if (c == NULL) return ncclInternalError;
  net_socket_pending_free_all(c);
  weft_net_ctx_free(c);
  return ncclSuccess;
}

/* Usage hints: the socket plugin sizes nothing by them, so they are accepted and ignored. */
ncclResult_t net_socket_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr) {
  (void)attr;
  return net_socket_ctx_check(ctx, "setNetAttr") ? ncclSuccess : ncclInternalError;
}

const ncclNet_v11_t weft_net_socket_v11 = WEFT_NET_V11_TABLE(net_socket, "Socket");
