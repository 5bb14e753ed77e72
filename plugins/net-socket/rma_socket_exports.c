/* libnccl-net-weft-socket.so's one-sided tables (rma_socket.h): ncclRmaPlugin_v15 (the
 * implementation), _v14 and _v13, and ncclGinPlugin_v13 (the same table as RMA v13: a GIN proxy
 * device whose puts the host issues; it has no device handle, so GPU code cannot drive it; GIN
 * v14 and later move data only from GPU code, which a TCP socket cannot offer). Not part of the
 * built-in net: libweft exports none of this. */
#include <stddef.h>

#include "net_export.h"
#include "rma_socket.h"

WEFT_NET_EXPORT const ncclRma_v15_t ncclRmaPlugin_v15 = {
    "weft-socket",        rma_socket_init,          rma_socket_devices,
    rma_socket_get_properties, rma_socket_listen,   rma_socket_connect,
    rma_socket_create_context, rma_socket_reg,      rma_socket_reg_dmabuf,
    rma_socket_dereg,     rma_socket_destroy_context, rma_socket_close_coll,
    rma_socket_close_listen, rma_socket_iput,       rma_socket_iput_signal,
    rma_socket_iget,      rma_socket_iflush,        rma_socket_test,
    rma_socket_progress,  rma_socket_last_error,    rma_socket_finalize};

/* ---- v14: no optFlags ---- */

static ncclResult_t v14_iput(void* ctx, int context, uint64_t so, void* smh, size_t size,
                             uint64_t dof, void* dmh, uint32_t rank, void** req) {
  return rma_socket_iput(ctx, context, so, smh, size, dof, dmh, rank, 0, req);
}

static ncclResult_t v14_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, bool strong,
                                    void** req) {
  return rma_socket_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh,
                                value, op, strong, 0, req);
}

static ncclResult_t v14_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, void** req) {
  return rma_socket_iget(ctx, context, r_off, r_mh, size, l_off, l_mh, rank, 0, req);
}

WEFT_NET_EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {
    "weft-socket",        rma_socket_init,          rma_socket_devices,
    rma_socket_get_properties, rma_socket_listen,   rma_socket_connect,
    rma_socket_create_context, rma_socket_reg,      rma_socket_reg_dmabuf,
    rma_socket_dereg,     rma_socket_destroy_context, rma_socket_close_coll,
    rma_socket_close_listen, v14_iput,              v14_iput_signal,
    v14_iget,             rma_socket_iflush,        rma_socket_test,
    rma_socket_progress,  rma_socket_last_error,    rma_socket_finalize};

/* ---- v13 (and GIN v13): GIN's config and handles ---- */

static ncclResult_t v13_create_context(void* coll, ncclGinConfig_v13_t* config, void** ctx,
                                       ncclNetDeviceHandle_v11_t** dev) {
  if (config == NULL) return ncclInvalidArgument;
  ncclRmaConfig_v15_t c = {.nContexts = config->nContexts, .trafficClass = config->trafficClass};
  if (dev) *dev = NULL; /* a proxy device: nothing for GPU code */
  return rma_socket_create_context(coll, &c, ctx);
}

static ncclResult_t v13_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                            void** mh, void** gin_handle) {
  ncclResult_t r = rma_socket_reg(coll, data, size, type, flags, mh);
  if (r == ncclSuccess && gin_handle) *gin_handle = NULL;
  return r;
}

static ncclResult_t v13_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t off,
                                   int fd, uint64_t flags, void** mh, void** gin_handle) {
  (void)gin_handle;
  return rma_socket_reg_dmabuf(coll, data, size, type, off, fd, flags, mh);
}

static ncclResult_t v13_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, void** req) {
  return rma_socket_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh,
                                value, op, true, 0, req);
}

WEFT_NET_EXPORT const ncclRma_v13_t ncclRmaPlugin_v13 = {
    "weft-socket",        rma_socket_init,          rma_socket_devices,
    rma_socket_get_properties, rma_socket_listen,   rma_socket_connect,
    v13_create_context,   v13_reg,                  v13_reg_dmabuf,
    rma_socket_dereg,     rma_socket_destroy_context, rma_socket_close_coll,
    rma_socket_close_listen, v14_iput,              v13_iput_signal,
    v14_iget,             rma_socket_iflush,        rma_socket_test,
    rma_socket_progress,  rma_socket_last_error,    rma_socket_finalize};

WEFT_NET_EXPORT const ncclGin_v13_t ncclGinPlugin_v13 = {
    "weft-socket",        rma_socket_init,          rma_socket_devices,
    rma_socket_get_properties, rma_socket_listen,   rma_socket_connect,
    v13_create_context,   v13_reg,                  v13_reg_dmabuf,
    rma_socket_dereg,     rma_socket_destroy_context, rma_socket_close_coll,
    rma_socket_close_listen, v14_iput,              v13_iput_signal,
    v14_iget,             rma_socket_iflush,        rma_socket_test,
    rma_socket_progress,  rma_socket_last_error,    rma_socket_finalize};
