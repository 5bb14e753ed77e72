/* Profiler plugin ABI version 1 (NCCL 2.23), exported by plugins as ncclProfiler_v1. FROZEN:
 * this file describes a binary interface that shipped plugins are built against; it is never
 * edited. A later change goes into a new profiler_vN.h, and core/plugin/ adapts older versions.
 * Version 1 names a collective's function, datatype, algorithm and protocol by index (ncclFunc_t,
 * ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*), carries the communicator's name and hash in every
 * Coll/P2p descriptor, and knows Group, Coll, P2p, ProxyOp, ProxyStep and ProxyCtrl events. */
#ifndef WEFT_ABI_PROFILER_V1_H
#define WEFT_ABI_PROFILER_V1_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "profiler_types.h"

typedef struct {
  uint8_t type;    /* one ncclProfile* bit */
  void* parentObj; /* handle of the parent event (Coll/P2p: the Group) or NULL */
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func; /* ncclFunc_t */
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype; /* ncclDataType_t */
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;  /* NCCL_ALGO_* */
      uint8_t proto; /* NCCL_PROTO_* */
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      ncclPid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncclProfilerEventDescr_v1_t;

typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v1_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v1_t eState,
                                   ncclProfilerEventStateArgs_v1_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v1_t;

#endif
