/* RMA plugin ABI version 14 (NCCL 2.30, NCCL_RMA_PLUGIN / libnccl-rma*.so, or the GIN or net
 * plugin's library): host-initiated one-sided operations on a group. FROZEN (abi/README.md).
 * Against v13: no device handle and no ginHandle; createContext takes ncclRmaConfig_v14_t;
 * iputSignal says whether the signal must be strong; the progress call is rmaProgress.
 * Layouts on LP64: ncclRma_v14_t 168 bytes, ncclRmaConfig_v14_t 12 bytes. */
#ifndef WEFT_ABI_RMA_V14_H
#define WEFT_ABI_RMA_V14_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "../net/net_v12.h"

typedef struct {
  int nContexts;
  int trafficClass;
  int rankStride;
} ncclRmaConfig_v14_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*createContext)(void* collComm, ncclRmaConfig_v14_t* config, void** rmaCtx);
  ncclResult_t (*regMrSym)(void* collComm, void* data, size_t size, int type, uint64_t mrFlags,
                           void** mhandle);
  ncclResult_t (*regMrSymDmaBuf)(void* collComm, void* data, size_t size, int type,
                                 uint64_t offset, int fd, uint64_t mrFlags, void** mhandle);
  ncclResult_t (*deregMrSym)(void* collComm, void* mhandle);
  ncclResult_t (*destroyContext)(void* rmaCtx);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*iput)(void* rmaCtx, int context, uint64_t srcOff, void* srcMhandle, size_t size,
                       uint64_t dstOff, void* dstMhandle, uint32_t rank, void** request);
  ncclResult_t (*iputSignal)(void* rmaCtx, int context, uint64_t srcOff, void* srcMhandle,
                             size_t size, uint64_t dstOff, void* dstMhandle, uint32_t rank,
                             uint64_t signalOff, void* signalMhandle, uint64_t signalValue,
                             uint32_t signalOp, bool isStrongSignal, void** request);
  ncclResult_t (*iget)(void* rmaCtx, int context, uint64_t remoteOff, void* remoteMhandle,
                       size_t size, uint64_t localOff, void* localMhandle, uint32_t rank,
                       void** request);
  ncclResult_t (*iflush)(void* rmaCtx, int context, void* mhandle, uint32_t rank, void** request);
  ncclResult_t (*test)(void* collComm, void* request, int* done);
  ncclResult_t (*rmaProgress)(void* rmaCtx);
  ncclResult_t (*queryLastError)(void* rmaCtx, bool* hasError);
  ncclResult_t (*finalize)(void* ctx);
} ncclRma_v14_t;

#endif
