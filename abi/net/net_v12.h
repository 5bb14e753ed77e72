/* Net plugin ABI version 12 (NCCL 2.30), exported by plugins as ncclNetPlugin_v12. FROZEN: this
 * file describes a binary interface that shipped plugins are built against; it is never edited.
 * A later change to the interface goes into a new net_vN.h, and the core adapts older versions
 * in core/plugin/. Against v11: a virtual device may fuse up to 8 devices (was 4), and the
 * properties end with the device's rail and plane ids (NCCL_NET_ID_UNDEF when the plugin does
 * not know them); the calls are unchanged. Layout on LP64: ncclNet_v12_t 176 bytes,
 * ncclNetProperties_v12_t 128 bytes, ncclNetAttr_v12_t 44 bytes. */
#ifndef WEFT_ABI_NET_V12_H
#define WEFT_ABI_NET_V12_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "net_v7.h"

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v12_t;

#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

#ifndef NCCL_NET_TRAFFIC_CLASS_UNDEF
#define NCCL_NET_TRAFFIC_CLASS_UNDEF -1
#endif

typedef struct {
  int trafficClass;
} ncclNetCommConfig_v12_t;

/* railId / planeId value for "not known". */
#define NCCL_NET_ID_UNDEF -1

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
  ncclNetVDeviceProps_v12_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;  /* the rail this device sits on, or NCCL_NET_ID_UNDEF */
  int16_t planeId; /* the network plane of this device, or NCCL_NET_ID_UNDEF */
} ncclNetProperties_v12_t;

#ifndef NCCL_NET_ATTR_UNDEF
#define NCCL_NET_ATTR_UNDEF -1
#endif

typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} ncclNetCommAttr_v12_t;

typedef struct {
  ncclNetCommAttr_v12_t sendCommAttr;
  ncclNetCommAttr_v12_t recvCommAttr;
  uint32_t op;    /* an ncclFunc_t */
  uint32_t algo;  /* an NCCL_ALGO_* index */
  uint32_t proto; /* an NCCL_PROTO_* index */
} ncclNetAttr_v12_t;

/* The calls are v11's, with the v12 property and virtual-device types. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v12_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm,
                         ncclNetDeviceHandle_v12_t** recvDevComm);
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
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v12_t* props);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_v12_t* netAttr);
} ncclNet_v12_t;

#endif
