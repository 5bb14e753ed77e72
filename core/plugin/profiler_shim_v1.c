/* Profiler ABI v1 as the current (v6) view: v2's (profiler_shim_v2.c) with function, datatype,
 * algorithm and protocol as indexes (the current view's strings mapped back; an unknown name
 * maps as NCCL's shim does), the reduction op (0), isCollnet and isNvls (0). Also the state
 * filter v1..v3 share. */
#include <stdio.h>
#include <string.h>

#include "plugin/profiler.h"

static const ncclProfiler_v1_t* slot;

int prof_shim_state_kept_v1_v3(ncclProfilerEventState_t s) {
  switch (s) {
    case ncclProfilerProxyCtrlIdle:
    case ncclProfilerProxyCtrlActive:
    case ncclProfilerProxyCtrlSleep:
    case ncclProfilerProxyCtrlWakeup:
    case ncclProfilerProxyCtrlAppend:
    case ncclProfilerProxyCtrlAppendEnd:
    case ncclProfilerProxyStepSendGPUWait:
    case ncclProfilerProxyStepSendWait:
    case ncclProfilerProxyStepRecvWait:
    case ncclProfilerProxyStepRecvFlushWait:
    case ncclProfilerProxyStepRecvGPUWait: return 1;
    default: return 0;
  }
}

static ncclResult_t init1(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                          int nranks, int rank, ncclDebugLogger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  return slot->init(ctx, mask);
}

static ncclResult_t start1(void* ctx, void** h, ncclProfilerEventDescr_v6_t* d) {
  *h = NULL;
  ncclProfilerEventDescr_v1_t e;
  memset(&e, 0, sizeof e);
  e.type = (uint8_t)d->type;
  e.parentObj = d->parentObj;
  e.rank = d->rank;
  switch (d->type) {
    case ncclProfileGroup:
    case ncclProfileProxyCtrl: break;
    case ncclProfileColl:
      e.parentObj = d->coll.parentGroup;
      e.coll.seqNumber = d->coll.seqNumber;
      e.coll.func = (uint8_t)prof_func_index(d->coll.func);
      e.coll.sendBuff = d->coll.sendBuff;
      e.coll.recvBuff = d->coll.recvBuff;
      e.coll.count = d->coll.count;
      e.coll.root = d->coll.root;
      e.coll.datatype = (uint8_t)prof_dtype_index(d->coll.datatype);
      e.coll.nMaxChannels = d->coll.nChannels;
      e.coll.nWarps = d->coll.nWarps;
      e.coll.algo = (uint8_t)prof_algo_index(d->coll.algo);
      e.coll.proto = (uint8_t)prof_proto_index(d->coll.proto);
      break;
    case ncclProfileP2p:
      e.parentObj = d->p2p.parentGroup;
      e.p2p.func = (uint8_t)prof_func_index(d->p2p.func);
      e.p2p.buff = d->p2p.buff;
      e.p2p.datatype = (uint8_t)prof_dtype_index(d->p2p.datatype);
      e.p2p.count = d->p2p.count;
      e.p2p.peer = d->p2p.peer;
      break;
    case ncclProfileProxyOp: memcpy(&e.proxyOp, &d->proxyOp, sizeof e.proxyOp); break;
    case ncclProfileProxyStep: e.proxyStep.step = d->proxyStep.step; break;
    default: return ncclSuccess;
  }
  return slot->startEvent(ctx, h, &e);
}

static ncclResult_t stop1(void* h) { return slot->stopEvent(h); }

static ncclResult_t record1(void* h, ncclProfilerEventState_v6_t s,
                            ncclProfilerEventStateArgs_v6_t* a) {
  if (!prof_shim_state_kept_v1_v3(s)) return ncclSuccess;
  ncclProfilerEventStateArgs_v1_t b;
  memset(&b, 0, sizeof b);
  if (s >= ncclProfilerProxyCtrlIdle && s <= ncclProfilerProxyCtrlAppendEnd)
    b.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
  return slot->recordEventState(h, s, &b);
}

static ncclResult_t fini1(void* ctx) { return slot->finalize(ctx); }

int prof_shim_v1(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len) {
  (void)why;
  (void)len;
  slot = raw;
  *view = (ncclProfiler_v6_t){slot->name, init1, start1, stop1, record1, fini1};
  return 0;
}
