/* libnccl-net-weft-ib.so's one-sided tables (rma_ib.h, built by plugins/common/rma_common.h):
 * ncclRmaPlugin_v15 (the implementation), _v14 and _v13, and ncclGinPlugin_v13 (the same table as
 * RMA v13: a GIN proxy device whose puts the host issues; it has no device handle, so GPU code
 * cannot drive it; GIN v14 and later move data only from GPU code, which this plugin has none
 * of). Not part of weft_net_ib_impl. */
#include "net_export.h"
#include "rma_common.h"
#include "rma_ib.h"

WEFT_RMA_EXPORT_V15_V14(rma_ib, "weft-ib");
WEFT_RMA_EXPORT_V13_GIN13(rma_ib, "weft-ib");
