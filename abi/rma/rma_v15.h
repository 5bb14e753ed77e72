/* RMA plugin ABI version 15 (NCCL 2.32). FROZEN (abi/README.md). Against v14: iput, iputSignal
 * and iget take option flags (ncclRmaOptFlags) before the request; the config is v14's.
 * Layout on LP64: ncclRma_v15_t 168 bytes. */
#ifndef WEFT_ABI_RMA_V15_H
#define WEFT_ABI_RMA_V15_H

#include "rma_v14.h"

typedef ncclRmaConfig_v14_t ncclRmaConfig_v15_t;

/* optFlags bits (values are NCCL's). AggregateRequests: the caller will only test the last
 * request of a batch, so the plugin may complete the earlier ones together with it. */
enum ncclRmaOptFlags {
  ncclRmaOptFlagsDefault = 0,
  ncclRmaOptFlagsAggregateRequests = (1 << 0),
};

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*createContext)(void* collComm, ncclRmaConfig_v15_t* config, void** rmaCtx);
  ncclResult_t (*regMrSym)(void* collComm, void* data, size_t size, int type, uint64_t mrFlags,
                           void** mhandle);
  ncclResult_t (*regMrSymDmaBuf)(void* collComm, void* data, size_t size, int type,
                                 uint64_t offset, int fd, uint64_t mrFlags, void** mhandle);
  ncclResult_t (*deregMrSym)(void* collComm, void* mhandle);
  ncclResult_t (*destroyContext)(void* rmaCtx);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*iput)(void* rmaCtx, int context, uint64_t srcOff, void* srcMhandle, size_t size,
                       uint64_t dstOff, void* dstMhandle, uint32_t rank, uint32_t optFlags,
                       void** request);
  ncclResult_t (*iputSignal)(void* rmaCtx, int context, uint64_t srcOff, void* srcMhandle,
                             size_t size, uint64_t dstOff, void* dstMhandle, uint32_t rank,
                             uint64_t signalOff, void* signalMhandle, uint64_t signalValue,
                             uint32_t signalOp, bool isStrongSignal, uint32_t optFlags,
                             void** request);
  ncclResult_t (*iget)(void* rmaCtx, int context, uint64_t remoteOff, void* remoteMhandle,
                       size_t size, uint64_t localOff, void* localMhandle, uint32_t rank,
                       uint32_t optFlags, void** request);
  ncclResult_t (*iflush)(void* rmaCtx, int context, void* mhandle, uint32_t rank, void** request);
  ncclResult_t (*test)(void* collComm, void* request, int* done);
  ncclResult_t (*rmaProgress)(void* rmaCtx);
  ncclResult_t (*queryLastError)(void* rmaCtx, bool* hasError);
  ncclResult_t (*finalize)(void* ctx);
} ncclRma_v15_t;

#endif
