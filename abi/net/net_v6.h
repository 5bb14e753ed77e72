/* Net plugin ABI version 6, exported by plugins as ncclNetPlugin_v6. FROZEN: this file
 * describes a binary interface that shipped plugins are built against; it is never edited. A
 * later change to the interface goes into a new net_vN.h, and the core adapts older versions in
 * core/plugin/. Layout on LP64: ncclNet_v6_t 136 bytes, ncclNetProperties_v6_t 48 bytes. */
#ifndef WEFT_ABI_NET_V6_H
#define WEFT_ABI_NET_V6_H

#include <stddef.h>
#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"

/* A v6 plugin may have at most this many requests in flight per comm (later versions: 32). */
#define NCCL_NET_MAX_REQUESTS_V6 8

typedef struct {
  char* name;     /* device name, for logs */
  char* pciPath;  /* sysfs path of the PCI device */
  uint64_t guid;  /* equal guids mean one physical NIC */
  int ptrSupport; /* NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF */
  int speed;      /* Mbit/s */
  int port;
  float latency;  /* microseconds */
  int maxComms;
  int maxRecvs;   /* receives one irecv may group */
} ncclNetProperties_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t* props);
  /* handle: NCCL_NET_HANDLE_MAXSIZE bytes the peer passes to connect. */
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  /* Never blocks: Success with *sendComm == NULL means "not yet, call again". */
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm);
  /* Never blocks: Success with *recvComm == NULL means "not yet, call again". */
  ncclResult_t (*accept)(void* listenComm, void** recvComm);
  ncclResult_t (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  /* Success with *request == NULL means "no resources now, retry". */
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags,
                        void** mhandles, void** request);
  /* Makes data received into CUDA memory visible to the GPU. */
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  /* On *done, sizes (if not NULL) gets the byte count of each of the request's n transfers. */
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
} ncclNet_v6_t;

#endif
