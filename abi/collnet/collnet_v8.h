/* CollNet plugin ABI version 8 (ncclCollNetPlugin_v8, looked up in the net plugin's library,
 * never in a library of its own): in-network reductions over a group formed from every rank's
 * listen handle. FROZEN (abi/README.md). regMr takes a size_t; iallgather and ireducescatter are added, with scatter-gather lists (ncclNetSGE_v8_t, 32-bit sizes).
 * test reports the bytes received in *size. Layout on LP64: 136 bytes. */
#ifndef WEFT_ABI_COLLNET_V8_H
#define WEFT_ABI_COLLNET_V8_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "../net/net_v8.h"

typedef struct {
  void* mhandle;
  void* address;
  uint32_t size;
} ncclNetSGE_v8_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported);
  ncclResult_t (*regMr)(void* collComm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type,
                              uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* collComm, void* mhandle);
  ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, int count,
                             ncclDataType_t dataType, ncclRedOp_t redOp, void* sendMhandle,
                             void* recvMhandle, void** request);
  ncclResult_t (*iallgather)(void* collComm, void* sendData, int nRecvParts,
                             ncclNetSGE_v8_t* recvParts, size_t bytesPerRank,
                             size_t windowOffset, size_t windowBytes, void* sendMhandle,
                             void** request);
  ncclResult_t (*ireducescatter)(void* collComm, int nSendParts, ncclNetSGE_v8_t* sendParts,
                                 void* recvData, size_t bytesPerRank, size_t windowOffset,
                                 size_t windowBytes, ncclDataType_t dataType,
                                 ncclRedOp_t redOp, void* recvMhandle, void** request);
  ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
} ncclCollNet_v8_t;

#endif
