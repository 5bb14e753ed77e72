/* The core's door to profiler plugins: the library, its ABI version, one context per
 * communicator, and the emit points the core calls.
 *
 * Library (NCCL's rules): NCCL_PROFILER_PLUGIN names it: `none` disables profiling; a name or
 * path is tried as given, then a bare name as libnccl-profiler-<name>.so. Unset:
 * libnccl-profiler.so. When that finds nothing, the external net plugin's library is tried
 * (NCCL's fallback). One library per process, loaded with the first communicator, dlclose'd
 * after the last.
 *
 * Version: ncclProfiler_v6 first, then v5 … v1; an older version is adapted to the current (v6)
 * view by one shim each (profiler_shim_vN.c). A table with a NULL name or entry, or a failing
 * init, costs one WARN and the communicator runs unprofiled.
 *
 * Cost: every emit point is `if (PROF_ON(&comm->prof, bits))`: one load and one branch when no
 * profiler is loaded (mask 0) or the plugin left those event bits out of its activation mask.
 * The mask is the communicator's own; the plugin gets its address at init and may change it
 * at any time (it is read with relaxed atomic loads). */
#ifndef WEFT_PLUGIN_PROFILER_H
#define WEFT_PLUGIN_PROFILER_H

#include <stddef.h>
#include <stdint.h>
#include "nccl_profiler.h"
#include "util/names.h"

#define WEFT_PROFILER_MIN_VERSION 1
#define WEFT_PROFILER_MAX_VERSION 6
#define WEFT_PROF_NFUNCS 11 /* ncclFunc_t values: Broadcast … Gather */

/* One communicator's profiler (embedded in struct ncclComm; all zero when none is loaded). */
typedef struct weft_prof {
  int mask;                     /* activation mask; the plugin's to set */
  void* ctx;                    /* from init */
  const ncclProfiler_v6_t* api; /* the current view; NULL: none */
  int version;                  /* the ABI version the library exports */
  int rank;
  uint64_t seq[WEFT_PROF_NFUNCS]; /* Coll sequence numbers per function (NCCL's seqNumber) */
  void* group_api;                /* the GroupApi event open on this comm, if any */
} weft_prof;

/* Bits whose events live inside a collective's or p2p's subtree: an API event is emitted when
 * any of them is on, as NCCL does, so that children find their parents. */
#define WEFT_PROF_COLL_TREE                                                                 \
  (ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep |       \
   ncclProfileKernelCh | ncclProfileNetPlugin)
#define WEFT_PROF_P2P_TREE                                                                  \
  (ncclProfileP2pApi | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |         \
   ncclProfileKernelCh | ncclProfileNetPlugin)
#define WEFT_PROF_GROUP_TREE                                                                \
  (ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |               \
   ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin)
#define WEFT_PROF_ALL 0x7fff

#define PROF_ON(p, bits) \
  __builtin_expect((__atomic_load_n(&(p)->mask, __ATOMIC_RELAXED) & (bits)) != 0, 0)

/* Start an event (the handle is NULL when the plugin returns an error or no handle). */
static inline void* prof_start(weft_prof* p, ncclProfilerEventDescr_v6_t* d) {
  void* h = NULL;
  if (p->api->startEvent(p->ctx, &h, d) != ncclSuccess) h = NULL;
  return h;
}
static inline void prof_stop(weft_prof* p, void* h) {
  if (h) p->api->stopEvent(h);
}
static inline void prof_state(weft_prof* p, void* h, ncclProfilerEventState_t s,
                              ncclProfilerEventStateArgs_v6_t* a) {
  ncclProfilerEventStateArgs_v6_t none = {{0}};
  if (h) p->api->recordEventState(h, s, a ? a : &none);
}

/* End the communicator's GroupApi event, if one is open (the launch's last touch of it). */
static inline void prof_group_api_stop(weft_prof* p) {
  if (p->group_api) {
    prof_stop(p, p->group_api);
    p->group_api = NULL;
  }
}

/* Open the process's profiler library (first call) and run its init for a new communicator;
 * fills *p (all zero when no profiler is configured, found or usable; WARNed once). Never
 * fails the communicator. */
void prof_open_for_comm(weft_prof* p, uint64_t comm_id, const char* comm_name, int nnodes,
                        int nranks, int rank);
/* Finalize the communicator's context (not when init left it NULL, as NCCL) and drop the
 * library after the last. Zero p: no-op. */
void prof_close_for_comm(weft_prof* p);
/* Forget NCCL_PROFILER_PLUGIN as read (tests). ncclInvalidUsage while a communicator holds it. */
ncclResult_t prof_loader_reset(void);

/* ---- NetPlugin events (profiler_net.c) ---- */
/* What the proxy hands a net plugin as the phandle of an isend/irecv: the communicator's
 * profiler and the step's ProxyStep event (the NetPlugin event's parent). */
typedef struct {
  weft_prof* prof;
  void* handle;
} weft_prof_parent;
/* The profFn callback given to every net plugin's init (ncclProfilerCallback_t). */
ncclResult_t prof_net_callback(void** eHandle, int type, void* pHandle, int64_t pluginId,
                               void* extData);

/* Names of enum values as NCCL's descriptors spell them (profiler_names.c). */
const char* prof_func_name(int func);
const char* prof_dtype_name(int dtype);
const char* prof_algo_name(int algo);
const char* prof_proto_name(int proto);
/* Their inverse (the v1 shim): an unknown or NULL name gives Broadcast, Int8, Ring, Simple. */
int prof_func_index(const char* s);
int prof_dtype_index(const char* s);
int prof_algo_index(const char* s);
int prof_proto_index(const char* s);

/* ---- shims (profiler_shim_vN.c): an old version's table as the current view ---- */
/* Fill view from raw (the library's ncclProfiler_v<version>). Each keeps raw in its one slot
 * (one library per process, as in NCCL). 0, or -1 with the reason in why. */
int prof_shim_v1(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len);
int prof_shim_v2(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len);
int prof_shim_v3(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len);
int prof_shim_v4(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len);
int prof_shim_v5(const void* raw, ncclProfiler_v6_t* view, char* why, size_t len);
/* v1..v3 keep only the proxy control and proxy step states, without arguments but the
 * appended count (as NCCL); their Coll/P2p name and commHash are NULL and 0 (as NCCL). */
int prof_shim_state_kept_v1_v3(ncclProfilerEventState_t s);

#endif
