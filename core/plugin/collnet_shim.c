/* CollNet tables v6..v12 (kind_shim.h): the check of the entries each version must have, and
 * the calls whose arguments changed (init and finalize at v11). The tables are kept as found;
 * their users switch on the version where widths differ (int counts before v9). */
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
