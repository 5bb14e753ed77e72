/* The comparison table expanded against weft's abi/nccl.h. */
#include "nccl.h"

#define ABI_TABLE_FN abi_table_weft
#include "abi_table.h"
