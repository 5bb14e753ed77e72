/* Net plugin ABI version 10, exported by plugins as ncclNetPlugin_v10. FROZEN: this file
 * describes a binary interface that shipped plugins are built against; it is never edited. A
 * later change to the interface goes into a new net_vN.h, and the core adapts older versions in
 * core/plugin/. Against v9: init receives a profiler callback; connect receives a per-comm
 * config (traffic class); isend/irecv carry profiler handles. Layout on LP64: ncclNet_v10_t
 * 160 bytes, ncclNetProperties_v10_t 104 bytes. */
#ifndef WEFT_ABI_NET_V10_H
#define WEFT_ABI_NET_V10_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "net_v7.h"

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v10_t;

#define NCCL_NET_MAX_DEVS_PER_NIC_V10 4

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V10];
} ncclNetVDeviceProps_v10_t;

/* trafficClass value meaning "none requested". */
#ifndef NCCL_NET_TRAFFIC_CLASS_UNDEF
#define NCCL_NET_TRAFFIC_CLASS_UNDEF -1
#endif

typedef struct {
  int trafficClass; /* from ncclConfig_t.trafficClass, or NCCL_NET_TRAFFIC_CLASS_UNDEF */
} ncclNetCommConfig_v10_t;

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
  ncclNetVDeviceProps_v10_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
} ncclNetProperties_v10_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t* config, void* handle,
                          void** sendComm, ncclNetDeviceHandle_v10_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm,
                         ncclNetDeviceHandle_v10_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  /* phandle: the core's profiler handle, passed back through the profiler callback. */
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
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v10_t* props);
} ncclNet_v10_t;

#endif
