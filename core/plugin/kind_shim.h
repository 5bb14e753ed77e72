/* The GIN, RMA and CollNet tables of every version weft loads, seen through one view each:
 *
 *  - weft_gin_view: the GIN control path as v15's table (every entry non-NULL after adapting),
 *    and, for v11..v13 (which still had host-initiated puts), those puts as an RMA v15 table
 *    (has_host_rma). v14 and v15 move data only from GPU code: has_host_rma is 0.
 *  - ncclRma_v15_t: the RMA table, v13 (the GIN v13 shape) and v14 adapted.
 *  - weft_collnet_view: the CollNet table as found (v6..v12 differ in argument widths) with its
 *    version; the entries every version shares are checked.
 *
 * Adapting an older version keeps the original table in a slot of its version (one table per
 * old version at a time, as NCCL), so the entries can forward to it. What each adapter does is
 * NCCL's choice where NCCL made one: a v14 GIN gets rankStride 1; a v11 GIN refuses a second
 * context or connection; a v13 RMA drops isStrongSignal (all its signals are strong); a v14 RMA
 * drops optFlags (it completes each request on its own). Built into libweft and, alone, into
 * weft_kindshim for the conformance suite. */
#ifndef WEFT_PLUGIN_KIND_SHIM_H
#define WEFT_PLUGIN_KIND_SHIM_H

#include <stddef.h>

#include "nccl_collnet.h"
#include "nccl_gin.h"
#include "nccl_rma.h"

#define WEFT_GIN_MIN_VERSION 11
#define WEFT_GIN_MAX_VERSION 15
#define WEFT_RMA_MIN_VERSION 13
#define WEFT_RMA_MAX_VERSION 15
#define WEFT_COLLNET_MIN_VERSION 6
#define WEFT_COLLNET_MAX_VERSION 12

typedef struct {
  ncclGin_v15_t gin;
  int has_host_rma; /* v11..v13: rma below drives the plugin's host puts */
  ncclRma_v15_t rma;
  int version;
} weft_gin_view;

typedef struct {
  const void* table; /* the plugin's ncclCollNet_vN_t */
  int version;
  const char* name;
} weft_collnet_view;

/* "ncclGinPlugin_v13", "ncclRmaPlugin_v14", "ncclCollNetPlugin_v9" (static strings). */
const char* gin_shim_symbol(int version);
const char* rma_shim_symbol(int version);
const char* collnet_shim_symbol(int version);

/* Adapt table (of the given version) into out. ncclInvalidUsage with why ("iput is NULL") when
 * a mandatory entry is NULL or the version is unknown. */
ncclResult_t gin_shim_adapt(const void* table, int version, weft_gin_view* out, char* why,
                            size_t len);
ncclResult_t rma_shim_adapt(const void* table, int version, ncclRma_v15_t* out, char* why,
                            size_t len);
ncclResult_t collnet_shim_adapt(const void* table, int version, weft_collnet_view* out,
                                char* why, size_t len);

/* CollNet calls whose arguments differ by version, for the view's users. */
ncclResult_t collnet_shim_init(const weft_collnet_view* v, void** ctx, uint64_t comm_id,
                               ncclDebugLogger_t logger);
ncclResult_t collnet_shim_finalize(const weft_collnet_view* v, void* ctx);
/* The data path's calls (plan/plan_collnet.c), each the version's entry with its widths: v6..v10
 * listen without a context; v6..v8 iallreduce an int count (counts above INT_MAX refused with
 * ncclInvalidArgument); v6, v7 regMr an int size (likewise). ptr_support: dev's ptrSupport
 * (NCCL_PTR_*), read from the properties' common prefix. */
ncclResult_t collnet_shim_ptr_support(const weft_collnet_view* v, int dev, int* ptr_support);
ncclResult_t collnet_shim_reduce_support(const weft_collnet_view* v, ncclDataType_t type,
                                         ncclRedOp_t op, int* supported);
ncclResult_t collnet_shim_listen(const weft_collnet_view* v, void* ctx, int dev, void* handle,
                                 void** listen_comm);
ncclResult_t collnet_shim_connect(const weft_collnet_view* v, void* handles[], int nranks,
                                  int rank, void* listen_comm, void** coll);
ncclResult_t collnet_shim_reg_mr(const weft_collnet_view* v, void* coll, void* data, size_t size,
                                 int type, void** mhandle);
ncclResult_t collnet_shim_dereg_mr(const weft_collnet_view* v, void* coll, void* mhandle);
ncclResult_t collnet_shim_iallreduce(const weft_collnet_view* v, void* coll, void* send,
                                     void* recv, size_t count, ncclDataType_t type,
                                     ncclRedOp_t op, void* send_mh, void* recv_mh, void** req);
ncclResult_t collnet_shim_test(const weft_collnet_view* v, void* req, int* done, int* size);
ncclResult_t collnet_shim_close_coll(const weft_collnet_view* v, void* coll);
ncclResult_t collnet_shim_close_listen(const weft_collnet_view* v, void* listen_comm);

/* The regMrSym flags for a window registered with winFlags (NCCL_WIN_*): FORCE_SO for
 * NCCL_WIN_STRICT_ORDERING, as NCCL passes them. */
uint64_t kind_shim_win_mr_flags(int win_flags);

#endif
