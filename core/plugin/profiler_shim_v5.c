/* Profiler ABI v5 as the current (v6) view: v6 only adds the copy-engine events, and every v5
 * descriptor and state argument keeps its layout, so events pass through once the CE ones are
 * filtered out. */
#include <stdio.h>
#include <string.h>

#include "plugin/profiler.h"

static const ncclProfiler_v5_t* slot;

#define CE_EVENTS (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch)

static ncclResult_t init5(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                          int nranks, int rank, ncclDebugLogger_t log) {
  return slot->init(ctx, id, mask, name, nnodes, nranks, rank, log);
}

static ncclResult_t start5(void* ctx, void** h, ncclProfilerEventDescr_v6_t* d) {
  *h = NULL;
  if (d->type & CE_EVENTS) return ncclSuccess;
  ncclProfilerEventDescr_v5_t d5;
  memcpy(&d5, d, sizeof d5); /* the v5 members are a prefix of v6's at the same offsets */
  return slot->startEvent(ctx, h, &d5);
}

static ncclResult_t stop5(void* h) { return slot->stopEvent(h); }

static ncclResult_t record5(void* h, ncclProfilerEventState_v6_t s,
                            ncclProfilerEventStateArgs_v6_t* a) {
  if (s >= ncclProfilerCeCollStart && s <= ncclProfilerCeBatchComplete) return ncclSuccess;
  return slot->recordEventState(h, s, a);
}

static ncclResult_t fini5(void* ctx) { return slot->finalize(ctx); }

int prof_shim_v5(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len) {
  (void)why;
  (void)len;
  slot = raw;
  *view = (ncclProfiler_v6_t){slot->name, init5, start5, stop5, record5, fini5};
  return 0;
}
