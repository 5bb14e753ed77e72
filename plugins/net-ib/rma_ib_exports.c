/* libnccl-net-weft-ib.so's one-sided tables (rma_ib.h): ncclRmaPlugin_v15 (the implementation),
 * _v14 and _v13, and ncclGinPlugin_v13 (the same table as RMA v13: a GIN proxy device whose puts
 * the host issues; it has no device handle, so GPU code cannot drive it; GIN v14 and later move
 * data only from GPU code, which this plugin has none of). Not part of weft_net_ib_impl. */
#include <stddef.h>

#include "net_export.h"
#include "rma_ib.h"

WEFT_NET_EXPORT const ncclRma_v15_t ncclRmaPlugin_v15 = {
    "weft-ib",          rma_ib_init,          rma_ib_devices,        rma_ib_get_properties,
    rma_ib_listen,      rma_ib_connect,       rma_ib_create_context, rma_ib_reg,
    rma_ib_reg_dmabuf,  rma_ib_dereg,         rma_ib_destroy_context, rma_ib_close_coll,
    rma_ib_close_listen, rma_ib_iput,         rma_ib_iput_signal,    rma_ib_iget,
    rma_ib_iflush,      rma_ib_test,          rma_ib_progress,       rma_ib_last_error,
    rma_ib_finalize};

/* ---- v14: no optFlags ---- */

static ncclResult_t v14_iput(void* ctx, int context, uint64_t so, void* smh, size_t size,
                             uint64_t dof, void* dmh, uint32_t rank, void** req) {
  return rma_ib_iput(ctx, context, so, smh, size, dof, dmh, rank, 0, req);
}

static ncclResult_t v14_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, bool strong,
                                    void** req) {
  return rma_ib_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value,
                            op, strong, 0, req);
}

static ncclResult_t v14_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, void** req) {
  return rma_ib_iget(ctx, context, r_off, r_mh, size, l_off, l_mh, rank, 0, req);
}

WEFT_NET_EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {
    "weft-ib",          rma_ib_init,          rma_ib_devices,        rma_ib_get_properties,
    rma_ib_listen,      rma_ib_connect,       rma_ib_create_context, rma_ib_reg,
    rma_ib_reg_dmabuf,  rma_ib_dereg,         rma_ib_destroy_context, rma_ib_close_coll,
    rma_ib_close_listen, v14_iput,            v14_iput_signal,       v14_iget,
    rma_ib_iflush,      rma_ib_test,          rma_ib_progress,       rma_ib_last_error,
    rma_ib_finalize};

/* ---- v13 (and GIN v13): GIN's config and handles ---- */

static ncclResult_t v13_create_context(void* coll, ncclGinConfig_v13_t* config, void** ctx,
                                       ncclNetDeviceHandle_v11_t** dev) {
  if (config == NULL) {
    IB_WARN("RMA/IB: createContext: config is NULL");
    return ncclInvalidArgument;
  }
  ncclRmaConfig_v15_t c = {.nContexts = config->nContexts, .trafficClass = config->trafficClass};
  if (dev) *dev = NULL; /* a proxy device: nothing for GPU code */
  return rma_ib_create_context(coll, &c, ctx);
}

static ncclResult_t v13_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                            void** mh, void** gin_handle) {
  ncclResult_t r = rma_ib_reg(coll, data, size, type, flags, mh);
  if (r == ncclSuccess && gin_handle) *gin_handle = NULL;
  return r;
}

static ncclResult_t v13_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t off,
                                   int fd, uint64_t flags, void** mh, void** gin_handle) {
  ncclResult_t r = rma_ib_reg_dmabuf(coll, data, size, type, off, fd, flags, mh);
  if (r == ncclSuccess && gin_handle) *gin_handle = NULL;
  return r;
}

static ncclResult_t v13_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, void** req) {
  return rma_ib_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value,
                            op, true, 0, req);
}

WEFT_NET_EXPORT const ncclRma_v13_t ncclRmaPlugin_v13 = {
    "weft-ib",          rma_ib_init,          rma_ib_devices,        rma_ib_get_properties,
    rma_ib_listen,      rma_ib_connect,       v13_create_context,    v13_reg,
    v13_reg_dmabuf,     rma_ib_dereg,         rma_ib_destroy_context, rma_ib_close_coll,
    rma_ib_close_listen, v14_iput,            v13_iput_signal,       v14_iget,
    rma_ib_iflush,      rma_ib_test,          rma_ib_progress,       rma_ib_last_error,
    rma_ib_finalize};

WEFT_NET_EXPORT const ncclGin_v13_t ncclGinPlugin_v13 = {
    "weft-ib",          rma_ib_init,          rma_ib_devices,        rma_ib_get_properties,
    rma_ib_listen,      rma_ib_connect,       v13_create_context,    v13_reg,
    v13_reg_dmabuf,     rma_ib_dereg,         rma_ib_destroy_context, rma_ib_close_coll,
    rma_ib_close_listen, v14_iput,            v13_iput_signal,       v14_iget,
    rma_ib_iflush,      rma_ib_test,          rma_ib_progress,       rma_ib_last_error,
    rma_ib_finalize};
