/* A v2 tuner as the current view. v2 chooses instead of editing a cost table: the shim asks it
 * with NCCL's inputs (CollNet / NVLS support read from whether the table has those cells), then
 * marks its choice by zeroing that cell, where the cell is usable; a choice of NCCL_ALGO_UNDEF
 * or NCCL_PROTO_UNDEF means "no opinion" and leaves the table alone. An index outside the tables
 * is a defect: one WARN, and the table stays the model's. init and destroy map one to one (v2
 * sees no commId, NVLink domains or constants). One v2 library at a time (the loader's rule). */
#include <stddef.h>
#include <stdio.h>

#include "plugin/tuner.h"
#include "util/log.h"
#include "util/check.h"

static const ncclTuner_v2_t* v2;

static ncclResult_t init_v2(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                            ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                            ncclTunerConstants_v5_t* constants) {
  (void)comm_id, (void)nvl, (void)constants;
  return v2->init(nranks, nnodes, log, ctx);
}

static ncclResult_t get_v2(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe_ops, float** table,
                           int nalgo, int nproto, int reg_buff, int* nch) {
  (void)reg_buff;
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  int collnet = nalgo > NCCL_ALGO_COLLNET_DIRECT && nproto > NCCL_PROTO_SIMPLE &&
                cost[NCCL_ALGO_COLLNET_DIRECT][NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE;
  int nvls = nalgo > NCCL_ALGO_NVLS && nproto > NCCL_PROTO_SIMPLE &&
             cost[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE;
  int algo = NCCL_ALGO_UNDEF, proto = NCCL_PROTO_UNDEF;
  WEFT_CHECK(v2->getCollInfo(ctx, coll, nbytes, collnet, nvls, pipe_ops, &algo, &proto, nch));
  if (algo == NCCL_ALGO_UNDEF || proto == NCCL_PROTO_UNDEF) return ncclSuccess;
  if (algo < 0 || algo >= nalgo || proto < 0 || proto >= nproto) {
    WARN_ONCE("TUNER/Plugin: %s (v2) chose algorithm %d, protocol %d: not an NCCL_ALGO_*/"
              "NCCL_PROTO_* index; weft's model decides instead",
              v2->name, algo, proto);
    return ncclSuccess;
  }
  if (cost[algo][proto] != NCCL_ALGO_PROTO_IGNORE) cost[algo][proto] = 0.0f;
  return ncclSuccess;
}

static ncclResult_t fini_v2(void* ctx) { return v2->destroy(ctx); }

int tuner_shim_v2(const void* raw, ncclTuner_v6_t* view, char* why, size_t len) {
  const ncclTuner_v2_t* t = raw;
  const char* what = !t->name || !t->name[0] ? "name is NULL or empty"
                     : !t->init              ? "init is NULL"
                     : !t->getCollInfo       ? "getCollInfo is NULL"
                     : !t->destroy           ? "destroy is NULL"
                                             : NULL;
  if (what) {
    snprintf(why, len, "%s", what);
    return -1;
  }
  v2 = t;
  *view = (ncclTuner_v6_t){t->name, init_v2, get_v2, fini_v2, NULL};
  return 0;
}
