/* ncclConfig_t resolution: copy what the caller's struct holds (its size and version say how
 * much of it is meaningful), validate, fill defaults, then let the environment override, as
 * NCCL does. */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "comm/comm.h"
#include "util/check.h"
#include "util/param.h"

#define UNDEF NCCL_CONFIG_UNDEF_INT

/* Fields a caller's header predates are reset to undefined (it never set them). */
static void reset_newer_fields(ncclConfig_t* c) {
  unsigned v = c->version;
  if (v < (unsigned)NCCL_VERSION(2, 14, 0)) c->blocking = UNDEF;
  if (v < (unsigned)NCCL_VERSION(2, 17, 0)) {
    c->cgaClusterSize = UNDEF;
    c->minCTAs = UNDEF;
    c->maxCTAs = UNDEF;
    c->netName = NULL;
  }
  if (v < (unsigned)NCCL_VERSION(2, 18, 0)) c->splitShare = UNDEF;
  if (v < (unsigned)NCCL_VERSION(2, 19, 0)) c->commName = NULL;
  if (v < (unsigned)NCCL_VERSION(2, 25, 0)) c->trafficClass = UNDEF;
  if (v < (unsigned)NCCL_VERSION(2, 27, 0)) {
    c->collnetEnable = UNDEF;
    c->CTAPolicy = UNDEF;
    c->shrinkShare = UNDEF;
    c->nvlsCTAs = UNDEF;
  }
  if (v < (unsigned)NCCL_VERSION(2, 28, 0)) {
    c->nChannelsPerNetPeer = UNDEF;
    c->nvlinkCentricSched = UNDEF;
  }
}

/* An env override (when set) replaces the field; then undefined becomes the default. */
static void apply_int(int* field, weft_param_id id) {
  if (param_is_set(id) || *field == UNDEF) *field = (int)param_int(id);
}

