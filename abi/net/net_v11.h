/* Net plugin ABI version 11, exported by plugins as ncclNetPlugin_v11. FROZEN: this file
 * describes a binary interface that shipped plugins are built against; it is never edited. A
 * later change to the interface goes into a new net_vN.h, and the core adapts older versions in
 * core/plugin/. Against v10: init runs once per communicator and returns a context that
 * listen, connect and finalize receive; the comm config moves from connect to init; new
 * finalize and setNetAttr; properties gain maxMultiRequestSize. Layout on LP64: ncclNet_v11_t
 * 176 bytes, ncclNetProperties_v11_t 112 bytes, ncclNetAttr_v11_t 44 bytes. */
#ifndef WEFT_ABI_NET_V11_H
#define WEFT_ABI_NET_V11_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "net_v7.h"

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;

#define NCCL_NET_MAX_DEVS_PER_NIC_V11 4

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V11];
} ncclNetVDeviceProps_v11_t;

#ifndef NCCL_NET_TRAFFIC_CLASS_UNDEF
#define NCCL_NET_TRAFFIC_CLASS_UNDEF -1
#endif

typedef struct {
  int trafficClass;
} ncclNetCommConfig_v11_t;

typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_v11_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize; /* requests one NCCL_NET_MULTI_REQUEST batch may hold */
} ncclNetProperties_v11_t;

/* Hints on how a communicator will use the network. A field left at NCCL_NET_ATTR_UNDEF
 * carries no hint. */
#define NCCL_NET_ATTR_UNDEF -1

typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

typedef struct {
  ncclNetCommAttr_v11_t sendCommAttr;
  ncclNetCommAttr_v11_t recvCommAttr;
  uint32_t op;    /* an ncclFunc_t */
  uint32_t algo;  /* an NCCL_ALGO_* index */
  uint32_t proto; /* an NCCL_PROTO_* index */
} ncclNetAttr_v11_t;

/* Initializer for ncclNetAttr_v11_t with every field unset. */
#define NCCL_NET_ATTR_INIT                                                                  \
  {                                                                                         \
    {NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF},   \
        {NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF}, \
        (uint32_t)NCCL_NET_ATTR_UNDEF, (uint32_t)NCCL_NET_ATTR_UNDEF,                       \
        (uint32_t)NCCL_NET_ATTR_UNDEF                                                       \
  }

typedef struct {
  const char* name;
  /* Called once per communicator; *ctx is handed to listen, connect, setNetAttr, finalize. */
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v11_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm,
                         ncclNetDeviceHandle_v11_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v11_t* props);
  /* Ends what init began for one communicator. */
  ncclResult_t (*finalize)(void* ctx);
  /* May be NULL: usage hints for the communicator of ctx. */
  ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_v11_t* netAttr);
} ncclNet_v11_t;

#endif
