/* A v3 tuner as the current view: v3 edits the same cost table as v5 but is not told whether
 * buffers are registered, and its init sees no commId, NVLink domains or constants. One v3
 * library at a time (the loader's rule). */
#include <stddef.h>
#include <stdio.h>

#include "plugin/tuner.h"

static const ncclTuner_v3_t* v3;

static ncclResult_t init_v3(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                            ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                            ncclTunerConstants_v5_t* constants) {
  (void)comm_id, (void)nvl, (void)constants;
  return v3->init(nranks, nnodes, log, ctx);
}

static ncclResult_t get_v3(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe_ops, float** table,
                           int nalgo, int nproto, int reg_buff, int* nch) {
  (void)reg_buff;
  return v3->getCollInfo(ctx, coll, nbytes, pipe_ops, table, nalgo, nproto, nch);
}

static ncclResult_t fini_v3(void* ctx) { return v3->destroy(ctx); }

int tuner_shim_v3(const void* raw, ncclTuner_v6_t* view, char* why, size_t len) {
  const ncclTuner_v3_t* t = raw;
  const char* what = !t->name || !t->name[0] ? "name is NULL or empty"
                     : !t->init              ? "init is NULL"
                     : !t->getCollInfo       ? "getCollInfo is NULL"
                     : !t->destroy           ? "destroy is NULL"
                                             : NULL;
  if (what) {
    snprintf(why, len, "%s", what);
    return -1;
  }
  v3 = t;
  *view = (ncclTuner_v6_t){t->name, init_v3, get_v3, fini_v3, NULL};
  return 0;
}