static ncclResult_t check_range(const char* fn, const char* field, int v, int lo, int hi) {
  if (v == UNDEF) return ncclSuccess;
  if (v < lo || v > hi) {
    WARN("%s: config.%s = %d is out of range [%d, %d]", fn, field, v, lo, hi);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* NCCL 2.29-2.30's fields, accepted (checked as NCCL checks them) and read by size only. What
 * each promises holds in weft without it: graphUsageMode (weft keeps no per-graph state, so
 * graphs and plain launches mix on any communicator), graphStreamOrdering 0 (weft puts a
 * communicator's kernels on the capture stream and orders nothing across communicators, which
 * is what 0 asks). What weft does not do is said once per call: numRmaCtx (one-sided contexts
 * are not counted or reserved), maxP2pPeers (send/recv peers are not capped), and
 * graphStreamOrdering 1 (NCCL's cross-communicator serialization of captured kernels). */
static void warn_ignored(const char* fn, const ncclConfig_t* c) {
  if (c->numRmaCtx != UNDEF)
    WARN("%s: config.numRmaCtx = %d is accepted and ignored: weft reserves no one-sided "
         "contexts",
         fn, c->numRmaCtx);
  if (c->maxP2pPeers != UNDEF)
    WARN("%s: config.maxP2pPeers = %d is accepted and ignored: weft does not cap the peers a "
         "rank talks to at once",
         fn, c->maxP2pPeers);
  if (c->graphStreamOrdering == 1)
    WARN("%s: config.graphStreamOrdering = 1 is accepted and ignored: weft does not serialize "
         "captured kernels across communicators; order them through your streams",
         fn);
}

ncclResult_t comm_config_resolve(const ncclConfig_t* user, const char* fn, ncclConfig_t* out) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  if (user != NULL) {
    if (user->size < offsetof(ncclConfig_t, blocking)) {
      WARN("%s: config.size = %zu is too small (did you start from NCCL_CONFIG_INITIALIZER?)",
           fn, user->size);
      return ncclInvalidArgument;
    }
    if (user->magic != NCCL_API_MAGIC) {
      WARN("%s: config.magic = 0x%x, expected 0x%x (start from NCCL_CONFIG_INITIALIZER)", fn,
           user->magic, NCCL_API_MAGIC);
      return ncclInvalidArgument;
    }
    size_t n = user->size < sizeof c ? user->size : sizeof c;
    memcpy(&c, user, n);
    c.size = sizeof c;
    reset_newer_fields(&c); /* the 2.29-2.30 fields past a shorter size stay unset */
  }
  WEFT_CHECK(check_range(fn, "blocking", c.blocking, 0, 1));
  WEFT_CHECK(check_range(fn, "cgaClusterSize", c.cgaClusterSize, 0, 8));
  WEFT_CHECK(check_range(fn, "minCTAs", c.minCTAs, 1, 64));
  WEFT_CHECK(check_range(fn, "maxCTAs", c.maxCTAs, 1, 64));
  WEFT_CHECK(check_range(fn, "splitShare", c.splitShare, 0, 1));
  WEFT_CHECK(check_range(fn, "collnetEnable", c.collnetEnable, 0, 1));
  WEFT_CHECK(check_range(fn, "CTAPolicy", c.CTAPolicy, 0, 2));
  WEFT_CHECK(check_range(fn, "shrinkShare", c.shrinkShare, 0, 1));
  WEFT_CHECK(check_range(fn, "nvlsCTAs", c.nvlsCTAs, 1, 64));
  WEFT_CHECK(check_range(fn, "nChannelsPerNetPeer", c.nChannelsPerNetPeer, 1, 64));
  WEFT_CHECK(check_range(fn, "nvlinkCentricSched", c.nvlinkCentricSched, 0, 1));
  WEFT_CHECK(check_range(fn, "graphUsageMode", c.graphUsageMode, 0, 2));
  WEFT_CHECK(check_range(fn, "numRmaCtx", c.numRmaCtx, 0, INT_MAX));
  WEFT_CHECK(check_range(fn, "maxP2pPeers", c.maxP2pPeers, 1, INT_MAX));
  WEFT_CHECK(check_range(fn, "graphStreamOrdering", c.graphStreamOrdering, 0, 1));
  if (c.graphStreamOrdering == 0 && c.graphUsageMode == 2) /* NCCL accepts it too */
    WARN("%s: config.graphStreamOrdering = 0 with graphUsageMode = 2: NCCL documents the pair "
         "as unsupported (use graphUsageMode 0 or 1); weft runs it as it runs either alone",
         fn);
  if (c.trafficClass != UNDEF && c.trafficClass < 0) {
    WARN("%s: config.trafficClass = %d must be >= 0", fn, c.trafficClass);
    return ncclInvalidArgument;
  }
  if (c.minCTAs != UNDEF && c.maxCTAs != UNDEF && c.minCTAs > c.maxCTAs) {
    WARN("%s: config.minCTAs = %d is larger than config.maxCTAs = %d", fn, c.minCTAs, c.maxCTAs);
    return ncclInvalidArgument;
  }

  apply_int(&c.blocking, WEFT_PARAM_COMM_BLOCKING);
  apply_int(&c.cgaClusterSize, WEFT_PARAM_CGA_CLUSTER_SIZE);
  apply_int(&c.minCTAs, WEFT_PARAM_MIN_CTAS);
  apply_int(&c.maxCTAs, WEFT_PARAM_MAX_CTAS);
  apply_int(&c.splitShare, WEFT_PARAM_SPLIT_SHARE);
  if (c.maxCTAs < c.minCTAs) c.maxCTAs = c.minCTAs;
  if (param_is_set(WEFT_PARAM_NET)) c.netName = param_str(WEFT_PARAM_NET);
  apply_int(&c.collnetEnable, WEFT_PARAM_COLLNET_ENABLE);
  if (c.CTAPolicy == UNDEF) c.CTAPolicy = NCCL_CTA_POLICY_DEFAULT;
  if (c.shrinkShare == UNDEF) c.shrinkShare = 0;
  if (c.nvlinkCentricSched == UNDEF) c.nvlinkCentricSched = 0;
  /* NCCL 2.29-2.30's fields: its environment overrides, then what weft does not do is said. */
  if (param_int(WEFT_PARAM_GRAPH_MIXING_SUPPORT) >= 0)
    c.graphUsageMode = param_int(WEFT_PARAM_GRAPH_MIXING_SUPPORT) ? 2 : 0;
  if (param_int(WEFT_PARAM_NUM_RMA_CTX) >= 0)
    c.numRmaCtx = (int)param_int(WEFT_PARAM_NUM_RMA_CTX);
  if (param_int(WEFT_PARAM_P2P_MAX_PEERS) > 0)
    c.maxP2pPeers = (int)param_int(WEFT_PARAM_P2P_MAX_PEERS);
  if (param_int(WEFT_PARAM_GRAPH_STREAM_ORDERING) >= 0)
    c.graphStreamOrdering = (int)param_int(WEFT_PARAM_GRAPH_STREAM_ORDERING);
  warn_ignored(fn, &c);
  /* trafficClass, nvlsCTAs and nChannelsPerNetPeer stay UNDEF: "auto" for the layers below. */
  *out = c;
  return ncclSuccess;
}
