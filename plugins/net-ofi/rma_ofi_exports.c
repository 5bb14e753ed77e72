/* libnccl-net-weft-ofi.so's one-sided tables (rma_ofi.h, built by plugins/common/rma_common.h):
 * ncclRmaPlugin_v15 (the implementation) and _v14 (the same calls without option flags). No GIN
 * table: GIN v13 is the v13 shape of the same calls, which NCCL 2.30+ would not use from an
 * external proxy plugin, and GIN v14+ needs device code driving the NIC. Not part of
 * weft_net_ofi_impl. */
#include "net_export.h"
#include "rma_common.h"
#include "rma_ofi.h"

WEFT_RMA_EXPORT_V15_V14(rma_ofi, "weft-ofi");
