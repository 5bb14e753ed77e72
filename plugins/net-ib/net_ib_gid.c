/* GID choice for a port. InfiniBand: NCCL_IB_GID_INDEX, else 0 (QPs use LIDs; the GID only
 * matters across subnets). RoCE: NCCL_IB_GID_INDEX, else the entry that best fits
 * NCCL_IB_ROCE_VERSION_NUM (default 2, routable UDP encapsulation) and NCCL_IB_ADDR_FAMILY
 * (default AF_INET: IPv4-mapped GIDs), global addresses before link-local ones, lowest index on
 * a tie. A GID's RoCE version comes from ibv_query_gid_ex when the library has it, else from
 * sysfs (gid_attrs/types). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "net_ib_internal.h"
#include "util/param.h"

const char* net_ib_gid_str(const union ibv_gid* gid, char* buf, size_t len) {
  if (inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len) == NULL) snprintf(buf, len, "?");
  return buf;
}

static int gid_is_zero(const union ibv_gid* g) {
  static const uint8_t zero[16];
  return memcmp(g->raw, zero, 16) == 0;
}

static int gid_is_v4(const union ibv_gid* g) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(g->raw, prefix, 12) == 0;
}

static int gid_is_link_local(const union ibv_gid* g) {
  return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

/* 1 or 2 for RoCE v1/v2, 0 for an IB GID, -1 unknown. */
static int gid_version(ib_dev* d, int index) {
  const ib_verbs* v = net_ib_verbs();
  if (v->query_gid_ex) {
    struct ibv_gid_entry e;
    memset(&e, 0, sizeof e);
    if (v->query_gid_ex(d->hw->ctx, (uint32_t)d->port, (uint32_t)index, &e, 0, sizeof e) == 0)
      return e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 2 : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? 1 : 0;
    return -1;
  }
  char path[256], text[32] = "";
  snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d",
           d->hw->name, d->port, index);
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  if (fgets(text, sizeof text, f) == NULL) text[0] = '\0';
  fclose(f);
  if (strncasecmp(text, "RoCE v2", 7) == 0) return 2;
  if (strstr(text, "v1") != NULL) return 1;
  return -1;
}

ncclResult_t net_ib_gid_select(ib_dev* d, int gid_tbl_len) {
  const ib_verbs* v = net_ib_verbs();
  int forced = (int)param_int(WEFT_PARAM_IB_GID_INDEX);
  int eth = d->link_layer == IBV_LINK_LAYER_ETHERNET;
  char g[64];
  if (forced >= 0 || !eth) {
    int index = forced >= 0 ? forced : 0;
    union ibv_gid gid;
    if (index >= gid_tbl_len || v->query_gid(d->hw->ctx, (uint8_t)d->port, index, &gid) != 0 ||
        (eth && gid_is_zero(&gid))) {
      IB_WARN("NET/IB: %s:%d: GID index %d (NCCL_IB_GID_INDEX) is not a valid entry of the "
              "%d-entry GID table; port skipped", d->name, d->port, index, gid_tbl_len);
      return ncclInvalidUsage;
    }
    d->gid_index = index;
    d->gid = gid;
    d->roce_version = eth ? gid_version(d, index) : 0;
    if (eth && d->roce_version < 0) d->roce_version = 1;
    if (eth)
      IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: %s:%d: RoCE v%d GID index %d (%s, NCCL_IB_GID_INDEX)",
              d->name, d->port, d->roce_version, index, net_ib_gid_str(&gid, g, sizeof g));
    return ncclSuccess;
  }
  int want_version = (int)param_int(WEFT_PARAM_IB_ROCE_VERSION_NUM);
  const char* fam = param_str(WEFT_PARAM_IB_ADDR_FAMILY);
  int want_v4 = strcasecmp(fam, "AF_INET6") != 0;
  int best = -1, best_score = -1, best_version = 0;
  union ibv_gid best_gid;
  memset(&best_gid, 0, sizeof best_gid);
  for (int i = 0; i < gid_tbl_len; i++) {
    union ibv_gid gid;
    if (v->query_gid(d->hw->ctx, (uint8_t)d->port, i, &gid) != 0 || gid_is_zero(&gid)) continue;
    int version = gid_version(d, i);
    if (version == 0) continue; /* not a RoCE entry */
    int score = (version == want_version ? 4 : 0) + (gid_is_v4(&gid) == want_v4 ? 2 : 0) +
                (gid_is_link_local(&gid) ? 0 : 1);
    if (score > best_score) {
      best = i;
      best_score = score;
      best_gid = gid;
      best_version = version;
    }
  }
  if (best < 0) {
    IB_WARN("NET/IB: %s:%d: no usable RoCE GID in the %d-entry table; port skipped", d->name,
            d->port, gid_tbl_len);
    return ncclSystemError;
  }
  d->gid_index = best;
  d->gid = best_gid;
  d->roce_version = best_version > 0 ? best_version : 1;
  if (best_version != want_version)
    IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: %s:%d: no RoCE v%d GID, using v%d index %d (%s)",
            d->name, d->port, want_version, d->roce_version, best, net_ib_gid_str(&best_gid, g, sizeof g));
  else
    IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: %s:%d: RoCE v%d GID index %d (%s)", d->name, d->port,
            d->roce_version, best, net_ib_gid_str(&best_gid, g, sizeof g));
  return ncclSuccess;
}
