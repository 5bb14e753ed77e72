/* CollNet plugin ABI version 7 (ncclCollNetPlugin_v7, looked up in the net plugin's library,
 * never in a library of its own): in-network reductions over a group formed from every rank's
 * listen handle. FROZEN (abi/README.md). as v6; properties are net v7's.
 * test reports the bytes received in *size. Layout on LP64: 120 bytes. */
#ifndef WEFT_ABI_COLLNET_V7_H
#define WEFT_ABI_COLLNET_V7_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "../net/net_v7.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported);
  ncclResult_t (*regMr)(void* collComm, void* data, int size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type,
                              uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* collComm, void* mhandle);
  ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, int count,
                             ncclDataType_t dataType, ncclRedOp_t redOp, void* sendMhandle,
                             void* recvMhandle, void** request);
  ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
} ncclCollNet_v7_t;

#endif
