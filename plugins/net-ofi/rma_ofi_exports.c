/* libnccl-net-weft-ofi.so's one-sided tables (rma_ofi.h, built by plugins/common/rma_common.h):
 * ncclRmaPlugin_v15 (the implementation), _v14 (the same calls without option flags), _v13 and
 * ncclGinPlugin_v13 (the v13 shape of the same calls: a GIN proxy device, what weft's gin/ and
 * NCCL 2.28-2.29's proxy GIN drive). No GIN v14+: that needs device code driving the NIC. Not
 * part of weft_net_ofi_impl. */
#include "net_export.h"
#include "rma_common.h"
#include "rma_ofi.h"

WEFT_RMA_EXPORT_V15_V14(rma_ofi, "weft-ofi");
WEFT_RMA_EXPORT_V13_GIN13(rma_ofi, "weft-ofi");
