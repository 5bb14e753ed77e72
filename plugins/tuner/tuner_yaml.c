/* The YAML rules file, read strictly (as the policy file is: libyaml through the policy
 * engine's bounded tree builder, every error with line and column, "did you mean" for names).
 *
 *   version: 1                      # optional; 1 is the only version
 *   rules:                          # first match wins
 *     - collective: allreduce       # name or list; omitted: every collective
 *       bytes: [0, 64K]             # N, [min, max] or {min: N, max: N}; K/M/G/T suffixes
 *       nodes: 1                    # same forms; omitted: any
 *       ranks: [2, 8]
 *       pipe_ops: [1, 1]            # ops aggregated in a group (NCCL's numPipeOps)
 *       reg_buff: false             # registered buffers; omitted: either
 *       algorithm: ring             # name or list; omitted: any
 *       protocol: simple            # name or list; omitted: any
 *       channels: 2                 # 1..64; omitted or 0: the core's
 *       chunk: 512K                 # bytes per chunk (tuner v6 getChunkSize); omitted: the core's
 *
 * A rule must name an algorithm, a protocol, a channel count or a chunk size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine/policy_internal.h"
#include "tuner_rules.h"

typedef struct {
  const char* file;
  policy_errors* e;
} ctx;

#define ERR(c, node, ...) pl_error((c)->e, (c)->file, (node)->line, (node)->col, __VA_ARGS__)

static const char* kind_name(const pnode* n) {
  return n->kind == PN_SEQ ? "a list" : n->kind == PN_MAP ? "a mapping" : "a scalar";
}

static const char* const top_keys[] = {"version", "rules"};
static const char* const rule_keys[] = {"collective", "bytes",     "nodes",    "ranks",
                                        "pipe_ops",   "reg_buff",  "algorithm", "protocol",
                                        "channels",   "chunk"};
enum { RK_COLL, RK_BYTES, RK_NODES, RK_RANKS, RK_PIPE, RK_REG, RK_ALGO, RK_PROTO, RK_CHANNELS,
       RK_CHUNK, RK_COUNT };
static const char* const bound_keys[] = {"min", "max"};

static int key_index(ctx* c, const pnode* k, const char* const* keys, int n, const char* where) {
  if (k->kind != PN_SCALAR) {
    ERR(c, k, "keys of %s must be names, not %s", where, kind_name(k));
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (strcmp(k->str, keys[i]) == 0) return i;
  const char* hint = pl_suggest(k->str, keys, n);
  if (hint)
    ERR(c, k, "unknown key '%.60s' in %s (did you mean '%s'?)", k->str, where, hint);
  else
    ERR(c, k, "unknown key '%.60s' in %s", k->str, where);
  return -1;
}

/* A name, or a list of names, into a bit mask over names[0..n). 0 after an error. */
static unsigned parse_names(ctx* c, const pnode* v, const char* what, const char* const* names,
                            int n, int (*index)(const char*)) {
  if (v->kind == PN_MAP) {
    ERR(c, v, "'%s' must be a name or a list of names, not a mapping", what);
    return 0;
  }
  int count = v->kind == PN_SEQ ? v->n : 1;
  if (count == 0) {
    ERR(c, v, "empty list for '%s'", what);
    return 0;
  }
  unsigned bits = 0;
  for (int i = 0; i < count; i++) {
    const pnode* s = v->kind == PN_SEQ ? v->kids[i] : v;
    if (s->kind != PN_SCALAR || pn_is_null(s)) {
      ERR(c, s, "'%s' entries must be names, not %s", what,
          s->kind == PN_SCALAR ? "empty" : kind_name(s));
      return 0;
    }
    int k = index(s->str);
    if (k < 0) {
      const char* hint = pl_suggest(s->str, names, n);
      char list[160] = "";
      for (int j = 0, o = 0; j < n && o < (int)sizeof list; j++)
        o += snprintf(list + o, sizeof list - (size_t)o, "%s%s", j ? ", " : "", names[j]);
      if (hint)
        ERR(c, s, "unknown %s '%.40s' (did you mean '%s'?)", what, s->str, hint);
      else
        ERR(c, s, "unknown %s '%.40s'; one of: %s", what, s->str, list);
      return 0;
    }
    if (bits & (1u << k)) {
      ERR(c, s, "'%s' lists '%s' twice", what, s->str);
      return 0;
    }
    bits |= 1u << k;
  }
  return bits;
}

