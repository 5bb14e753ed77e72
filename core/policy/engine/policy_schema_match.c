/* The `match` mapping of a cluster: globs (hostname, nic, gpu), ranges (nodes, ranks_per_node)
 * and environment conditions, each checked as it is read. */
#include <string.h>

#include "policy_internal.h"

enum { MK_HOSTNAME, MK_NIC, MK_GPU, MK_NODES, MK_RPN, MK_ENV };

/* Column of byte i of a one-line scalar's text: exact for plain scalars and for quoted ones
 * without escapes; otherwise the scalar's start. */
static int glob_col(const pnode* n, size_t i) {
  if (!n->quoted && n->raw_len == (int)n->len) return n->col + (int)i;
  if (n->quoted && n->raw_len == (int)n->len + 2) return n->col + 1 + (int)i;
  return n->col;
}

static void parse_globs(pl_ctx* c, const pnode* v, const char* what, pl_globs* out) {
  if (v->kind == PN_MAP) {
    PL_ERR(c, v, "'%s' must be a glob or a list of globs, not a mapping", what);
    return;
  }
  const pnode* one = v;
  int n = v->kind == PN_SEQ ? v->n : 1;
  if (n == 0) {
    PL_ERR(c, v, "empty list for '%s'", what);
    return;
  }
  out->v = pl_alloc(&c->p->arena, (size_t)n * sizeof *out->v);
  if (out->v == NULL) {
    PL_ERR(c, v, "out of memory");
    return;
  }
  for (int i = 0; i < n; i++) {
    const pnode* g = v->kind == PN_SEQ ? v->kids[i] : one;
    if (g->kind != PN_SCALAR) {
      PL_ERR(c, g, "'%s' entries must be globs, not %s", what, pl_kind_name(g));
      continue;
    }
    if (pn_is_null(g) || g->len == 0) {
      PL_ERR(c, g, "empty glob in '%s'", what);
      continue;
    }
    size_t at = 0;
    const char* why = pl_glob_check(g->str, &at);
    if (why) {
      pl_error(c->e, c->file, g->line, glob_col(g, at), "bad glob '%.60s' in '%s': %s", g->str,
               what, why);
      continue;
    }
    out->v[out->n++] = g->str;
  }
}

static void parse_bound(pl_ctx* c, const pnode* v, const char* what, int64_t* out) {
  int64_t x;
  if (!pn_int(v, &x)) {
    if (v->kind == PN_SCALAR && !pn_is_null(v))
      PL_ERR(c, v, "'%s' must be an integer, not '%.40s'", what, v->str);
    else
      PL_ERR(c, v, "'%s' must be an integer, not %s", what, pl_kind_name(v));
    return;
  }
  if (x < 1 || x > 1000000000) {
    PL_ERR(c, v, "'%s' must be between 1 and 1000000000, not %lld", what, (long long)x);
    return;
  }
  *out = x;
}

static void parse_range(pl_ctx* c, const pnode* v, const char* what, pl_range* r) {
  r->min = 1;
  r->max = 1000000000;
  if (v->kind == PN_SCALAR) {
    int64_t x = 0;
    parse_bound(c, v, what, &x);
    if (x > 0) {
      r->min = r->max = x;
      r->set = 1;
    }
    return;
  }
  if (v->kind != PN_MAP) {
    PL_ERR(c, v, "'%s' must be an integer or {min, max}, not %s", what, pl_kind_name(v));
    return;
  }
  if (v->n == 0) {
    PL_ERR(c, v, "'%s' needs 'min' or 'max'", what);
    return;
  }
  char sub[40];
  int ok = 1;
  for (int i = 0; i < v->n; i++) {
    const pnode *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
    int key = pl_key_lookup(c, k, PL_KS_RANGE, what);
    if (key < 0) {
      ok = 0;
      continue;
    }
    int64_t x = 0;
    snprintf(sub, sizeof sub, "%s.%s", what, key == 0 ? "min" : "max");
    parse_bound(c, val, sub, &x);
    if (x == 0) ok = 0;
    else if (key == 0) r->min = x;
    else r->max = x;
  }
  if (ok && r->min > r->max) {
    PL_ERR(c, v, "'%s' min %lld is greater than max %lld", what, (long long)r->min,
           (long long)r->max);
    return;
  }
  r->set = ok;
}

static void parse_env(pl_ctx* c, const pnode* v, pl_cluster* cl) {
  if (!pl_expect_map(c, v, "match.env")) return;
  if (v->n == 0) {
    PL_ERR(c, v, "empty mapping for 'match.env'");
    return;
  }
  cl->env = pl_alloc(&c->p->arena, (size_t)v->n * sizeof *cl->env);
  if (cl->env == NULL) {
    PL_ERR(c, v, "out of memory");
    return;
  }
  for (int i = 0; i < v->n; i++) {
    const pnode *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
    if (!pl_env_name_ok(k->str)) {
      PL_ERR(c, k, "'%.60s' in match.env is not an environment variable name", k->str);
      continue;
    }
    pl_env_cond* e = &cl->env[cl->nenv];
    int b;
    if (pn_bool(val, &b)) {
      e->kind = b ? PL_ENV_SET : PL_ENV_UNSET;
    } else if (val->kind != PN_SCALAR) {
      PL_ERR(c, val, "match.env %.60s must be true, false or a value, not %s", k->str,
             pl_kind_name(val));
      continue;
    } else if (pn_is_null(val)) {
      PL_ERR(c, val, "empty value for match.env %.60s (true: set, false: not set, \"\": empty)",
             k->str);
      continue;
    } else {
      e->kind = PL_ENV_EQ;
      e->value = val->str;
    }
    e->name = k->str;
    cl->nenv++;
  }
}

void pl_schema_match(pl_ctx* c, const pnode* map, pl_cluster* cl) {
  for (int i = 0; i < map->n; i++) {
    const pnode *k = map->kids[2 * i], *v = map->kids[2 * i + 1];
    int key = pl_key_lookup(c, k, PL_KS_MATCH, "match");
    if (key >= 0 && key != MK_ENV && pn_is_null(v)) {
      PL_ERR(c, v, "empty value for 'match.%s'", k->str);
      continue;
    }
    switch (key) {
      case MK_HOSTNAME: parse_globs(c, v, "hostname", &cl->hostname); break;
      case MK_NIC: parse_globs(c, v, "nic", &cl->nic); break;
      case MK_GPU: parse_globs(c, v, "gpu", &cl->gpu); break;
      case MK_NODES: parse_range(c, v, "nodes", &cl->nodes); break;
      case MK_RPN: parse_range(c, v, "ranks_per_node", &cl->rpn); break;
      case MK_ENV: parse_env(c, v, cl); break;
      default: break;
    }
  }
}
