/* The one-sided kernels' launchers (kernel_rma.cu; rma/ calls them through device_exec.c):
 * add one to a peer's signal counter for this rank (as mapped here), after everything before it
 * on stream; and wait until each peer[i]'s counter in sig reaches consumed[peer[i]] + count[i]
 * (peers distinct), then consume it. */
#ifndef WEFT_DEVICE_RMA_H
#define WEFT_DEVICE_RMA_H

#include <stdint.h>

#include "device/device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_DEV_RMA_WAIT_MAX 32
typedef struct {
  int32_t n;
  int32_t peer[WEFT_DEV_RMA_WAIT_MAX];
  uint64_t count[WEFT_DEV_RMA_WAIT_MAX];
} weft_dev_rma_wait_args;
int weft_dev_rma_signal(uint64_t* slot, void* stream);
/* who: a host-mapped word where the first wait to give up records its peer plus one. */
int weft_dev_rma_wait(const weft_dev_comm* c, const uint64_t* sig, uint64_t* consumed,
                      const weft_dev_rma_wait_args* a, uint32_t* who, void* stream);

#ifdef __cplusplus
}
#endif

#endif
