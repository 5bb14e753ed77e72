/* A net plugin of any supported ABI version (v6..v12), seen through the current (v12) view.
 * One small shim file per old version (net_shim_v6.c … net_shim_v11.c) adapts that version's
 * struct; v12 passes through with stubs for NULL optional entries. Used by the core's loader
 * and by the conformance suite (which links these files as the static library weft_netshim).
 *
 * What the view does for an old plugin (as NCCL's own compatibility layer does):
 *  - init/finalize: the plugin's init runs once, when the first communicator calls the view's
 *    init; later ones only count. The count drops in finalize; the next init after it reached 0
 *    runs the plugin's init again. The ctx handed out carries the comm config (v10 connect gets
 *    it from there).
 *  - getProperties: fields the version lacks get NCCL's defaults: regIsGlobal = forceFlush = 0,
 *    netDeviceType HOST (v6), vProps = {1, {dev}}, maxP2pBytes 1 GiB and maxCollBytes 512 MiB
 *    (v6..v8), maxMultiRequestSize 1, railId = planeId = NCCL_NET_ID_UNDEF (v6..v11).
 *  - makeVDevice: a virtual device of more devices than the version fuses (4 before v12) is
 *    refused with ncclInvalidArgument before the plugin sees it.
 *  - sizes: a size_t above INT_MAX for an int-sized entry (regMr v6/v7, isend/irecv v6..v8) is
 *    refused with ncclInvalidArgument (and a WARN) before the plugin sees it.
 *  - irecv: the NCCL_NET_OPTIONAL_RECV_COMPLETION hint in *request is cleared for v6..v8.
 *  - v6 connect/accept: no device handle; *devComm is set to NULL.
 *
 * Limit: an old-ABI entry such as devices() or getProperties() receives no context, so the
 * shim of version N keeps the plugin struct it adapts in one guarded per-version slot. One raw
 * struct per old version can be adapted at a time (adapting the same struct again shares the
 * slot); a second, different v8 struct is refused until the first view is released. NCCL has
 * the same limit. v11 has a few such slots (the built-in socket net and external v11 plugins
 * side by side). v12 views hold no shared state. */
#ifndef WEFT_PLUGIN_NET_SHIM_H
#define WEFT_PLUGIN_NET_SHIM_H

#include <stddef.h>
#include "nccl_net.h"

#define WEFT_NET_MIN_VERSION 6
#define WEFT_NET_MAX_VERSION 12

typedef struct {
  ncclNet_v12_t api; /* complete: every entry non-NULL (optional ones are stubs returning
                        ncclInvalidUsage); bound only: name (may be NULL), init, finalize
                        (v11/v12: may be NULL) */
  int version;       /* the plugin's own ABI version, 6..12 */
  const void* raw;   /* the plugin's exported struct (ncclNet_vN_t*) */
  int complete;      /* net_shim_complete (or net_shim_adapt) succeeded */
} weft_net_view;

/* "ncclNetPlugin_v12" … "ncclNetPlugin_v6"; NULL outside [6, 12]. */
const char* net_shim_symbol(int version);

/* Stock NCCL's order: resolve the symbol, call init, then read the table, which the plugin may
 * fill in its init (nccl-rdma-sharp-plugins exports only name and init and copies the rest in).
 * net_shim_bind checks only that init is there (and for v6..v10 takes the version's slot) and
 * writes a view whose init and finalize may be called. After a successful init, net_shim_complete
 * checks the whole table as it is now and fills in the view; on failure (ncclInvalidUsage, the
 * reason in why) the view stays bound: call its finalize for the context init gave (v11/v12:
 * when not NULL), then net_shim_release. Neither logs. */
ncclResult_t net_shim_bind(const void* raw, int version, weft_net_view* out, char* why,
                           size_t whylen);
ncclResult_t net_shim_complete(weft_net_view* view, char* why, size_t whylen);

/* bind + complete without init, for a caller that only checks a table as it is (a table that
 * init fills in fails here). Check the raw struct of that version (mandatory entries non-NULL,
 * name non-NULL) and build the view. On failure returns ncclInvalidUsage and writes the reason (e.g. "isend is NULL") to why;
 * logs nothing (the caller names the file). Mandatory: name, init, devices, getProperties,
 * listen, connect, accept, regMr, deregMr, isend, irecv, iflush, test, closeSend, closeRecv,
 * closeListen, and for v11/v12 also finalize (NCCL calls it unconditionally). */
ncclResult_t net_shim_adapt(const void* raw, int version, weft_net_view* out, char* why,
                            size_t whylen);

/* Give back what net_shim_adapt took (the per-version slot of v6..v11). Call once per
 * successful adapt, after the last use of the view; a no-op for v12. */
void net_shim_release(weft_net_view* view);

#endif
