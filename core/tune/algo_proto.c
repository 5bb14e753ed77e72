/* NCCL_ALGO / NCCL_PROTO parsing and the choice of (algorithm, protocol, channels).
 *
 * Grammar semantics (NCCL's): the optional unprefixed first entry sets the list of every
 * collective; each `func:list` entry then replaces that collective's list. A list is the names
 * it holds, or with a leading '^' every name except those. Empty entries and empty elements
 * (";;", ",,") are skipped; an entry with a prefix but no names is an error.
 *
 * Choice: a rule model until the cost model lands. For each allowed (algo, proto) the predicted
 * time is  latency(algo, proto, nranks) + wire_bytes(algo, func, nbytes, nranks) / bw(proto, nch)
 * with host-mode constants below; the cheapest wins (ties: lower algo, then lower proto id). */
#include "tune/algo_proto.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

static const char* const algo_names[NCCL_NUM_ALGORITHMS] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
static const char* const proto_names[NCCL_NUM_PROTOCOLS] = {"LL", "LL128", "Simple"};
static const char* const func_names[WEFT_NUM_COLL_FUNCS] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

const char* tune_algo_name(int algo) {
  return (algo >= 0 && algo < NCCL_NUM_ALGORITHMS) ? algo_names[algo] : "Unknown";
}

const char* tune_proto_name(int proto) {
  return (proto >= 0 && proto < NCCL_NUM_PROTOCOLS) ? proto_names[proto] : "Unknown";
}

const char* tune_func_name(int func) {
  return (func >= 0 && func < WEFT_NUM_COLL_FUNCS) ? func_names[func] : "Unknown";
}

/* ---- parsing ------------------------------------------------------------------------------ */

#define SPEC_MAX 1024

/* Trim spaces in place; returns the trimmed start. */
static char* trim(char* s) {
  while (isspace((unsigned char)*s)) s++;
  char* e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

static int lookup(const char* const* names, int n, const char* tok) {
  for (int i = 0; i < n; i++)
    if (strcasecmp(names[i], tok) == 0) return i;
  return -1;
}

/* Parse one comma list into a bit mask over names[0..n). */
static ncclResult_t parse_elems(const char* var, const char* spec, char* list,
                                const char* const* names, int n, unsigned* out) {
  list = trim(list);
  int negate = 0;
  if (*list == '^') {
    negate = 1;
    list = trim(list + 1);
  }
  unsigned bits = 0;
  int count = 0;
  char* save = NULL;
  for (char* tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    tok = trim(tok);
    if (*tok == '\0') continue;
    int i = lookup(names, n, tok);
    if (i < 0) {
      WARN("%s=\"%s\": unknown name \"%s\"", var, spec, tok);
      return ncclInvalidUsage;
    }
    bits |= 1u << i;
    count++;
  }
  if (count == 0) {
    WARN("%s=\"%s\": an entry lists no names", var, spec);
    return ncclInvalidUsage;
  }
  unsigned all = (1u << n) - 1;
  *out = negate ? (all & ~bits) : bits;
  return ncclSuccess;
}

/* Parse `spec` of variable `var` into masks[0..WEFT_NUM_COLL_FUNCS). */
static ncclResult_t parse_spec(const char* var, const char* spec, const char* const* names,
                               int n, unsigned masks[WEFT_NUM_COLL_FUNCS]) {
  unsigned all = (1u << n) - 1;
  unsigned res[WEFT_NUM_COLL_FUNCS];
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) res[f] = all;
  if (spec != NULL) {
    size_t len = strlen(spec);
    if (len >= SPEC_MAX) {
      WARN("%s: value too long (%zu characters, at most %d)", var, len, SPEC_MAX - 1);
      return ncclInvalidUsage;
    }
    char buf[SPEC_MAX];
    memcpy(buf, spec, len + 1);
    int first = 1;
    char* save = NULL;
    for (char* ent = strtok_r(buf, ";", &save); ent; ent = strtok_r(NULL, ";", &save)) {
      ent = trim(ent);
      if (*ent == '\0') continue;
      char* colon = strchr(ent, ':');
      int func = -1;
      char* list = ent;
      if (colon != NULL) {
        *colon = '\0';
        char* prefix = trim(ent);
        func = lookup(func_names, WEFT_NUM_COLL_FUNCS, prefix);
        if (func < 0) {
          WARN("%s=\"%s\": unknown collective \"%s\"", var, spec, prefix);
          return ncclInvalidUsage;
        }
        list = colon + 1;
      } else if (!first) {
        WARN("%s=\"%s\": only the first entry may omit the collective prefix (\"%s\")", var,
             spec, ent);
        return ncclInvalidUsage;
      }
      first = 0;
      unsigned bits;
      ncclResult_t r = parse_elems(var, spec, list, names, n, &bits);
      if (r != ncclSuccess) return r;
      if (func < 0) {
        for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) res[f] = bits;
      } else {
        res[func] = bits;
      }
    }
  }
  memcpy(masks, res, sizeof res);
  return ncclSuccess;
}

