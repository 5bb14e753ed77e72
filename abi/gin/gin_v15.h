/* GIN plugin ABI version 15 (NCCL 2.32). FROZEN (abi/README.md). NVIDIA publishes no header for
 * it (the 2.32.6 wheel ships none); the layout is read from the 2.32.6 library's v14 adapter,
 * which fills the v15 table from a v14 one: the same 17 entries in the same order; connect gains
 * a last argument, a pointer to a volatile 32-bit abort flag the plugin may poll while it waits
 * for peers; the config keeps v14's first six fields (the adapter gives a v14 plugin rankStride 1);
 * the properties gain the barrier preference (ncclGinBarrierOptions_t, an int at offset 4).
 * Layouts on LP64: ncclGin_v15_t 136 bytes, ncclGinConfig_v15_t 24 bytes,
 * ncclGinProperties_v15_t 8 bytes. */
#ifndef WEFT_ABI_GIN_V15_H
#define WEFT_ABI_GIN_V15_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "../net/net_v11.h"
#include "../net/net_v12.h"

/* Which barrier NCCL's device code should build for the backend (values are NCCL's). */
typedef enum {
  NCCL_GIN_BARRIER_DEFAULT = 0,          /* NCCL's default; may use a signal per rank */
  NCCL_GIN_BARRIER_SIGNAL_EFFICIENT = 1, /* prefer algorithms that use fewer signals */
} ncclGinBarrierOptions_t;

typedef struct {
  bool supportsStrongSignals;
  bool supportsVASignals;
  int barrierOptions; /* ncclGinBarrierOptions_t */
} ncclGinProperties_v15_t;

typedef struct {
  int nSignals;
  int nCounters;
  int nContexts;
  int queueDepth;
  int trafficClass;
  int backendVersion;
} ncclGinConfig_v15_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getGinProperties)(ncclGinProperties_v15_t* ginProps);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm, volatile uint32_t* abortFlag);
  ncclResult_t (*createContext)(void* collComm, ncclGinConfig_v15_t* config, void** ginCtx,
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
} ncclGin_v15_t;

#endif
