/* Profiler plugin ABI version 2 (NCCL 2.24), exported as ncclProfiler_v2. FROZEN (see
 * profiler_v1.h). Against v1: function, datatype, algorithm and protocol are strings; the
 * reduction op, isCollnet and isNvls are gone. */
#ifndef WEFT_ABI_PROFILER_V2_H
#define WEFT_ABI_PROFILER_V2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../nccl.h"
#include "../nccl_common.h"
#include "profiler_types.h"

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
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
} ncclProfilerEventDescr_v2_t;

typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v2_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v2_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v2_t eState,
                                   ncclProfilerEventStateArgs_v2_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v2_t;

#endif
