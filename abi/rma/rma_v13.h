/* RMA plugin ABI version 13 (NCCL 2.30): the GIN v13 table under another name. NCCL looks up
 * ncclRmaPlugin_v13, then ncclGinPlugin_v13, in an RMA library. FROZEN (abi/README.md). In v13
 * every signal is strong (orders all earlier puts of its context to that rank). */
#ifndef WEFT_ABI_RMA_V13_H
#define WEFT_ABI_RMA_V13_H

#include "../gin/gin_v13.h"

typedef ncclGin_v13_t ncclRma_v13_t;

#endif
