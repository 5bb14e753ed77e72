/* CollNet tables v6..v12 (kind_shim.h): the check of the entries each version must have, and
 * the calls whose arguments changed (init and finalize at v11). The tables are kept as found;
 * their users switch on the version where widths differ (int counts before v9). */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "plugin/kind_shim.h"

#define NEED(t, f)                        \
  if ((t)->f == NULL) {                   \
    snprintf(why, len, "%s is NULL", #f); \
    return ncclInvalidUsage;              \
  }

/* The entries of the common prefix (same offsets in every version) and the tail of each. */
#define CHECK_COMMON(t)                                                                         \
  NEED(t, init) NEED(t, devices) NEED(t, getProperties) NEED(t, listen) NEED(t, connect)        \
  NEED(t, reduceSupport) NEED(t, regMr) NEED(t, deregMr) NEED(t, iallreduce) NEED(t, iflush)   \
  NEED(t, test) NEED(t, closeColl) NEED(t, closeListen)

ncclResult_t collnet_shim_adapt(const void* table, int version, weft_collnet_view* out,
                                char* why, size_t len) {
  memset(out, 0, sizeof *out);
  if (table == NULL) {
    snprintf(why, len, "no table");
    return ncclInvalidUsage;
  }
  const char* name = *(const char* const*)table; /* every version starts with its name */
  if (name == NULL) {
    snprintf(why, len, "name is NULL");
    return ncclInvalidUsage;
  }
  switch (version) {
    case 6: CHECK_COMMON((const ncclCollNet_v6_t*)table) break;
    case 7: CHECK_COMMON((const ncclCollNet_v7_t*)table) break;
    case 8: CHECK_COMMON((const ncclCollNet_v8_t*)table) break;
    case 9: CHECK_COMMON((const ncclCollNet_v9_t*)table) break;
    case 10: CHECK_COMMON((const ncclCollNet_v10_t*)table) break;
    case 11: {
      const ncclCollNet_v11_t* t = table;
      CHECK_COMMON(t) NEED(t, finalize) break;
    }
    case 12: {
      const ncclCollNet_v12_t* t = table;
      CHECK_COMMON(t) NEED(t, finalize) break;
    }
    default:
      snprintf(why, len, "CollNet version %d is not one weft loads (v%d..v%d)", version,
               WEFT_COLLNET_MIN_VERSION, WEFT_COLLNET_MAX_VERSION);
      return ncclInvalidUsage;
  }
  out->table = table;
  out->version = version;
  out->name = name;
  return ncclSuccess;
}

ncclResult_t collnet_shim_init(const weft_collnet_view* v, void** ctx, uint64_t comm_id,
                               ncclDebugLogger_t logger) {
  *ctx = NULL;
  if (v->version >= 11) return ((const ncclCollNet_v11_t*)v->table)->init(ctx, comm_id, logger);
  return ((const ncclCollNet_v6_t*)v->table)->init(logger);
}

ncclResult_t collnet_shim_finalize(const weft_collnet_view* v, void* ctx) {
  if (v->version >= 11) return ((const ncclCollNet_v11_t*)v->table)->finalize(ctx);
  return ncclSuccess;
}

/* The entries up to iallreduce sit at the same offsets in every version (v6's type reaches
 * them); test, closeColl and closeListen move at v8 (iallgather and ireducescatter come before
 * them), so those go through v6's or v9's type (v8..v12 agree, checked below). */
#define V6(v) ((const ncclCollNet_v6_t*)(v)->table)
#define V9(v) ((const ncclCollNet_v9_t*)(v)->table)
#define V11(v) ((const ncclCollNet_v11_t*)(v)->table)

_Static_assert(offsetof(ncclCollNet_v8_t, test) == offsetof(ncclCollNet_v12_t, test) &&
                   offsetof(ncclCollNet_v8_t, closeListen) ==
                       offsetof(ncclCollNet_v12_t, closeListen) &&
                   offsetof(ncclCollNet_v6_t, iallreduce) ==
                       offsetof(ncclCollNet_v12_t, iallreduce) &&
                   offsetof(ncclCollNet_v6_t, deregMr) == offsetof(ncclCollNet_v12_t, deregMr),
               "the entries collnet_shim reaches through v6's or v9's type");
_Static_assert(offsetof(ncclNetProperties_v6_t, ptrSupport) ==
                       offsetof(ncclNetProperties_v12_t, ptrSupport) &&
                   offsetof(ncclNetProperties_v8_t, ptrSupport) ==
                       offsetof(ncclNetProperties_v12_t, ptrSupport),
               "ptrSupport sits at one offset in every version's properties");

ncclResult_t collnet_shim_ptr_support(const weft_collnet_view* v, int dev, int* ptr_support) {
  /* Room for the largest version's properties; each version writes its own layout. */
  union {
    ncclNetProperties_v6_t v6;
    ncclNetProperties_v12_t v12;
    char pad[1024];
  } props;
  memset(&props, 0, sizeof props);
  ncclResult_t r = ((ncclResult_t(*)(int, void*))(void*)V6(v)->getProperties)(dev, &props);
  if (r == ncclSuccess) *ptr_support = props.v12.ptrSupport;
  return r;
}

ncclResult_t collnet_shim_reduce_support(const weft_collnet_view* v, ncclDataType_t type,
                                         ncclRedOp_t op, int* supported) {
  return V6(v)->reduceSupport(type, op, supported);
}

ncclResult_t collnet_shim_listen(const weft_collnet_view* v, void* ctx, int dev, void* handle,
                                 void** listen_comm) {
  if (v->version >= 11) return V11(v)->listen(ctx, dev, handle, listen_comm);
  return V6(v)->listen(dev, handle, listen_comm);
}

ncclResult_t collnet_shim_connect(const weft_collnet_view* v, void* handles[], int nranks,
                                  int rank, void* listen_comm, void** coll) {
  return V6(v)->connect(handles, nranks, rank, listen_comm, coll);
}

ncclResult_t collnet_shim_reg_mr(const weft_collnet_view* v, void* coll, void* data, size_t size,
                                 int type, void** mhandle) {
  if (v->version >= 8) return V9(v)->regMr(coll, data, size, type, mhandle);
  if (size > INT_MAX) return ncclInvalidArgument;
  return V6(v)->regMr(coll, data, (int)size, type, mhandle);
}

ncclResult_t collnet_shim_dereg_mr(const weft_collnet_view* v, void* coll, void* mhandle) {
  return V6(v)->deregMr(coll, mhandle);
}

ncclResult_t collnet_shim_iallreduce(const weft_collnet_view* v, void* coll, void* send,
                                     void* recv, size_t count, ncclDataType_t type,
                                     ncclRedOp_t op, void* send_mh, void* recv_mh, void** req) {
  if (v->version >= 9)
    return V9(v)->iallreduce(coll, send, recv, count, type, op, send_mh, recv_mh, req);
  if (count > INT_MAX) return ncclInvalidArgument;
  return V6(v)->iallreduce(coll, send, recv, (int)count, type, op, send_mh, recv_mh, req);
}

ncclResult_t collnet_shim_test(const weft_collnet_view* v, void* req, int* done, int* size) {
  if (v->version >= 8) return V9(v)->test(req, done, size);
  return V6(v)->test(req, done, size);
}

ncclResult_t collnet_shim_close_coll(const weft_collnet_view* v, void* coll) {
  if (v->version >= 8) return V9(v)->closeColl(coll);
  return V6(v)->closeColl(coll);
}

ncclResult_t collnet_shim_close_listen(const weft_collnet_view* v, void* listen_comm) {
  if (v->version >= 8) return V9(v)->closeListen(listen_comm);
  return V6(v)->closeListen(listen_comm);
}
