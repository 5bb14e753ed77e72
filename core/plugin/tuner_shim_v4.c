/* A v4 tuner as the current view: getCollInfo is v5's; init sees no commId, NVLink domains or
 * constants, and destroy plays finalize. One v4 library at a time (the loader's rule). */
#include <stddef.h>
#include <stdio.h>

#include "plugin/tuner.h"

static const ncclTuner_v4_t* v4;

static ncclResult_t init_v4(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                            ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                            ncclTunerConstants_v5_t* constants) {
  (void)comm_id, (void)nvl, (void)constants;
  return v4->init(nranks, nnodes, log, ctx);
}

static ncclResult_t fini_v4(void* ctx) { return v4->destroy(ctx); }

int tuner_shim_v4(const void* raw, ncclTuner_v6_t* view, char* why, size_t len) {
  const ncclTuner_v4_t* t = raw;
  const char* what = !t->name || !t->name[0] ? "name is NULL or empty"
                     : !t->init              ? "init is NULL"
                     : !t->getCollInfo       ? "getCollInfo is NULL"
                     : !t->destroy           ? "destroy is NULL"
                                             : NULL;
  if (what) {
    snprintf(why, len, "%s", what);
    return -1;
  }
  v4 = t;
  /* getCollInfo has v5's signature already. */
  *view = (ncclTuner_v6_t){t->name, init_v4, t->getCollInfo, fini_v4, NULL};
  return 0;
}
