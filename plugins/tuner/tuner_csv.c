/* NCCL's example tuner CSV (ext-tuner/example, NCCL_TUNER_CONFIG_FILE), so existing tuning
 * files keep working:
 *
 *   collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
 *
 * collective: broadcast, reduce, allgather, reducescatter, allreduce; algorithm: tree, ring,
 * collnet_direct, collnet_chain, nvls, nvls_tree, pat; protocol: ll, ll128, simple. -1 means
 * "the core's" for channels and "any" for nNodes, nRanks, numPipeOps and regBuff (and, as weft
 * reads it, for either byte bound). '#' starts a comment; blank lines are skipped. As in the
 * example, a line that does not parse is reported and skipped; the others are used. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine/policy_internal.h"
#include "tuner_rules.h"

enum { CSV_MAX_LINE = 1024, CSV_MAX_FIELDS = 10 };

static char* trim(char* s) {
  while (isspace((unsigned char)*s)) s++;
  char* e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

/* An integer field: >= 0, or -1 for "any". */
static int int_field(const char* s, int64_t* out) {
  if (*s == '\0') return -1;
  char* end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end != '\0' || v < -1) return -1;
  *out = v;
  return 0;
}

static tuner_range range_of(int64_t v) {
  return v < 0 ? TUNER_ANY_RANGE : (tuner_range){(uint64_t)v, (uint64_t)v};
}

/* One line's fields into r; NULL, or what is wrong. */
static const char* parse_line(char** f, int nf, tuner_rule* r) {
  if (nf < 8 || nf > 10) return "expected 8 to 10 comma-separated fields";
  int coll = tuner_coll_index(f[0]);
  if (coll < 0) return "unknown collective";
  int64_t minb, maxb, ch, nodes, ranks, pipe = -1, reg = -1;
  if (int_field(f[1], &minb) || int_field(f[2], &maxb)) return "bad byte bound";
  int algo = tuner_algo_index(f[3]);
  if (algo < 0) return "unknown algorithm";
  int proto = tuner_proto_index(f[4]);
  if (proto < 0) return "unknown protocol";
  if (int_field(f[5], &ch) || ch > TUNER_MAX_CHANNELS) return "bad channel count";
  if (int_field(f[6], &nodes) || int_field(f[7], &ranks)) return "bad nNodes or nRanks";
  if (nf > 8 && int_field(f[8], &pipe)) return "bad numPipeOps";
  if (nf > 9 && (int_field(f[9], &reg) || reg > 1)) return "bad regBuff (-1, 0 or 1)";
  *r = (tuner_rule){1u << coll,
                    {minb < 0 ? 0 : (uint64_t)minb, maxb < 0 ? UINT64_MAX : (uint64_t)maxb},
                    range_of(nodes), range_of(ranks), range_of(pipe), (int)reg,
                    1u << algo, 1u << proto, ch < 0 ? 0 : (int)ch, 0, 0};
  if (r->bytes.min > r->bytes.max) return "min_bytes above max_bytes";
  return NULL;
}

int tuner_rules_load_csv(const char* name, const char* buf, size_t len, tuner_rules* out,
                         policy_errors* errs, int* skipped) {
  /* Lines bound the rule count; count them first. */
  int lines = 1;
  for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
  if (lines > TUNER_MAX_RULES * 4) {
    pl_error(errs, name, 0, 0, "more than %d lines", TUNER_MAX_RULES * 4);
    return -1;
  }
  tuner_rule* rules = calloc((size_t)lines, sizeof *rules);
  if (rules == NULL) {
    pl_error(errs, name, 0, 0, "out of memory");
    return -1;
  }
  int n = 0, bad = 0, lineno = 0;
  size_t pos = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && buf[end] != '\n') end++;
    lineno++;
    char line[CSV_MAX_LINE];
    size_t l = end - pos;
    size_t at = pos;
    pos = end + 1;
    if (l >= sizeof line) {
      pl_error(errs, name, lineno, 1, "line longer than %d characters, skipped", CSV_MAX_LINE - 1);
      bad++;
      continue;
    }
    memcpy(line, buf + at, l);
    line[l] = '\0';
    char* hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char* s = trim(line);
    if (*s == '\0') continue;
    char* f[CSV_MAX_FIELDS + 1];
    int nf = 0;
    for (char* p = s;;) {
      char* comma = strchr(p, ',');
      if (comma) *comma = '\0';
      if (nf <= CSV_MAX_FIELDS) f[nf] = trim(p);
      nf++;
      if (!comma) break;
      p = comma + 1;
    }
    const char* why = parse_line(f, nf, &rules[n]);
    if (n >= TUNER_MAX_RULES) why = "too many rules";
    if (why) {
      pl_error(errs, name, lineno, 1, "%s, line skipped", why);
      bad++;
      continue;
    }
    rules[n++].line = lineno;
  }
  *skipped = bad;
  out->rules = rules;
  out->n = n;
  return n;
}
