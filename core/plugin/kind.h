/* Loading the plugin kinds beside the net: GIN, RMA and CollNet (kind_shim.h for their views).
 *
 * Candidates, in order, as NCCL 2.30/2.32 reads them:
 *  - GIN: the libraries NCCL_GIN_PLUGIN lists (comma list of names or paths, at most 13; a name
 *    is tried as given, then as libnccl-gin-<name>.so; unset: libnccl-gin.so; `none`: none),
 *    then the net plugin's library (where NCCL 2.28 looked ncclGinPlugin_v11 up).
 *  - RMA: NCCL_RMA_PLUGIN the same way (libnccl-rma*.so), then the library the last GIN open
 *    loaded from, then the net plugin's library.
 *  - CollNet: the net plugin's library only (ncclCollNetPlugin_vN sits next to ncclNetPlugin_vN).
 * In each library the newest symbol weft knows wins (GIN v15..v11; RMA v15..v13, then
 * ncclGinPlugin_v13 as an RMA v13; CollNet v12..v6); the table is checked and adapted, init is
 * called with the communicator's id, and devices() must be > 0. The first candidate that gets
 * through is the communicator's; one that fails is skipped with one WARN naming the file, the
 * plugin and the call that failed ("init returned ncclSystemError"). A missing default library
 * is an INFO, not a WARN. Each open holds its own dlopen reference. */
#ifndef WEFT_PLUGIN_KIND_H
#define WEFT_PLUGIN_KIND_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/kind_shim.h"

typedef enum { WEFT_KIND_GIN = 0, WEFT_KIND_RMA = 1, WEFT_KIND_COLLNET = 2 } weft_plugin_kind;

/* The most libraries NCCL_GIN_PLUGIN / NCCL_RMA_PLUGIN may list (16 less NCCL's reserved 3). */
#define KIND_MAX_LISTED 13

typedef struct weft_kind_plugin {
  weft_plugin_kind kind;
  char path[PATH_MAX]; /* the file it came from */
  const char* name;    /* the plugin's name */
  int version;
  void* ctx; /* init's context (NULL for CollNet v6..v10) */
  int ndev;
  weft_gin_view gin;         /* kind GIN */
  ncclRma_v15_t rma;         /* kind RMA */
  weft_collnet_view collnet; /* kind CollNet */
  void* dl;
} weft_kind_plugin;

/* "GIN", "RMA", "CollNet". */
const char* kind_plugin_label(weft_plugin_kind kind);

/* Open the first usable plugin of kind for a communicator. net_lib: the file of the external net
 * library serving it (net_external_library), NULL when none. *out is NULL (and ncclSuccess)
 * when no candidate is usable: every kind is optional. */
ncclResult_t kind_plugin_open(weft_plugin_kind kind, const char* net_lib, uint64_t comm_id,
                              weft_kind_plugin** out);

/* Finalize the communicator's context and drop the library reference. NULL is a no-op. */
void kind_plugin_close(weft_kind_plugin* p);

/* Register a window's memory with a GIN or RMA plugin as NCCL does: regMrSym with the flags
 * win_flags (NCCL_WIN_*) call for (NCCL_WIN_STRICT_ORDERING → NCCL_NET_MR_FLAG_FORCE_SO). A
 * failure is logged once with the plugin's name and the call. */
ncclResult_t kind_plugin_reg_window(weft_kind_plugin* p, void* coll, void* data, size_t size,
                                    int type, int win_flags, void** mhandle);

#endif
