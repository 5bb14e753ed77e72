/* What weft's own net plugins (socket, ib, ofi) share, in weft_net_common: random ids, the
 * per-communicator context their v11 init makes, the property defaults, and the one list of
 * their v11 entries (WEFT_NET_V11_TABLE) that both a plugin's internal table and its exported
 * ncclNetPlugin_v11 are built from. Not for third-party plugins (net_export.h is theirs).
 *
 * Everything here is hidden and stateless but for the random fallback's counter: each .so (and
 * libweft, through the built-in socket net) links its own copy. Log lines go through the logger
 * the plugin passes, so they come out where the plugin's own do. */
#ifndef WEFT_NET_COMMON_H
#define WEFT_NET_COMMON_H

#include <pthread.h>
#include <stdint.h>

#include "nccl_net.h"

/* The most receives one irecv groups, and so every plugin's maxRecvs (the legacy exports'
 * WEFT_NET_EXPORT_MAX_RECVS says the same). */
#define WEFT_NET_MAX_RECVS 8

/* A non-zero 64-bit random value (getrandom; without entropy, time, pid and a counter through
 * splitmix64): listen secrets, connection and pending-connect ids, tag-space starts. Tells
 * connections apart; not for cryptography. */
uint64_t weft_net_random64(void);

/* The head of each plugin's per-communicator context (its first member). */
typedef struct {
  uint64_t magic; /* the plugin's context magic; 0 once finalized */
  uint64_t comm_id;
  int traffic_class;    /* init's config, else NCCL_NET_TRAFFIC_CLASS_UNDEF */
  pthread_mutex_t lock; /* guards the plugin's list of connects under way */
  ncclProfilerCallback_t prof; /* init's profFn (NULL: none; v6..v9 have none); listen, accept
                                * and connect hand it to the comms they make */
} weft_net_ctx;

/* A new zeroed context of size bytes (≥ sizeof(weft_net_ctx)) with its head filled from init's
 * arguments; NULL, with a WARN "<net>: out of memory allocating a context", when calloc fails.
 * net is the plugin's log prefix ("NET/IB"). */
void* weft_net_ctx_new(size_t size, uint64_t magic, uint64_t comm_id,
                       const ncclNetCommConfig_v11_t* config, ncclProfilerCallback_t prof,
                       ncclDebugLogger_t log, const char* net);

/* ---- NetPlugin events (net ABI v10+) ----
 * A weft plugin reports its own transfers through the profFn its init received, under the
 * phandle the core passed with the isend or irecv slot (NULL unless the core's profiler asked
 * for NetPlugin events): id is the plugin's (type | version, abi/profiler/net_*_v1.h), descr its
 * descriptor, read during the call only. Every event started is stopped exactly once — at its
 * completion, on failure, or when its comm closes — and *ev is NULL again after. *ev is NULL
 * on entry; with fn or phandle NULL nothing is called and it stays NULL: a run without
 * NetPlugin events pays one branch per transfer. */
static inline void weft_net_prof_start(ncclProfilerCallback_t fn, void* phandle, int64_t id,
                                       void* descr, void** ev) {
  if (fn == NULL || phandle == NULL) return;
  if (fn(ev, ncclProfilerNetEventStart, phandle, id, descr) != ncclSuccess) *ev = NULL;
}
/* Stop *ev (no-op when NULL); with descr non-NULL first report it as the event's final state
 * (ncclProfilerNetEventUpdateAndStop: a receive's length once known). */
static inline void weft_net_prof_stop(ncclProfilerCallback_t fn, void** ev, int64_t id,
                                      void* descr) {
  if (*ev == NULL) return;
  fn(ev, descr ? ncclProfilerNetEventUpdateAndStop : ncclProfilerNetEventStop, NULL, id, descr);
  *ev = NULL;
}
/* ctx when it is a live context of this magic, else NULL and a WARN naming the call fn. */
void* weft_net_ctx_check(void* ctx, uint64_t magic, ncclDebugLogger_t log, const char* net,
                         const char* fn);
/* Marks the context dead and frees it (the plugin has freed what hangs off it). */
void weft_net_ctx_free(void* ctx);

/* The defaults of every property of device dev that a weft net plugin does not measure: all
 * zero (no name, PCI path, port, latency, flush, global registration) but guid = dev, host
 * memory only, 65536 comms, WEFT_NET_MAX_RECVS, a host (not offloaded) device, a virtual device
 * of dev alone, NCCL_MAX_NET_SIZE_BYTES per point-to-point message, MAX_COLLNET_SIZE, no
 * multi-request. The plugin then sets what it knows. */
void weft_net_props_default(ncclNetProperties_v11_t* props, int dev);

/* The v11 table of a plugin whose entries are named p_init, p_devices, p_get_properties, ...
 * p_set_net_attr (p: net_socket, net_ib, net_ofi), with the given name. Every weft plugin
 * offers no device offload (getDeviceMr, irecvConsumed NULL) and no NIC fusion (makeVDevice
 * NULL). */
#define WEFT_NET_V11_TABLE(p, table_name)                                                      \
  {                                                                                            \
    .name = (table_name), .init = p##_init, .devices = p##_devices,                            \
    .getProperties = p##_get_properties, .listen = p##_listen, .connect = p##_connect,         \
    .accept = p##_accept, .regMr = p##_reg_mr, .regMrDmaBuf = p##_reg_mr_dmabuf,               \
    .deregMr = p##_dereg_mr, .isend = p##_isend, .irecv = p##_irecv, .iflush = p##_iflush,     \
    .test = p##_test, .closeSend = p##_close_send, .closeRecv = p##_close_recv,                \
    .closeListen = p##_close_listen, .getDeviceMr = NULL, .irecvConsumed = NULL,               \
    .makeVDevice = NULL, .finalize = p##_finalize, .setNetAttr = p##_set_net_attr,             \
  }

/* A plugin .so's plugin_exports.c in one line (after including net_export.h): the name and
 * target weft_net_export adapts into ncclNetPlugin_v6 … _v10 and _v12, and the exported
 * ncclNetPlugin_v11, built from the same entry list as the plugin's internal table v11 (which
 * may carry another name: the socket net's built-in one is "Socket"). connect_tc: v10's connect
 * with a traffic class. */
#define WEFT_NET_PLUGIN_EXPORTS(p, table_name, v11, connect_tc_fn)                             \
  _Static_assert(WEFT_NET_MAX_RECVS == WEFT_NET_EXPORT_MAX_RECVS, "legacy irecv bound");       \
  const char weft_net_export_name[] = table_name;                                              \
  const struct weft_net_export_target weft_net_export_target = {                               \
      .net = (v11), .set_logger = p##_set_logger, .logger = p##_logger,                         \
      .connect_tc = (connect_tc_fn)};                                                          \
  WEFT_NET_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = WEFT_NET_V11_TABLE(p, weft_net_export_name)

#endif
