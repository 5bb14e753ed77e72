/* GIN plugin ABI version 11 (NCCL 2.28: looked up as ncclGinPlugin_v11 inside the net plugin's
 * library; 2.29 also in libnccl-gin*.so). FROZEN (abi/README.md). GPU-initiated networking: a
 * group of nranks is formed from every rank's listen handle (connect), memory is registered
 * collectively (regMrSym: every rank, same order), and a context carries signals and counters.
 * v11 also has host-initiated one-sided puts on the group (iput, iputSignal, test), used by the
 * proxy backend. One connection and one context per group. Layout on LP64: 152 bytes. */
#ifndef WEFT_ABI_GIN_V11_H
#define WEFT_ABI_GIN_V11_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "../net/net_v11.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*createContext)(void* collComm, int nSignals, int nCounters, void** ginCtx,
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
  /* Host-initiated puts: offsets are into the registrations; rank is the target in the group. */
  ncclResult_t (*iput)(void* collComm, uint64_t srcOff, void* srcMhandle, size_t size,
                       uint64_t dstOff, void* dstMhandle, uint32_t rank, void** request);
  ncclResult_t (*iputSignal)(void* collComm, uint64_t srcOff, void* srcMhandle, size_t size,
                             uint64_t dstOff, void* dstMhandle, uint32_t rank, uint64_t signalOff,
                             void* signalMhandle, uint64_t signalValue, uint32_t signalOp,
                             void** request);
  ncclResult_t (*test)(void* collComm, void* request, int* done);
  ncclResult_t (*ginProgress)(void* collComm);
  ncclResult_t (*queryLastError)(void* ginCtx, bool* hasError);
  ncclResult_t (*finalize)(void* ctx);
} ncclGin_v11_t;

#endif
