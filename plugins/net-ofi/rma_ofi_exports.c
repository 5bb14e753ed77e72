/* libnccl-net-weft-ofi.so's one-sided tables (rma_ofi.h): ncclRmaPlugin_v15 (the
 * implementation) and _v14 (the same calls without option flags). No GIN table: GIN v13 is the
 * v13 shape of the same calls, which NCCL 2.30+ would not use from an external proxy plugin,
 * and GIN v14+ needs device code driving the NIC. Not part of weft_net_ofi_impl. */
#include "net_export.h"
#include "rma_ofi.h"

WEFT_NET_EXPORT const ncclRma_v15_t ncclRmaPlugin_v15 = {
    .name = "weft-ofi",
    .init = rma_ofi_init,
    .devices = rma_ofi_devices,
    .getProperties = rma_ofi_get_properties,
    .listen = rma_ofi_listen,
    .connect = rma_ofi_connect,
    .createContext = rma_ofi_create_context,
    .regMrSym = rma_ofi_reg,
    .regMrSymDmaBuf = rma_ofi_reg_dmabuf,
    .deregMrSym = rma_ofi_dereg,
    .destroyContext = rma_ofi_destroy_context,
    .closeColl = rma_ofi_close_coll,
    .closeListen = rma_ofi_close_listen,
    .iput = rma_ofi_iput,
    .iputSignal = rma_ofi_iput_signal,
    .iget = rma_ofi_iget,
    .iflush = rma_ofi_iflush,
    .test = rma_ofi_test,
    .rmaProgress = rma_ofi_progress,
    .queryLastError = rma_ofi_last_error,
    .finalize = rma_ofi_finalize,
};

static ncclResult_t v14_iput(void* ctx, int context, uint64_t so, void* smh, size_t size,
                             uint64_t dof, void* dmh, uint32_t rank, void** req) {
  return rma_ofi_iput(ctx, context, so, smh, size, dof, dmh, rank, 0, req);
}

static ncclResult_t v14_iput_signal(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                    uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                    void* sig_mh, uint64_t value, uint32_t op, bool strong,
                                    void** req) {
  return rma_ofi_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value,
                             op, strong, 0, req);
}

static ncclResult_t v14_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, void** req) {
  return rma_ofi_iget(ctx, context, r_off, r_mh, size, l_off, l_mh, rank, 0, req);
}

WEFT_NET_EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {
    .name = "weft-ofi",
    .init = rma_ofi_init,
    .devices = rma_ofi_devices,
    .getProperties = rma_ofi_get_properties,
    .listen = rma_ofi_listen,
    .connect = rma_ofi_connect,
    .createContext = rma_ofi_create_context,
    .regMrSym = rma_ofi_reg,
    .regMrSymDmaBuf = rma_ofi_reg_dmabuf,
    .deregMrSym = rma_ofi_dereg,
    .destroyContext = rma_ofi_destroy_context,
    .closeColl = rma_ofi_close_coll,
    .closeListen = rma_ofi_close_listen,
    .iput = v14_iput,
    .iputSignal = v14_iput_signal,
    .iget = v14_iget,
    .iflush = rma_ofi_iflush,
    .test = rma_ofi_test,
    .rmaProgress = rma_ofi_progress,
    .queryLastError = rma_ofi_last_error,
    .finalize = rma_ofi_finalize,
};
