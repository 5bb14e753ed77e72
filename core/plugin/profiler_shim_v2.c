/* Profiler ABI v2 as the current (v6) view: v3's (profiler_shim_v3.c) plus trafficBytes in Coll
 * (0, as in NCCL), and no KernelCh or NetPlugin events. */
#include <stdio.h>
#include <string.h>

#include "plugin/profiler.h"

static const ncclProfiler_v2_t* slot;

static ncclResult_t init2(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                          int nranks, int rank, ncclDebugLogger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  return slot->init(ctx, mask);
}

static ncclResult_t start2(void* ctx, void** h, ncclProfilerEventDescr_v6_t* d) {
  *h = NULL;
  ncclProfilerEventDescr_v2_t e;
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
      e.coll.func = d->coll.func;
      e.coll.sendBuff = d->coll.sendBuff;
      e.coll.recvBuff = d->coll.recvBuff;
      e.coll.count = d->coll.count;
      e.coll.root = d->coll.root;
      e.coll.datatype = d->coll.datatype;
      e.coll.nMaxChannels = d->coll.nChannels;
      e.coll.nWarps = d->coll.nWarps;
      e.coll.algo = d->coll.algo;
      e.coll.proto = d->coll.proto;
      break;
    case ncclProfileP2p:
      e.parentObj = d->p2p.parentGroup;
      e.p2p.func = d->p2p.func;
      e.p2p.buff = d->p2p.buff;
      e.p2p.datatype = d->p2p.datatype;
      e.p2p.count = d->p2p.count;
      e.p2p.peer = d->p2p.peer;
      break;
    case ncclProfileProxyOp: memcpy(&e.proxyOp, &d->proxyOp, sizeof e.proxyOp); break;
    case ncclProfileProxyStep: e.proxyStep.step = d->proxyStep.step; break;
    default: return ncclSuccess;
  }
  return slot->startEvent(ctx, h, &e);
}

static ncclResult_t stop2(void* h) { return slot->stopEvent(h); }

static ncclResult_t record2(void* h, ncclProfilerEventState_v6_t s,
                            ncclProfilerEventStateArgs_v6_t* a) {
  if (!prof_shim_state_kept_v1_v3(s)) return ncclSuccess;
  ncclProfilerEventStateArgs_v2_t b;
  memset(&b, 0, sizeof b);
  if (s >= ncclProfilerProxyCtrlIdle && s <= ncclProfilerProxyCtrlAppendEnd)
    b.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
  return slot->recordEventState(h, s, &b);
}

static ncclResult_t fini2(void* ctx) { return slot->finalize(ctx); }

int prof_shim_v2(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len) {
  (void)why;
  (void)len;
  slot = raw;
  *view = (ncclProfiler_v6_t){slot->name, init2, start2, stop2, record2, fini2};
  return 0;
}
