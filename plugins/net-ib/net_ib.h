/* The InfiniBand/RoCE net plugin's v11 table, for code that links the implementation
 * (weft_net_ib_impl) rather than loading libnccl-net-weft-ib.so: tests. Hidden. */
#ifndef WEFT_NET_IB_H
#define WEFT_NET_IB_H

#include "nccl_net.h"

extern const ncclNet_v11_t weft_net_ib_v11;

#endif
