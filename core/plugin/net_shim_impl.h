/* Internal to core/plugin: what net_shim.c and the per-version shims (net_shim_vN.c) share.
 * Nothing outside core/plugin includes this file. */
#ifndef WEFT_PLUGIN_NET_SHIM_IMPL_H
#define WEFT_PLUGIN_NET_SHIM_IMPL_H

#include <pthread.h>
#include <stdint.h>
#include "plugin/net_shim.h"

/* Most receives one irecv of an int-sized version may group (sizes are copied to the stack).
 * NCCL's core posts at most NCCL_NET_MAX_REQUESTS; plugins report far fewer in maxRecvs. */
#define NET_SHIM_MAX_RECVS 64

/* The one guarded global of each old-version shim: the raw struct its entries forward to.
 * raw is written under lock before a view is handed out and stays put while binds > 0, so the
 * data-path entries read it without the lock. */
typedef struct {
  pthread_mutex_t lock;
  const void* raw; /* bound plugin struct; NULL when free */
  int binds;       /* views built on raw and not yet released */
  int inits;       /* communicators between the view's init and finalize */
} net_shim_slot;

#define NET_SHIM_SLOT_INITIALIZER {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0}

/* The ctx an old-version view's init hands out (one per communicator). */
typedef struct {
  ncclNetCommConfig_v10_t config;
} net_shim_ctx;

/* Mandatory entries, by member name (identical in every version). */
#define NET_SHIM_MANDATORY(p, missing)                                                  \
  do {                                                                                  \
    (missing) = !(p)->name            ? "name"                                          \
                : !(p)->init          ? "init"                                          \
                : !(p)->devices       ? "devices"                                       \
                : !(p)->getProperties ? "getProperties"                                 \
                : !(p)->listen        ? "listen"                                        \
                : !(p)->connect       ? "connect"                                       \
                : !(p)->accept        ? "accept"                                        \
                : !(p)->regMr         ? "regMr"                                         \
                : !(p)->deregMr       ? "deregMr"                                       \
                : !(p)->isend         ? "isend"                                         \
                : !(p)->irecv         ? "irecv"                                         \
                : !(p)->iflush        ? "iflush"                                        \
                : !(p)->test          ? "test"                                          \
                : !(p)->closeSend     ? "closeSend"                                     \
                : !(p)->closeRecv     ? "closeRecv"                                     \
                : !(p)->closeListen   ? "closeListen"                                   \
                                      : NULL;                                           \
  } while (0)

/* Writes "<member> is NULL" to why; returns ncclInvalidUsage. */
ncclResult_t net_shim_missing(const char* member, char* why, size_t whylen);

/* Bind slot to raw (or share it when raw is already bound). Fails with a reason when another
 * struct of that version holds the slot. */
ncclResult_t net_shim_slot_bind(net_shim_slot* s, const void* raw, int version, char* why,
                                size_t whylen);
void net_shim_slot_unbind(net_shim_slot* s);

/* Init-once for old versions: runs first_init(raw, …) when no communicator holds the plugin,
 * counts otherwise; allocates the per-comm ctx holding a copy of config. */
typedef ncclResult_t (*net_shim_first_init_fn)(const void* raw, ncclDebugLogger_t log,
                                               ncclProfilerCallback_t prof);
ncclResult_t net_shim_old_init(net_shim_slot* s, net_shim_first_init_fn first_init, void** ctx,
                               const ncclNetCommConfig_v12_t* config, ncclDebugLogger_t log,
                               ncclProfilerCallback_t prof);
ncclResult_t net_shim_old_finalize(net_shim_slot* s, void* ctx);
/* The config stored in an old-version ctx (a default one when ctx is NULL). */
ncclNetCommConfig_v10_t* net_shim_ctx_config(void* ctx);

/* Properties with every field a version may lack set to NCCL's default for device dev. */
void net_shim_props_defaults(ncclNetProperties_v12_t* props, int dev);

/* size → int for int-sized versions; > INT_MAX is ncclInvalidArgument with a WARN naming the
 * entry and version. */
ncclResult_t net_shim_int_size(int version, const char* entry, size_t size, int* out);
ncclResult_t net_shim_int_sizes(int version, int n, const size_t* sizes, int* out);
/* For v6..v8: an irecv request pre-set to NCCL_NET_OPTIONAL_RECV_COMPLETION becomes NULL. */
void net_shim_clear_recv_hint(void** request);

/* Stubs installed for NULL optional entries: each returns ncclInvalidUsage. */
ncclResult_t net_stub_regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                  int fd, void** mhandle);
ncclResult_t net_stub_getDeviceMr(void* comm, void* mhandle, void** dptr_mhandle);
ncclResult_t net_stub_irecvConsumed(void* recvComm, int n, void* request);
ncclResult_t net_stub_makeVDevice(int* d, ncclNetVDeviceProps_v12_t* props);
ncclResult_t net_stub_setNetAttr(void* ctx, ncclNetAttr_v12_t* attr);

/* The entries of a bound view (net_shim_bind), as the current ABI types them. */
typedef ncclResult_t (*net_shim_init_fn)(void** ctx, uint64_t comm_id,
                                         ncclNetCommConfig_v12_t* config, ncclDebugLogger_t log,
                                         ncclProfilerCallback_t prof);
typedef ncclResult_t (*net_shim_finalize_fn)(void* ctx);

/* Binding an old version: refuses a NULL init (has_init 0), binds the slot, and writes a view
 * whose name, init and finalize are usable (the rest waits for net_shim_complete). */
ncclResult_t net_shim_old_bind(net_shim_slot* s, const void* raw, int version, const char* name,
                               int has_init, net_shim_init_fn init, net_shim_finalize_fn fini,
                               weft_net_view* out, char* why, size_t whylen);

/* One bind, one adapter and one release per version. bind_vN binds the slot (before the
 * plugin's init); adapt_vN checks the whole of raw and builds out (written only on success),
 * after it. */
ncclResult_t net_shim_bind_v6(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_bind_v7(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_bind_v8(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_bind_v9(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_bind_v10(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_adapt_v6(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_adapt_v7(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_adapt_v8(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_adapt_v9(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_adapt_v10(const void* raw, weft_net_view* out, char* why, size_t whylen);
void net_shim_release_v6(void);
void net_shim_release_v7(void);
void net_shim_release_v8(void);
void net_shim_release_v9(void);
void net_shim_release_v10(void);
/* v11 keeps one slot per plugin struct (a few at once: the built-in socket net is one). */
ncclResult_t net_shim_bind_v11(const void* raw, weft_net_view* out, char* why, size_t whylen);
ncclResult_t net_shim_adapt_v11(const void* raw, weft_net_view* out, char* why, size_t whylen);
void net_shim_release_v11(const void* raw);
/* After a failed complete: the view's finalize forwards to the one the plugin has now. */
void net_shim_v11_refresh_finalize(weft_net_view* view);

#endif