ncclResult_t tune_parse_masks(const char* algo_spec, const char* proto_spec,
                              weft_algo_proto_mask* out) {
  weft_algo_proto_mask m;
  ncclResult_t r = parse_spec("NCCL_ALGO", algo_spec, algo_names, NCCL_NUM_ALGORITHMS, m.algo);
  if (r != ncclSuccess) return r;
  r = parse_spec("NCCL_PROTO", proto_spec, proto_names, NCCL_NUM_PROTOCOLS, m.proto);
  if (r != ncclSuccess) return r;
  *out = m;
  return ncclSuccess;
}

/* ---- choice ------------------------------------------------------------------------------- */

/* Which algorithms can run a collective at all (NCCL's applicability, independent of caps). */
static unsigned func_algos(ncclFunc_t func) {
  const unsigned ring = 1u << NCCL_ALGO_RING;
  switch (func) {
    case ncclFuncAllReduce:
      return ring | (1u << NCCL_ALGO_TREE) | (1u << NCCL_ALGO_COLLNET_DIRECT) |
             (1u << NCCL_ALGO_COLLNET_CHAIN) | (1u << NCCL_ALGO_NVLS) |
             (1u << NCCL_ALGO_NVLS_TREE);
    case ncclFuncAllGather:
    case ncclFuncReduceScatter:
      return ring | (1u << NCCL_ALGO_COLLNET_DIRECT) | (1u << NCCL_ALGO_NVLS) |
             (1u << NCCL_ALGO_PAT);
    default:
      return ring;  /* Broadcast, Reduce */
  }
}

/* Protocols an algorithm implements: CollNet, NVLS and PAT are Simple only. */
static unsigned algo_protos(int algo) {
  if (algo == NCCL_ALGO_RING || algo == NCCL_ALGO_TREE) return (1u << NCCL_NUM_PROTOCOLS) - 1;
  return 1u << NCCL_PROTO_SIMPLE;
}

/* Host-mode constants (µs, GB/s = bytes/ns … expressed as bytes per µs below).
 * Per hop latency: LL polls one flag per 8 B and needs no separate fence/tail update, so it is
 * the cheapest to start; Simple pays a head/tail handshake. Bandwidth per channel: LL carries
 * 8 B of payload per 16 B line (half of Simple), LL128 120 of 128 B. */
static const double hop_lat_us[NCCL_NUM_PROTOCOLS] = {1.5, 2.5, 5.0};
static const double base_lat_us[NCCL_NUM_ALGORITHMS] = {6.0, 5.0, 8.0, 8.0, 10.0, 10.0, 8.0};
#define SIMPLE_BW_PER_CH 4000.0 /* bytes per µs (4 GB/s) through one host channel */
static const double proto_bw_factor[NCCL_NUM_PROTOCOLS] = {0.5, 120.0 / 128.0, 1.0};
/* Bytes per channel before another channel pays for its start-up cost. */
#define BYTES_PER_CHANNEL (128u * 1024u)

static int log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n) l++;
  return l;
}

