/* NetPlugin events: what a net plugin of ABI v10+ reports about its own transfers through the
 * profiler callback the core hands to its init (profFn). The proxy passes, as the phandle of
 * each isend/irecv, the weft_prof_parent of that step (the communicator's profiler and the
 * step's ProxyStep event); the plugin starts an event under it, may update it, and stops it.
 *
 *   start  (ncclProfilerNetEventStart): a NetPlugin event under the ProxyStep, with the plugin's
 *          id (type | version) and its descriptor as data, when the communicator's mask asks for
 *          NetPlugin events; otherwise *eHandle = NULL and the plugin's later calls are no-ops;
 *   update (ncclProfilerNetEventUpdate): the ncclProfilerNetPluginUpdate state, data as given;
 *   stop   (ncclProfilerNetEventStop), or both (ncclProfilerNetEventUpdateAndStop).
 *
 * The handle a plugin holds is a small record of the profiler's table and the profiler's own
 * handle: stop needs no lookup of the communicator (the plugin gives none). */
#include <stdlib.h>

#include "plugin/profiler.h"

typedef struct {
  const ncclProfiler_v6_t* api;
  void* h;
} net_event;

static ncclResult_t net_start(void** eHandle, const weft_prof_parent* par, int64_t id,
                              void* data) {
  *eHandle = NULL;
  if (par == NULL || par->prof == NULL || par->prof->api == NULL ||
      !PROF_ON(par->prof, ncclProfileNetPlugin))
    return ncclSuccess;
  ncclProfilerEventDescr_v6_t d = {0};
  d.type = ncclProfileNetPlugin;
  d.parentObj = par->handle;
  d.rank = par->prof->rank;
  d.netPlugin.id = id;
  d.netPlugin.data = data;
  void* h = prof_start(par->prof, &d);
  if (h == NULL) return ncclSuccess;
  net_event* e = malloc(sizeof *e);
  if (e == NULL) { /* no record: stop now rather than leak the profiler's event */
    par->prof->api->stopEvent(h);
    return ncclSuccess;
  }
  *e = (net_event){par->prof->api, h};
  *eHandle = e;
  return ncclSuccess;
}

ncclResult_t prof_net_callback(void** eHandle, int type, void* pHandle, int64_t pluginId,
                               void* extData) {
  if (eHandle == NULL) return ncclInvalidArgument;
  if (type == ncclProfilerNetEventStart) return net_start(eHandle, pHandle, pluginId, extData);
  net_event* e = *eHandle;
  if (e == NULL) return ncclSuccess; /* started while NetPlugin events were off */
  if (type == ncclProfilerNetEventUpdate || type == ncclProfilerNetEventUpdateAndStop) {
    ncclProfilerEventStateArgs_v6_t a = {{0}};
    a.netPlugin.data = extData;
    e->api->recordEventState(e->h, ncclProfilerNetPluginUpdate, &a);
  }
  if (type == ncclProfilerNetEventStop || type == ncclProfilerNetEventUpdateAndStop) {
    e->api->stopEvent(e->h);
    free(e);
    *eHandle = NULL;
  }
  return ncclSuccess;
}
