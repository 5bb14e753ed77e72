/* NCCL_ALGO / NCCL_PROTO parsing and the choice of (algorithm, protocol, channels).
 *
 * Grammar semantics (NCCL's): the optional unprefixed first entry sets the list of every
 * collective; each `func:list` entry then replaces that collective's list. A list is the names
 * it holds, or with a leading '^' every name except those. Empty entries and empty elements
 * (";;", ",,") are skipped; an entry with a prefix but no names is an error.
 *
 * Algorithms are NCCL's seven, weft's direct ones (OneShot, TwoShot) and its logarithmic ones
 * (RecDoubling, Rabenseifner, Binomial; so "^Ring" allows them too, as NCCL's "^Ring" allows
 * every other algorithm it has). Bruck and RecHalving are other names of PAT, whose row holds
 * the log-step AllGather (Bruck) and ReduceScatter (RecHalving).
 *
 * The choice itself is tune_decide.c's (cost model in tune_model*.c). */
#include "tune/algo_proto.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"
#include "util/names.h"
#include "util/check.h"

/* NCCL's seven, then weft's own (algo/algo.h numbers them after NCCL's). */
static const char* const algo_names[WEFT_NUM_ALGORITHMS] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT",
    "OneShot", "TwoShot", "RecDoubling", "Rabenseifner", "Binomial"};
/* Other names of an algorithm id (NCCL_ALGO accepts them; logs use tune_algo_name_for). */
static const struct {
  const char* name;
  int algo;
} algo_aliases[] = {{"Bruck", WEFT_ALGO_PAT_ID}, {"RecHalving", WEFT_ALGO_PAT_ID}};
static const char* const proto_names[NCCL_NUM_PROTOCOLS] = {"LL", "LL128", "Simple"};
static const char* const func_names[WEFT_NUM_COLL_FUNCS] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

const char* tune_algo_name(int algo) {
  return (algo >= 0 && algo < WEFT_NUM_ALGORITHMS) ? algo_names[algo] : "Unknown";
}

const char* tune_algo_name_for(int func, int algo) {
  if (algo == WEFT_ALGO_PAT_ID && func == ncclFuncAllGather) return "PAT(Bruck)";
  if (algo == WEFT_ALGO_PAT_ID && func == ncclFuncReduceScatter) return "PAT(RecHalving)";
  return tune_algo_name(algo);
}

const char* tune_proto_name(int proto) { return weft_proto_name(proto); }

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
    size_t naliases = names == algo_names ? sizeof algo_aliases / sizeof *algo_aliases : 0;
    for (size_t k = 0; i < 0 && k < naliases; k++)
      if (strcasecmp(algo_aliases[k].name, tok) == 0) i = algo_aliases[k].algo;
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
      WEFT_CHECK(parse_elems(var, spec, list, names, n, &bits));
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
  ncclResult_t r = parse_spec("NCCL_ALGO", algo_spec, algo_names, WEFT_NUM_ALGORITHMS, m.algo);
  WEFT_CHECK(r);
  WEFT_CHECK(parse_spec("NCCL_PROTO", proto_spec, proto_names, NCCL_NUM_PROTOCOLS, m.proto));
  *out = m;
  return ncclSuccess;
}

/* ---- names of masks ----------------------------------------------------------------------- */

void tune_format_mask(char* buf, size_t len, unsigned bits, int protos) {
  const char* const* names = protos ? proto_names : algo_names;
  int n = protos ? NCCL_NUM_PROTOCOLS : WEFT_NUM_ALGORITHMS;
  size_t off = 0;
  if (len == 0) return;
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (!(bits & (1u << i))) continue;
    int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[i]);
    if (w < 0 || (size_t)w >= len - off) break;
    off += (size_t)w;
  }
  if (off == 0) snprintf(buf, len, "none");
}
