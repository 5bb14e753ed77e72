/* The device API's per-layout reading and writing: requirements in, device communicators out,
 * in the layout of the headers each caller compiled against (api_devlayout.h). The 2.29
 * layouts carry what NVIDIA's 2.30.7 library does for 2.29 callers: LSA only, GIN refused. */
#include <stdio.h>
#include <string.h>

#include "api/api_devlayout.h"
#include "util/log.h"

/* Whether a resource requirement of the list asks for GIN signals or counters. */
static bool list_wants_gin(const ncclDevResourceRequirements_v2_30_t* r) {
  for (; r; r = r->next)
    if (r->ginSignalCount > 0 || r->ginCounterCount > 0) return true;
  return false;
}

static ncclResult_t refuse_gin_2_29(const char* fn, int rank, uint32_t version,
                                    const devlayout_reqs* v) {
  WARN("%s: rank %d: reqs comes from NCCL %u.%u.%u headers and asks for GIN (ginForceEnable %d, "
       "ginConnectionType %d, ginSignalCount %d, ginCounterCount %d, barrierCount %d, "
       "railGinBarrierCount %d, or GIN signals in resourceRequirementsList); device "
       "communicators of 2.29 headers are served for LSA only, as NCCL 2.30 serves them: "
       "rebuild the kernels against NCCL 2.30 or later headers", fn, rank, version / 10000,
       version / 100 % 100, version % 100, (int)v->gin_force, v->gin_connection, v->gin_signals,
       v->gin_counters, v->barriers, v->rail_gin_barriers);
  return ncclInvalidUsage;
}

ncclResult_t devlayout_reqs_read(const char* fn, int rank, ncclDevCommLayout_t layout,
                                 const void* reqs, devlayout_reqs* v) {
  memset(v, 0, sizeof *v);
#define READ_2_29(R)                                                                      \
  do {                                                                                    \
    v->list = (const ncclDevResourceRequirements_v2_30_t*)(R)->resourceRequirementsList; \
    v->teams = (const ncclTeamRequirements_v2_30_t*)(R)->teamRequirementsList;           \
    v->lsa_multimem = (R)->lsaMultimem;                                                   \
    v->gin_force = (R)->ginForceEnable;                                                   \
    v->barriers = (R)->barrierCount;                                                      \
    v->lsa_barriers = (R)->lsaBarrierCount;                                               \
    v->rail_gin_barriers = (R)->railGinBarrierCount;                                      \
    v->gin_signals = (R)->ginSignalCount;                                                 \
    v->gin_counters = (R)->ginCounterCount;                                               \
  } while (0)
#define READ_2_30(R)                                                                      \
  do {                                                                                    \
    READ_2_29(R);                                                                         \
    v->gin_connection = (R)->ginConnectionType;                                           \
    v->world_gin_barriers = (R)->worldGinBarrierCount;                                    \
    v->gin_contexts = (R)->ginContextCount;                                               \
  } while (0)
  uint32_t version = ((const ncclDevVersionedHead_t*)reqs)->version;
  switch (layout) {
    case NCCL_DEVCOMM_LAYOUT_V2_29_2: {
      READ_2_29((const ncclDevCommRequirements_v2_29_2_t*)reqs);
      if (v->gin_force || v->gin_signals > 0 || v->gin_counters > 0 || list_wants_gin(v->list))
        return refuse_gin_2_29(fn, rank, version, v);
      /* Before 2.29.4 barrierCount did not imply GIN: it asks for LSA barriers. */
      if (v->barriers > 0) {
        if (v->barriers > v->lsa_barriers) v->lsa_barriers = v->barriers;
        v->barriers = 0;
      }
      v->rail_gin_barriers = 0;
      break;
    }
    case NCCL_DEVCOMM_LAYOUT_V2_29_7: {
      const ncclDevCommRequirements_v2_29_7_t* r = reqs;
      READ_2_29(r);
      v->gin_connection = r->ginConnectionType;
      int gin_resources = v->gin_signals > 0 || v->gin_counters > 0 || v->barriers > 0 ||
                          v->rail_gin_barriers > 0 || list_wants_gin(v->list);
      if (gin_resources && (v->gin_connection != 0 || v->gin_force))
        return refuse_gin_2_29(fn, rank, version, v);
      break;
    }
    case NCCL_DEVCOMM_LAYOUT_V2_30:
      READ_2_30((const ncclDevCommRequirements_v2_30_t*)reqs);
      break;
    case NCCL_DEVCOMM_LAYOUT_V2_32: {
      const ncclDevCommRequirements_v2_32_t* r = reqs;
      READ_2_30(r);
      v->cft_barriers = r->cftBarrierCount;
      v->cft_caps = r->cftCaps;
      break;
    }
    default:
      WARN("%s: rank %d: requirements of version %u have no layout", fn, rank, version);
      return ncclInternalError;
  }
#undef READ_2_30
#undef READ_2_29
  return ncclSuccess;
}

