/* GIN plugin ABI version 14 (NCCL 2.30). FROZEN (abi/README.md). Against v13: the host-initiated
 * data calls (iput, iputSignal, iget, iflush, test) are gone (they live in the RMA table now: a
 * v14 GIN plugin moves data only from GPU code, through the device handle createContext
 * returns); getGinProperties is added; the config gains backendVersion and rankStride. Layouts on
 * LP64: ncclGin_v14_t 136 bytes, ncclGinConfig_v14_t 28 bytes, ncclGinProperties_v14_t 2 bytes. */
#ifndef WEFT_ABI_GIN_V14_H
#define WEFT_ABI_GIN_V14_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "../net/net_v11.h"
#include "../net/net_v12.h"

typedef struct {
  bool supportsStrongSignals; /* a signal orders every earlier put of the context, not only its own */
  bool supportsVASignals;     /* signals may address memory by virtual address */
} ncclGinProperties_v14_t;

typedef struct {
  int nSignals;
  int nCounters;
  int nContexts;
  int queueDepth;
  int trafficClass;
  int backendVersion;
  int rankStride;
} ncclGinConfig_v14_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getGinProperties)(ncclGinProperties_v14_t* ginProps);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*createContext)(void* collComm, ncclGinConfig_v14_t* config, void** ginCtx,
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
  ncclResult_t (*ginProgress)(void* ginCtx);
  ncclResult_t (*queryLastError)(void* ginCtx, bool* hasError);
  ncclResult_t (*finalize)(void* ctx);
} ncclGin_v14_t;

#endif