/* Predicted time in µs; nbytes is the per-rank buffer size. */
static double predict_us(int algo, int proto, ncclFunc_t func, double nbytes, int nranks,
                         int nch) {
  double n = nranks;
  double bw = SIMPLE_BW_PER_CH * proto_bw_factor[proto] * nch;
  double lat = base_lat_us[algo], wire = nbytes;
  switch (algo) {
    case NCCL_ALGO_RING: {
      /* Steps around the ring, and bytes each rank sends. */
      double steps = (func == ncclFuncAllReduce) ? 2 * (n - 1)
                     : (func == ncclFuncAllGather || func == ncclFuncReduceScatter) ? n - 1
                                                                                      : n;
      lat += steps * hop_lat_us[proto];
      wire = (func == ncclFuncAllReduce) ? 2 * (n - 1) / n * nbytes
             : (func == ncclFuncAllGather || func == ncclFuncReduceScatter) ? (n - 1) / n * nbytes
                                                                              : nbytes;
      break;
    }
    case NCCL_ALGO_TREE:
      /* Up then down the tree: 2·depth hops; each link carries the data both ways, and the
       * tree pattern reaches ~85% of a ring's link use. */
      lat += 2 * log2_ceil(nranks) * hop_lat_us[proto];
      wire = 2 * nbytes / 0.85;
      break;
    case NCCL_ALGO_PAT:
      lat += log2_ceil(nranks) * hop_lat_us[proto];
      wire = (n - 1) / n * nbytes / 0.75;
      break;
    default:  /* CollNet*, NVLS*: offloaded reduction, a fixed few hops */
      lat += 2 * hop_lat_us[proto];
      wire = nbytes;
      break;
  }
  return lat + wire / bw;
}

static int format_bits(char* buf, size_t len, unsigned bits, const char* const* names, int n) {
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (!(bits & (1u << i))) continue;
    int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[i]);
    if (w < 0 || (size_t)w >= len - off) break;
    off += (size_t)w;
  }
  if (off == 0) snprintf(buf, len, "none");
  return 0;
}

ncclResult_t tune_choose(const weft_algo_proto_mask* mask, const weft_exec_caps* caps,
                         ncclFunc_t func, size_t nbytes, int nranks, weft_choice* out) {
  if (mask == NULL || caps == NULL || out == NULL || (int)func < 0 ||
      (int)func >= WEFT_NUM_COLL_FUNCS || nranks < 1) {
    WARN("tune_choose: invalid arguments (func %d, nranks %d)", (int)func, nranks);
    return ncclInvalidArgument;
  }
  unsigned algos = mask->algo[func] & caps->algos & func_algos(func);
  unsigned protos = mask->proto[func] & caps->protos;
  int max_ch = caps->max_channels > 0 ? caps->max_channels : 1;
  size_t want = nbytes / BYTES_PER_CHANNEL;
  int nch = want < 1 ? 1 : (want > (size_t)max_ch ? max_ch : (int)want);

  int best_a = -1, best_p = -1;
  double best = 0;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
    if (!(algos & (1u << a))) continue;
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      if (!(protos & algo_protos(a) & (1u << p))) continue;
      /* One rank: nothing moves; Ring/Simple is the no-op path (NCCL does the same). */
      double t = nranks == 1 ? (a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE ? 0.0 : 1.0)
                             : predict_us(a, p, func, (double)nbytes, nranks, nch);
      if (best_a < 0 || t < best) {
        best = t;
        best_a = a;
        best_p = p;
      }
    }
  }
  if (best_a < 0) {
    char ma[128], mp[64], ca[128], cp[64];
    format_bits(ma, sizeof ma, mask->algo[func], algo_names, NCCL_NUM_ALGORITHMS);
    format_bits(mp, sizeof mp, mask->proto[func], proto_names, NCCL_NUM_PROTOCOLS);
    format_bits(ca, sizeof ca, caps->algos & func_algos(func), algo_names, NCCL_NUM_ALGORITHMS);
    format_bits(cp, sizeof cp, caps->protos, proto_names, NCCL_NUM_PROTOCOLS);
    WARN("%s: no algorithm/protocol left: NCCL_ALGO allows %s, NCCL_PROTO allows %s; this "
         "executor runs %s with %s",
         func_names[func], ma, mp, ca, cp);
    return ncclInvalidUsage;
  }
  out->algo = best_a;
  out->proto = best_p;
  out->nchannels = nch;
  return ncclSuccess;
}
