/* What libnccl-net-example.so exports: ncclNetPlugin_v11, the plugin's own table (NCCL 2.28+,
 * weft), and — through weft::net_export, linked whole — ncclNetPlugin_v10 … _v6 adapted from it
 * (NCCL 2.18 … 2.27); and the one-sided tables below (RMA v15/v14/v13, GIN v13). The export
 * library asks for the two hidden objects below: the v11 table it adapts with the name of the
 * tables, and three helpers it cannot derive from the table. */
#include <weft_net_export.h>

#include "example_net.h"
#include "example_rma.h"

const char weft_net_export_name[] = EX_NAME;

const struct weft_net_export_target weft_net_export_target = {
    .net = &ncclNetPlugin_v11,
    .set_logger = ex_set_logger, /* older inits each hand over a logger: keep the latest */
    .logger = ex_logger,
    .connect_tc = ex_connect_tc, /* v10 passes the traffic class per connect */
};

WEFT_NET_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = EX_NAME,
    .init = ex_init,
    .devices = ex_devices,
    .getProperties = ex_get_properties,
    .listen = ex_listen,
    .connect = ex_connect,
    .accept = ex_accept,
    .regMr = ex_reg_mr,
    .regMrDmaBuf = ex_reg_mr_dmabuf,
    .deregMr = ex_dereg_mr,
    .isend = ex_isend,
    .irecv = ex_irecv,
    .iflush = ex_iflush,
    .test = ex_test,
    .closeSend = ex_close_send,
    .closeRecv = ex_close_recv,
    .closeListen = ex_close_listen,
    .getDeviceMr = NULL,   /* no device offload */
    .irecvConsumed = NULL, /* idem */
    .makeVDevice = NULL,   /* no NIC fusion */
    .finalize = ex_finalize,
    .setNetAttr = ex_set_net_attr,
};

/* ---- One-sided tables (example_rma.h): RMA v15 is the plugin's own; v14, v13 and GIN v13 are
 * thin adapters over it. NCCL 2.30+ loads RMA through NCCL_RMA_PLUGIN, the GIN plugin's library
 * or this (the net) library; GIN v13 here is a proxy device (the host issues its puts): NCCL
 * 2.30+ runs its own proxy instead of an external one, weft-conformance gin still judges it.
 * GIN v14/v15 move data only from GPU code, which needs a NIC the GPU can ring: not here. ---- */

WEFT_NET_EXPORT const ncclRma_v15_t ncclRmaPlugin_v15 = {
    .name = EX_NAME,
    .init = exr_init,
    .devices = exr_devices,
    .getProperties = exr_get_properties,
    .listen = exr_listen,
    .connect = exr_connect,
    .createContext = exr_create_context,
    .regMrSym = exr_reg,
    .regMrSymDmaBuf = exr_reg_dmabuf,
    .deregMrSym = exr_dereg,
    .destroyContext = exr_destroy_context,
    .closeColl = exr_close_coll,
    .closeListen = exr_close_listen,
    .iput = exr_iput,
    .iputSignal = exr_iput_signal,
    .iget = exr_iget,
    .iflush = exr_iflush,
    .test = exr_test,
    .rmaProgress = exr_progress,
    .queryLastError = exr_last_error,
    .finalize = exr_finalize,
};

/* v14: the same calls without optFlags. */
static ncclResult_t v14_iput(void* ctx, int context, uint64_t so, void* smh, size_t size,
                             uint64_t dof, void* dmh, uint32_t rank, void** req) {
  return exr_iput(ctx, context, so, smh, size, dof, dmh, rank, 0, req);
}

static ncclResult_t v14_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, bool strong,
                                    void** req) {
  return exr_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, op,
                         strong, 0, req);
}

static ncclResult_t v14_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, void** req) {
  return exr_iget(ctx, context, r_off, r_mh, size, l_off, l_mh, rank, 0, req);
}

WEFT_NET_EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {
    .name = EX_NAME,
    .init = exr_init,
    .devices = exr_devices,
    .getProperties = exr_get_properties,
    .listen = exr_listen,
    .connect = exr_connect,
    .createContext = exr_create_context, /* v14's config is v15's */
    .regMrSym = exr_reg,
    .regMrSymDmaBuf = exr_reg_dmabuf,
    .deregMrSym = exr_dereg,
    .destroyContext = exr_destroy_context,
    .closeColl = exr_close_coll,
    .closeListen = exr_close_listen,
    .iput = v14_iput,
    .iputSignal = v14_iput_signal,
    .iget = v14_iget,
    .iflush = exr_iflush,
    .test = exr_test,
    .rmaProgress = exr_progress,
    .queryLastError = exr_last_error,
    .finalize = exr_finalize,
};

/* v13 (RMA and GIN): GIN's config, a device handle (none: a proxy device) and a GIN handle per
 * registration (none), and every signal strong. */
static ncclResult_t v13_create_context(void* coll, ncclGinConfig_v13_t* config, void** ctx,
                                       ncclNetDeviceHandle_v11_t** dev) {
  if (config == NULL) return ncclInvalidArgument;
  ncclRmaConfig_v15_t c = {.nContexts = config->nContexts, .trafficClass = config->trafficClass,
                           .rankStride = 1};
  if (dev) *dev = NULL;
  return exr_create_context(coll, &c, ctx);
}

static ncclResult_t v13_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                            void** mh, void** gin_handle) {
  if (gin_handle) *gin_handle = NULL;
  return exr_reg(coll, data, size, type, flags, mh);
}

static ncclResult_t v13_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t off,
                                   int fd, uint64_t flags, void** mh, void** gin_handle) {
  if (gin_handle) *gin_handle = NULL;
  return exr_reg_dmabuf(coll, data, size, type, off, fd, flags, mh);
}

static ncclResult_t v13_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, void** req) {
  return exr_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, op,
                         true, 0, req);
}

#define EX_V13_TABLE                                                                             \
  {                                                                                              \
    .name = EX_NAME, .init = exr_init, .devices = exr_devices,                                   \
    .getProperties = exr_get_properties, .listen = exr_listen, .connect = exr_connect,           \
    .createContext = v13_create_context, .regMrSym = v13_reg, .regMrSymDmaBuf = v13_reg_dmabuf,  \
    .deregMrSym = exr_dereg, .destroyContext = exr_destroy_context, .closeColl = exr_close_coll, \
    .closeListen = exr_close_listen, .iput = v14_iput, .iputSignal = v13_iput_signal,            \
    .iget = v14_iget, .iflush = exr_iflush, .test = exr_test, .ginProgress = exr_progress,       \
    .queryLastError = exr_last_error, .finalize = exr_finalize                                   \
  }

WEFT_NET_EXPORT const ncclRma_v13_t ncclRmaPlugin_v13 = EX_V13_TABLE;
WEFT_NET_EXPORT const ncclGin_v13_t ncclGinPlugin_v13 = EX_V13_TABLE;