void devlayout_write(ncclDevCommLayout_t layout, const devlayout_fill* f, void* out) {
  /* The LSA part, the same fields in every layout. */
#define FILL_LSA(D)                                                                   \
  do {                                                                                \
    memset((D), 0, sizeof *(D));                                                      \
    (D)->rank = f->rank;                                                              \
    (D)->nRanks = f->nranks;                                                          \
    (D)->nRanks_rcp32 = ncclDevCommRcp32((uint32_t)f->nranks);                        \
    (D)->lsaRank = f->lsa_rank;                                                       \
    (D)->lsaSize = f->lsa_size;                                                       \
    (D)->lsaSize_rcp32 = ncclDevCommRcp32((uint32_t)f->lsa_size);                     \
    (D)->windowTable = f->window_table;                                               \
    (D)->resourceWindow = f->resource_window;                                         \
    (D)->resourceWindow_inlined.lsaFlatBase = f->flat;                                \
    (D)->resourceWindow_inlined.stride4G = f->stride4g;                               \
    (D)->lsaBarrier.bufHandle = f->lsa_handle;                                        \
    (D)->lsaBarrier.nBarriers = f->lsa_barriers;                                      \
  } while (0)
#define FILL_VERSIONED(D)                                                             \
  do {                                                                                \
    FILL_LSA(D);                                                                      \
    (D)->magic = NCCL_API_MAGIC;                                                      \
    (D)->version = f->version;                                                        \
    (D)->hybridLsaBarrier.bufHandle = f->hybrid_handle;                               \
    (D)->abortFlag = f->abort_flag;                                                   \
  } while (0)
  switch (layout) {
    case NCCL_DEVCOMM_LAYOUT_V2_29_2: {
      ncclDevComm_v2_29_2_t* d = out;
      FILL_LSA(d);
      break;
    }
    case NCCL_DEVCOMM_LAYOUT_V2_29_7: {
      ncclDevComm_v2_29_7_t* d = out;
      FILL_LSA(d);
      d->abortFlag = f->abort_flag;
      break;
    }
    case NCCL_DEVCOMM_LAYOUT_V2_30: {
      ncclDevComm_v2_30_t* d = out;
      FILL_VERSIONED(d);
      if (f->gin_handle) { /* one proxy connection, every rank (NCCL_GIN_CONNECTION_FULL) */
        d->ginConnectionCount = 1;
        d->ginNetDeviceTypes[0] = NCCL_GIN_TYPE_PROXY;
        d->ginHandles[0] = f->gin_handle;
        d->ginSignalCount = f->gin_signals;
        d->ginCounterCount = f->gin_counters;
        d->ginSignalShadows = f->gin_shadows;
        d->ginContextCount = (uint32_t)f->gin_contexts;
        d->worldGinBarrier.signal0 = f->world_gin_signal0;
        d->railGinBarrier.signal0 = f->rail_gin_signal0;
      }
      break;
    }
    case NCCL_DEVCOMM_LAYOUT_V2_32: {
      ncclDevComm_v2_32_t* d = out;
      FILL_VERSIONED(d);
      break;
    }
    default:
      break;
  }
#undef FILL_VERSIONED
#undef FILL_LSA
}

void devlayout_read(ncclDevCommLayout_t layout, const void* devComm, int* rank, int* nranks,
                    uintptr_t* resource_window) {
#define READ(T)                                        \
  do {                                                 \
    const T* d = devComm;                              \
    *rank = d->rank;                                   \
    *nranks = d->nRanks;                               \
    *resource_window = d->resourceWindow;              \
  } while (0)
  switch (layout) {
    case NCCL_DEVCOMM_LAYOUT_V2_29_2: READ(ncclDevComm_v2_29_2_t); break;
    case NCCL_DEVCOMM_LAYOUT_V2_29_7: READ(ncclDevComm_v2_29_7_t); break;
    case NCCL_DEVCOMM_LAYOUT_V2_30: READ(ncclDevComm_v2_30_t); break;
    case NCCL_DEVCOMM_LAYOUT_V2_32: READ(ncclDevComm_v2_32_t); break;
    default:
      *rank = *nranks = -1;
      *resource_window = 0;
      break;
  }
#undef READ
}

int devlayout_gin_contexts(ncclDevCommLayout_t layout, const void* devComm) {
  if (layout != NCCL_DEVCOMM_LAYOUT_V2_30) return 0; /* GIN is served to 2.30 callers only */
  const ncclDevComm_v2_30_t* d = devComm;
  return d->ginConnectionCount ? (int)d->ginContextCount : 0;
}
