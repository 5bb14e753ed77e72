/* GIN plugin ABI version 13 (NCCL 2.30, libnccl-gin*.so or the net plugin's library; also the
 * shape of RMA v13). FROZEN (abi/README.md). Against v12: connect is back to v11's arguments and
 * createContext takes a config struct; puts are issued on a context (the ginCtx createContext
 * returned, and a context index below config.nContexts) instead of the group; iget and iflush
 * are added; properties are net v12's. Layouts on LP64: ncclGin_v13_t 168 bytes,
 * ncclGinConfig_v13_t 20 bytes. */
#ifndef WEFT_ABI_GIN_V13_H
#define WEFT_ABI_GIN_V13_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "../net/net_v11.h"
#include "../net/net_v12.h"

typedef struct {
  int nSignals;
  int nCounters;
  int nContexts;
  int queueDepth;
  int trafficClass;
} ncclGinConfig_v13_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*createContext)(void* collComm, ncclGinConfig_v13_t* config, void** ginCtx,
                                ncclNetDeviceHandle_v11_t** devHandle);
  ncclResult_t (*regMrSym)(void* collComm, void* data, size_t size, int type, uint64_t mrFlags,
                           void** mhandle, void** ginHandle);
  ncclResult_t (*regMrSymDmaBuf)(void* collComm, void* data, size_t size, int type,
                                 uint64_t offset, int fd, uint64_t mrFlags, void** mhandle,
                                 void** ginHandle);
  ncclResult_t (*deregMrSym)(void* collComm, void* mhandle);
  ncclResult_t (*destroyContext)(void* ginCtx);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*iput)(void* ginCtx, int context, uint64_t srcOff, void* srcMhandle, size_t size,
                       uint64_t dstOff, void* dstMhandle, uint32_t rank, void** request);
  ncclResult_t (*iputSignal)(void* ginCtx, int context, uint64_t srcOff, void* srcMhandle,
                             size_t size, uint64_t dstOff, void* dstMhandle, uint32_t rank,
                             uint64_t signalOff, void* signalMhandle, uint64_t signalValue,
                             uint32_t signalOp, void** request);
  ncclResult_t (*iget)(void* ginCtx, int context, uint64_t remoteOff, void* remoteMhandle,
                       size_t size, uint64_t localOff, void* localMhandle, uint32_t rank,
                       void** request);
  ncclResult_t (*iflush)(void* ginCtx, int context, void* mhandle, uint32_t rank, void** request);
  ncclResult_t (*test)(void* collComm, void* request, int* done);
  ncclResult_t (*ginProgress)(void* ginCtx);
  ncclResult_t (*queryLastError)(void* ginCtx, bool* hasError);
  ncclResult_t (*finalize)(void* ctx);
} ncclGin_v13_t;

#endif
