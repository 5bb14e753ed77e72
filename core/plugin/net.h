/* The core's door to the network: which net plugin a communicator uses, opened and closed per
 * communicator.
 *
 * Candidates, in order: the libraries named by NCCL_NET_PLUGIN (comma list of at most 14 names
 * or paths; unset: libnccl-net.so; `none`: no external library), then the built-in socket net
 * ("Socket"). A communicator gets the first candidate whose name matches the requested one
 * (config netName, else NCCL_NET; case-insensitive; any when neither is set), whose init
 * succeeds, whose devices() is > 0 and whose device 0 is a host (non-offload) device.
 *
 * A library is read in stock NCCL's order: resolve the newest ncclNetPlugin_v12..v6 symbol, call
 * its init, then check and copy the table (a plugin may fill it in init). One that cannot be used
 * (no symbol, init NULL or failing, a mandatory entry still NULL after init, 0 devices, …) is
 * skipped for the rest of the process with one WARN naming the file and the reason. The INFO
 * line of a load names the file and the plugin's own name (as read after init); a WARN says when
 * two candidates answer to one name (NCCL_NET then picks the first). While one external library serves a communicator the other external libraries are
 * not used (as in NCCL); the built-in socket always remains. An external library is dlclose'd
 * when its last communicator closes (as in NCCL 2.28) and loaded again when next needed; for a
 * v6..v10 plugin that means its init runs again then. */
#ifndef WEFT_PLUGIN_NET_H
#define WEFT_PLUGIN_NET_H

#include <stddef.h>
#include <stdint.h>
#include "nccl_net.h"
#include "nccl_rma.h"

/* The most names NCCL_NET_PLUGIN may list (NCCL_NET_MAX_PLUGINS less IB and Socket). */
#define NET_MAX_EXTERNAL_PLUGINS 14

/* One communicator's network: the plugin and this communicator's context in it. */
typedef struct weft_net {
  const ncclNet_v12_t* api; /* current view; every entry non-NULL (NULL optionals are stubs) */
  void* ctx;                /* this communicator's context, from api->init */
  int ndev;                 /* api->devices() when opened */
  const char* name;         /* the plugin's name ("Socket", "IB", …) */
  const char* path;         /* library file it came from; "built-in" for the internal socket */
  int version;              /* the plugin's ABI version, 6..11 */
  /* the loader's own */
  int refs;      /* communicators sharing this handle (net_retain) */
  int cand;      /* registry index */
} weft_net;

/* Pick and initialise the net for a new communicator. net_name: config->netName, or NULL to
 * use NCCL_NET. traffic_class: config->trafficClass (NCCL_CONFIG_UNDEF_INT or
 * NCCL_NET_TRAFFIC_CLASS_UNDEF when unset; the plugin sees the latter).
 * Returns ncclInvalidUsage (with a WARN listing what is available) when nothing matches;
 * *out is written only on success. Thread-safe; serialises with other opens and closes. */
ncclResult_t net_open_for_comm(const char* net_name, uint64_t comm_id, int traffic_class,
                               weft_net** out);

/* A child communicator (split, shrink) shares its parent's net and context: take a reference;
 * each holder calls net_close_for_comm once. */
void net_retain(weft_net* net);

/* Drop a reference; the last one finalizes the communicator's context (v11: the plugin's
 * finalize; v6..v10: the shim's count) and frees net. NULL is a no-op. */
void net_close_for_comm(weft_net* net);

/* The file of the external net library currently serving a communicator (the tuner loader
 * falls back to it, as NCCL does). Returns 1 and writes buf, or 0 when none is open. */
int net_external_library(char* buf, size_t len);

/* The built-in net (the fallback under every external plugin, NCCL's "Socket"): the library
 * target registers plugins/net-socket's v11 table from a constructor, so the core never names a
 * plugin. Call before the first net_open_for_comm; NULL unregisters. net_builtin: the table,
 * NULL when none is registered. */
void net_builtin_register(const ncclNet_v11_t* net);
const ncclNet_v11_t* net_builtin(void);

/* The built-in net's one-sided table (the socket net's RMA v15 calls, host memory only),
 * registered by the same constructor: the backend of the device API's GIN proxy where no RMA
 * plugin is loaded (core/gin/gin_comm.c). NULL when none is registered. */
void net_builtin_rma_register(const ncclRma_v15_t* rma);
const ncclRma_v15_t* net_builtin_rma(void);

/* Forget NCCL_NET_PLUGIN as read and every skip decision, so the next open reads the settings
 * again (tests, weft-policy explain). ncclInvalidUsage while any communicator holds a net. */
ncclResult_t net_loader_reset(void);

#endif