/* One bound: a plain integer (bytes: with a K/M/G/T suffix) >= 0. */
static int parse_bound(ctx* c, const pnode* v, const char* what, int bytes, uint64_t* out) {
  if (v->kind != PN_SCALAR || pn_is_null(v)) {
    ERR(c, v, "'%s' bounds must be numbers, not %s", what,
        v->kind == PN_SCALAR ? "empty" : kind_name(v));
    return -1;
  }
  int64_t x;
  if (!bytes && pn_int(v, &x) && x >= 0) {
    *out = (uint64_t)x;
    return 0;
  }
  if (bytes && !v->quoted && tuner_parse_bytes(v->str, out) == 0) return 0;
  ERR(c, v, "'%s' must be %s, not '%.40s'", what,
      bytes ? "a byte count (digits, optional K/M/G/T suffix)" : "an integer >= 0", v->str);
  return -1;
}

/* N, [min, max] or {min, max} (either bound omitted: open). */
static int parse_range(ctx* c, const pnode* v, const char* what, int bytes, tuner_range* r) {
  *r = TUNER_ANY_RANGE;
  if (v->kind == PN_SCALAR) {
    if (parse_bound(c, v, what, bytes, &r->min)) return -1;
    r->max = r->min;
    return 0;
  }
  if (v->kind == PN_SEQ) {
    if (v->n != 2) {
      ERR(c, v, "'%s' as a list must be [min, max], not %d item(s)", what, v->n);
      return -1;
    }
    if (parse_bound(c, v->kids[0], what, bytes, &r->min) ||
        parse_bound(c, v->kids[1], what, bytes, &r->max))
      return -1;
  } else {
    if (v->n == 0) {
      ERR(c, v, "'%s' needs 'min' or 'max'", what);
      return -1;
    }
    for (int i = 0; i < v->n; i++) {
      int k = key_index(c, v->kids[2 * i], bound_keys, 2, what);
      if (k < 0) return -1;
      if (parse_bound(c, v->kids[2 * i + 1], what, bytes, k == 0 ? &r->min : &r->max)) return -1;
    }
  }
  if (r->min > r->max) {
    ERR(c, v, "'%s': min %llu is above max %llu", what, (unsigned long long)r->min,
        (unsigned long long)r->max);
    return -1;
  }
  return 0;
}

