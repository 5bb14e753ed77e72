/* Profiler ABI v4 as the current (v6) view: no API events (GroupApi, CollApi, P2pApi,
 * KernelLaunch) and no copy-engine events, an 8-bit type, init arguments in another order, and
 * a Coll's or P2p's parent is the Group it runs in (v5 moved that to parentGroup). */
#include <stdio.h>
#include <string.h>

#include "plugin/profiler.h"

static const ncclProfiler_v4_t* slot;

static ncclResult_t init4(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                          int nranks, int rank, ncclDebugLogger_t log) {
  return slot->init(ctx, mask, name, id, nnodes, nranks, rank, log);
}

static ncclResult_t start4(void* ctx, void** h, ncclProfilerEventDescr_v6_t* d) {
  *h = NULL;
  ncclProfilerEventDescr_v4_t e;
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
      e.coll.nChannels = d->coll.nChannels;
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
      e.p2p.nChannels = d->p2p.nChannels;
      break;
    case ncclProfileProxyOp:
      memcpy(&e.proxyOp, &d->proxyOp, sizeof e.proxyOp);
      break;
    case ncclProfileProxyStep: e.proxyStep.step = d->proxyStep.step; break;
    case ncclProfileKernelCh:
      e.kernelCh.channelId = d->kernelCh.channelId;
      e.kernelCh.pTimer = d->kernelCh.pTimer;
      break;
    case ncclProfileNetPlugin:
      e.netPlugin.id = d->netPlugin.id;
      e.netPlugin.data = d->netPlugin.data;
      break;
    default: return ncclSuccess; /* an event v4 does not know */
  }
  return slot->startEvent(ctx, h, &e);
}

static ncclResult_t stop4(void* h) { return slot->stopEvent(h); }

static ncclResult_t record4(void* h, ncclProfilerEventState_v6_t s,
                            ncclProfilerEventStateArgs_v6_t* a) {
  if (s == ncclProfilerGroupStartApiStop || s == ncclProfilerGroupEndApiStart ||
      s >= ncclProfilerCeCollStart)
    return ncclSuccess;
  ncclProfilerEventStateArgs_v4_t b;
  memcpy(&b, a, sizeof b); /* v4's state arguments are v5's */
  return slot->recordEventState(h, s, &b);
}

static ncclResult_t fini4(void* ctx) { return slot->finalize(ctx); }

int prof_shim_v4(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len) {
  (void)why;
  (void)len;
  slot = raw;
  *view = (ncclProfiler_v6_t){slot->name, init4, start4, stop4, record4, fini4};
  return 0;
}