static void parse_rule(ctx* c, const pnode* m, tuner_rule* r) {
  *r = (tuner_rule){TUNER_ALL_COLLS, TUNER_ANY_RANGE, TUNER_ANY_RANGE, TUNER_ANY_RANGE,
                    TUNER_ANY_RANGE, -1, TUNER_ALL_ALGOS, TUNER_ALL_PROTOS, 0, m->line, 0};
  if (m->kind != PN_MAP) {
    ERR(c, m, "a rule must be a mapping, not %s", kind_name(m));
    return;
  }
  int seen[RK_COUNT] = {0};
  int errs = c->e->n;
  for (int i = 0; i < m->n; i++) {
    const pnode *k = m->kids[2 * i], *v = m->kids[2 * i + 1];
    int key = key_index(c, k, rule_keys, RK_COUNT, "a rule");
    if (key < 0) continue;
    seen[key] = 1;
    int64_t x;
    int b;
    switch (key) {
      case RK_COLL:
        r->colls = parse_names(c, v, "collective", tuner_coll_names, TUNER_NUM_COLLS,
                               tuner_coll_index);
        break;
      case RK_BYTES: parse_range(c, v, "bytes", 1, &r->bytes); break;
      case RK_NODES: parse_range(c, v, "nodes", 0, &r->nodes); break;
      case RK_RANKS: parse_range(c, v, "ranks", 0, &r->ranks); break;
      case RK_PIPE: parse_range(c, v, "pipe_ops", 0, &r->pipe_ops); break;
      case RK_REG:
        if (pn_bool(v, &b))
          r->reg_buff = b;
        else
          ERR(c, v, "'reg_buff' must be true or false, not %s",
              v->kind == PN_SCALAR ? v->str : kind_name(v));
        break;
      case RK_ALGO:
        r->algos = parse_names(c, v, "algorithm", tuner_algo_names, TUNER_NUM_ALGOS,
                               tuner_algo_index);
        break;
      case RK_PROTO:
        r->protos = parse_names(c, v, "protocol", tuner_proto_names, NCCL_NUM_PROTOCOLS,
                                tuner_proto_index);
        break;
      case RK_CHANNELS:
        if (pn_int(v, &x) && x >= 0 && x <= TUNER_MAX_CHANNELS)
          r->channels = (int)x;
        else
          ERR(c, v, "'channels' must be an integer from 0 to %d, not %s", TUNER_MAX_CHANNELS,
              v->kind == PN_SCALAR ? v->str : kind_name(v));
        break;
      case RK_CHUNK: {
        uint64_t bytes = 0;
        if (v->kind == PN_SCALAR && tuner_parse_bytes(v->str, &bytes) == 0 && bytes > 0 &&
            bytes <= TUNER_MAX_CHUNK)
          r->chunk = bytes;
        else
          ERR(c, v, "'chunk' must be a byte count from 1 to 1G (K/M/G suffixes), not %s",
              v->kind == PN_SCALAR ? v->str : kind_name(v));
        break;
      }
    }
  }
  if (c->e->n == errs && !seen[RK_ALGO] && !seen[RK_PROTO] && r->channels == 0 && r->chunk == 0)
    ERR(c, m, "a rule must set 'algorithm', 'protocol', 'channels' or 'chunk' (it would change "
              "nothing)");
}

int tuner_rules_load_yaml(const char* name, const char* buf, size_t len, tuner_rules* out,
                          policy_errors* errs) {
  ctx c = {name, errs};
  pl_arena arena = {0};
  pnode* root = NULL;
  int before = errs->n + errs->dropped;
  if (len > PL_MAX_FILE) {
    pl_error(errs, name, 0, 0, "file larger than %d bytes", PL_MAX_FILE);
    return -1;
  }
  if (pl_yaml_parse(name, buf, len, &arena, &root, errs) != 0) {
    pl_arena_free(&arena);
    return -1;
  }
  tuner_rule* rules = NULL;
  int n = 0;
  const pnode* list = NULL;
  if (root == NULL || pn_is_null(root)) {
    pl_error(errs, name, 0, 0, "empty file: expected a mapping with 'rules'");
    goto done;
  }
  if (root->kind != PN_MAP) {
    ERR(&c, root, "the file must be a mapping with 'rules', not %s", kind_name(root));
    goto done;
  }
  for (int i = 0; i < root->n; i++) {
    const pnode *k = root->kids[2 * i], *v = root->kids[2 * i + 1];
    int key = key_index(&c, k, top_keys, 2, "the top level");
    int64_t ver;
    if (key == 0 && !(pn_int(v, &ver) && ver == 1))
      ERR(&c, v, "'version' must be 1, not %s", v->kind == PN_SCALAR ? v->str : kind_name(v));
    if (key == 1) list = v;
  }
  if (list == NULL) {
    if (errs->n + errs->dropped == before) ERR(&c, root, "no 'rules' list");
    goto done;
  }
  if (list->kind != PN_SEQ && !pn_is_null(list)) {
    ERR(&c, list, "'rules' must be a list, not %s", kind_name(list));
    goto done;
  }
  int count = list->kind == PN_SEQ ? list->n : 0;
  if (count > TUNER_MAX_RULES) {
    ERR(&c, list, "more than %d rules", TUNER_MAX_RULES);
    goto done;
  }
  rules = calloc((size_t)(count ? count : 1), sizeof *rules);
  if (rules == NULL) {
    pl_error(errs, name, 0, 0, "out of memory for %d rules", count);
    goto done;
  }
  for (int i = 0; i < count; i++) parse_rule(&c, list->kids[i], &rules[n++]);
done:
  pl_arena_free(&arena);
  if (errs->n + errs->dropped != before) {
    free(rules);
    return -1;
  }
  out->rules = rules;
  out->n = n;
  return n;
}
