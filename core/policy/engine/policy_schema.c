/* Schema version 1, top level, clusters and the "use" keys (net, tuner, settings, plugin_env):
 * the YAML tree becomes the model, and everything wrong with it becomes a positioned error.
 * Validation goes on after an error (so `weft-policy check` lists them all) except where the
 * rest could not mean anything (an unsupported version). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_internal.h"
#include "util/param.h"

const char* pl_kind_name(const pnode* n) {
  if (n->kind == PN_MAP) return "a mapping";
  if (n->kind == PN_SEQ) return "a list";
  return pn_is_null(n) ? "an empty value" : "a scalar";
}

int pl_expect_map(pl_ctx* c, const pnode* n, const char* what) {
  if (n->kind == PN_MAP) return 1;
  if (pn_is_null(n))
    PL_ERR(c, n, "empty value for '%s' (expected a mapping)", what);
  else
    PL_ERR(c, n, "'%s' must be a mapping, not %s", what, pl_kind_name(n));
  return 0;
}

const char* pl_scalar(pl_ctx* c, const pnode* n, const char* what) {
  if (n->kind != PN_SCALAR) {
    PL_ERR(c, n, "'%s' must be a scalar, not %s", what, pl_kind_name(n));
    return NULL;
  }
  if (pn_is_null(n) || n->len == 0) {
    PL_ERR(c, n, "empty value for '%s'", what);
    return NULL;
  }
  for (size_t i = 0; i < n->len; i++) {
    if ((unsigned char)n->str[i] < ' ' || n->str[i] == 0x7f) {
      PL_ERR(c, n, "control character in the value of '%s'", what);
      return NULL;
    }
  }
  return n->str;
}

static int keyset_has(int ks, const char* name) {
  for (int i = 0; i < pl_keysets[ks].n; i++)
    if (!strcmp(pl_keysets[ks].keys[i].name, name)) return 1;
  return 0;
}

int pl_key_lookup(pl_ctx* c, const pnode* key, int ks, const char* where) {
  const pl_keyset* s = &pl_keysets[ks];
  for (int i = 0; i < s->n; i++)
    if (!strcmp(key->str, s->keys[i].name)) return i;
  const char* k = key->str;
  if (!strcmp(k, "<<")) {
    PL_ERR(c, key, "merge keys ('<<') are not supported; alias a whole value instead");
    return -1;
  }
  const char* names[16] = {0};
  for (int i = 0; i < s->n && i < 16; i++) names[i] = s->keys[i].name;
  const char* sug = pl_suggest(k, names, s->n < 16 ? s->n : 16);
  if (sug) {
    PL_ERR(c, key, "unknown key '%.60s' in %s (did you mean '%s'?)", k, where, sug);
    return -1;
  }
  const char* hint = NULL;
  if ((ks == PL_KS_CLUSTER || ks == PL_KS_DEFAULTS) && keyset_has(PL_KS_MATCH, k))
    hint = ks == PL_KS_CLUSTER ? " (conditions go under 'match')"
                               : " (defaults have no conditions)";
  else if ((ks == PL_KS_CLUSTER || ks == PL_KS_DEFAULTS) &&
           (!strncmp(k, "NCCL_", 5) || !strncmp(k, "WEFT_", 5)))
    hint = " (settings go under 'settings')";
  else if (ks == PL_KS_TOP && keyset_has(PL_KS_CLUSTER, k))
    hint = " (cluster keys go in an entry of the 'clusters' list)";
  if (hint) {
    PL_ERR(c, key, "unknown key '%.60s' in %s%s", k, where, hint);
    return -1;
  }
  char list[256] = "";
  size_t o = 0;
  for (int i = 0; i < s->n && o < sizeof list; i++)
    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", s->keys[i].name);
  PL_ERR(c, key, "unknown key '%.60s' in %s (expected one of: %s)", k, where, list);
  return -1;
}

/* ---- use blocks: NAME=VALUE items ---- */

typedef struct {
  policy_item* v;
  int n, cap;
} item_list;

static void add_item(pl_ctx* c, item_list* l, const char* name, const char* value,
                     const char* from, const pnode* at) {
  if (l->n == l->cap) return; /* sized by count_items; cannot happen */
  char* v = pl_strndup(&c->p->arena, value, strlen(value));
  if (v == NULL) {
    PL_ERR(c, at, "out of memory");
    return;
  }
  policy_item* it = &l->v[l->n++];
  it->name = name;
  it->value = v;
  it->from = from;
  it->line = at->line;
  it->col = at->col;
}

static int plugin_token_ok(pl_ctx* c, const pnode* n, const char* what) {
  const char* s = n->str;
  for (const char* p = s; *p; p++) {
    if (isspace((unsigned char)*p) || *p == ',') {
      PL_ERR(c, n, "'%s' entry '%.60s' contains whitespace or ','", what, s);
      return 0;
    }
  }
  if (strchr(s, '/') && s[0] != '/') {
    PL_ERR(c, n, "'%s' path '%.60s' must be absolute (a relative path depends on the "
                 "application's working directory)", what, s);
    return 0;
  }
  return 1;
}

/* A name or path, or a list of them joined with ',' (NCCL_NET_PLUGIN's grammar). */
static void parse_plugins(pl_ctx* c, const pnode* v, const char* what, int allow_list,
                          const char* env, item_list* l) {
  if (v->kind == PN_MAP || (v->kind == PN_SEQ && !allow_list)) {
    PL_ERR(c, v, "'%s' must be a plugin name or path%s, not %s", what,
           allow_list ? " or a list of them" : "", pl_kind_name(v));
    return;
  }
  if (v->kind == PN_SCALAR) {
    if (pl_scalar(c, v, what) && plugin_token_ok(c, v, what)) add_item(c, l, env, v->str, what, v);
    return;
  }
  if (v->n == 0) {
    PL_ERR(c, v, "empty list for '%s'", what);
    return;
  }
  if (v->n > PL_MAX_PLUGINS) {
    PL_ERR(c, v, "'%s' lists %d plugins; at most %d", what, v->n, PL_MAX_PLUGINS);
    return;
  }
  char joined[PL_MAX_PLUGINS * 256];
  size_t o = 0;
  for (int i = 0; i < v->n; i++) {
    const pnode* e = v->kids[i];
    if (!pl_scalar(c, e, what) || !plugin_token_ok(c, e, what)) return;
    if (!strcmp(e->str, "none")) {
      PL_ERR(c, e, "'none' in '%s' must stand alone", what);
      return;
    }
    if (e->len > 255) {
      PL_ERR(c, e, "'%s' entry longer than 255 characters", what);
      return;
    }
    o += (size_t)snprintf(joined + o, sizeof joined - o, "%s%s", i ? "," : "", e->str);
  }
  add_item(c, l, env, joined, what, v);
}

static void parse_net(pl_ctx* c, const pnode* v, item_list* l) {
  if (v->kind != PN_MAP) {
    if (v->kind == PN_SEQ) {
      PL_ERR(c, v, "'net' must be a plugin name or a mapping {plugin, name}, not a list");
      return;
    }
    parse_plugins(c, v, "net", 0, "NCCL_NET_PLUGIN", l);
    return;
  }
  if (v->n == 0) PL_ERR(c, v, "'net' needs 'plugin' or 'name'");
  for (int i = 0; i < v->n; i++) {
    const pnode *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
    int key = pl_key_lookup(c, k, PL_KS_NET, "net");
    if (key == 0) {
      parse_plugins(c, val, "net.plugin", 1, "NCCL_NET_PLUGIN", l);
    } else if (key == 1) {
      if (pl_scalar(c, val, "net.name") && plugin_token_ok(c, val, "net.name"))
        add_item(c, l, "NCCL_NET", val->str, "net.name", val);
    }
  }
}

static void parse_tuner(pl_ctx* c, const pnode* v, item_list* l) {
  if (v->kind != PN_MAP) {
    if (v->kind == PN_SEQ) {
      PL_ERR(c, v, "'tuner' must be a plugin name or a mapping {plugin, config}, not a list");
      return;
    }
    parse_plugins(c, v, "tuner", 0, "NCCL_TUNER_PLUGIN", l);
    return;
  }
  if (v->n == 0) PL_ERR(c, v, "'tuner' needs 'plugin' or 'config'");
  for (int i = 0; i < v->n; i++) {
    const pnode *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
    int key = pl_key_lookup(c, k, PL_KS_TUNER, "tuner");
    if (key == 0) {
      parse_plugins(c, val, "tuner.plugin", 0, "NCCL_TUNER_PLUGIN", l);
    } else if (key == 1) {
      const char* s = pl_scalar(c, val, "tuner.config");
      if (s && s[0] != '/')
        PL_ERR(c, val, "'tuner.config' must be an absolute path, not '%.60s'", s);
      else if (s)
        add_item(c, l, "WEFT_TUNER_CONFIG", s, "tuner.config", val);
    }
  }
}

static const char* param_suggest(const char* name) {
  int n = 0;
  const weft_param_info* t = param_table(&n);
  const char* names[256];
  int k = 0;
  for (int i = 0; i < n && k < 256; i++)
    if (!pl_setting_forbidden(t[i].name)) names[k++] = t[i].name;
  return pl_suggest(name, names, k);
}

/* One settings value, checked against its parameter; the normalized text, or NULL. */
static const char* setting_value(pl_ctx* c, const weft_param_info* pi, const pnode* v,
                                 char* buf, size_t len) {
  const char* s = pl_scalar(c, v, pi->name);
  if (s == NULL) return NULL;
  if (pi->kind == WEFT_PARAM_STR) {
    char expected[256];
    if (param_value_allowed(pi, s, expected, sizeof expected)) return s;
    PL_ERR(c, v, "%s takes %s, not '%.60s'", pi->name, expected, s);
    return NULL;
  }
  int b;
  int64_t x;
  if (pi->min == 0 && pi->max == 1 && pn_bool(v, &b)) {
    x = b;
  } else if (!param_parse_int(s, &x) || x < pi->min || x > pi->max) {
    PL_ERR(c, v, "%s takes an integer in [%lld, %lld], not '%.60s'", pi->name,
           (long long)pi->min, (long long)pi->max, s);
    return NULL;
  }
  snprintf(buf, len, "%lld", (long long)x);
  return buf;
}

static void parse_settings(pl_ctx* c, const pnode* v, item_list* l) {
  if (!pl_expect_map(c, v, "settings")) return;
  for (int i = 0; i < v->n; i++) {
    const pnode *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
    const char* name = k->str;
    if (strncmp(name, "NCCL_", 5) && strncmp(name, "WEFT_", 5)) {
      PL_ERR(c, k, "'%.60s' in settings is not an NCCL_* or WEFT_* name (a plugin's own "
                   "variables go under plugin_env)", name);
      continue;
    }
    if (pl_setting_forbidden(name)) {
      PL_ERR(c, k, "%.60s cannot be set from a policy file", name);
      continue;
    }
    const weft_param_info* pi = param_find(name);
    if (pi == NULL) {
      const char* sug = param_suggest(name);
      if (sug)
        PL_ERR(c, k, "unknown setting '%.60s' (did you mean '%s'?)", name, sug);
      else
        PL_ERR(c, k, "unknown setting '%.60s' (`weft-policy schema` lists them; a plugin's "
                     "own variables go under plugin_env)", name);
      continue;
    }
    char buf[32];
    const char* value = setting_value(c, pi, val, buf, sizeof buf);
    if (value) add_item(c, l, pi->name, value, "settings", k);
  }
}

static void parse_plugin_env(pl_ctx* c, const pnode* v, item_list* l) {
  if (!pl_expect_map(c, v, "plugin_env")) return;
  for (int i = 0; i < v->n; i++) {
    const pnode *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
    if (!pl_env_name_ok(k->str)) {
      PL_ERR(c, k, "'%.60s' is not an environment variable name", k->str);
      continue;
    }
    if (pl_setting_forbidden(k->str)) {
      PL_ERR(c, k, "%.60s cannot be set from a policy file", k->str);
      continue;
    }
    /* A name weft declares (perhaps since the file was written) is checked as a setting. */
    const weft_param_info* pi = param_find(k->str);
    char buf[32];
    const char* s = pi ? setting_value(c, pi, val, buf, sizeof buf) : pl_scalar(c, val, k->str);
    if (s) add_item(c, l, k->str, s, "plugin_env", k);
  }
}

/* Capacity for a block's items: net and tuner give at most 2 each. */
static int count_items(const pnode* map) {
  int n = 4;
  for (int i = 0; i < map->n; i++) {
    const pnode *k = map->kids[2 * i], *v = map->kids[2 * i + 1];
    if ((!strcmp(k->str, "settings") || !strcmp(k->str, "plugin_env")) && v->kind == PN_MAP)
      n += v->n;
  }
  return n;
}

static int cmp_items(const void* a, const void* b) {
  return strcmp(((const policy_item*)a)->name, ((const policy_item*)b)->name);
}

/* Each name once per block; then the hash over the sorted items. */
static void finish_use(pl_ctx* c, item_list* l, pl_use* u) {
  for (int i = 1; i < l->n; i++) {
    for (int j = 0; j < i; j++) {
      if (strcmp(l->v[i].name, l->v[j].name)) continue;
      pl_error(c->e, c->file, l->v[i].line, l->v[i].col,
               "%s is set twice in one block (first by '%s' at %d:%d)", l->v[i].name,
               l->v[j].from, l->v[j].line, l->v[j].col);
      break;
    }
  }
  u->items = l->v;
  u->nitems = l->n;
  u->hash = 0;
  if (l->n == 0) return;
  policy_item* sorted = malloc((size_t)l->n * sizeof *sorted);
  if (sorted == NULL) return;
  memcpy(sorted, l->v, (size_t)l->n * sizeof *sorted);
  qsort(sorted, (size_t)l->n, sizeof *sorted, cmp_items);
  uint64_t h = PL_FNV_SEED;
  for (int i = 0; i < l->n; i++) {
    h = pl_fnv1a(sorted[i].name, strlen(sorted[i].name), h);
    h = pl_fnv1a("=", 1, h);
    h = pl_fnv1a(sorted[i].value, strlen(sorted[i].value), h);
    h = pl_fnv1a("\n", 1, h);
  }
  free(sorted);
  u->hash = h;
}

/* A use key of a cluster or of defaults (index into the DEFAULTS keyset). */
static void parse_use_key(pl_ctx* c, int key, const pnode* v, item_list* l) {
  switch (key) {
    case 0: parse_net(c, v, l); break;
    case 1: parse_tuner(c, v, l); break;
    case 2: parse_settings(c, v, l); break;
    case 3: parse_plugin_env(c, v, l); break;
    default: break;
  }
}

static int init_list(pl_ctx* c, const pnode* map, item_list* l) {
  l->n = 0;
  l->cap = count_items(map);
  l->v = pl_alloc(&c->p->arena, (size_t)l->cap * sizeof *l->v);
  if (l->v == NULL) {
    PL_ERR(c, map, "out of memory");
    return 0;
  }
  return 1;
}

static void parse_defaults(pl_ctx* c, const pnode* v) {
  if (!pl_expect_map(c, v, "defaults")) return;
  item_list l;
  if (!init_list(c, v, &l)) return;
  for (int i = 0; i < v->n; i++) {
    int key = pl_key_lookup(c, v->kids[2 * i], PL_KS_DEFAULTS, "defaults");
    if (key >= 0) parse_use_key(c, key, v->kids[2 * i + 1], &l);
  }
  finish_use(c, &l, &c->p->defaults);
  c->p->has_defaults = 1;
}

static int name_ok(const char* s) {
  size_t n = strlen(s);
  if (n == 0 || n > POLICY_NAME_MAX) return 0;
  for (const char* p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-')) return 0;
  return 1;
}

enum { CK_NAME, CK_DESCRIPTION, CK_MATCH, CK_USE_FIRST };

static void parse_cluster(pl_ctx* c, const pnode* v, pl_cluster* cl, int index) {
  cl->line = v->line;
  cl->col = v->col;
  char what[32];
  snprintf(what, sizeof what, "clusters[%d]", index);
  if (!pl_expect_map(c, v, what)) return;
  item_list l;
  if (!init_list(c, v, &l)) return;
  int have_name = 0, have_match = 0;
  for (int i = 0; i < v->n; i++) {
    const pnode *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
    int key = pl_key_lookup(c, k, PL_KS_CLUSTER, "cluster");
    if (key == CK_NAME) {
      have_name = 1;
      const char* s = pl_scalar(c, val, "name");
      if (s && !name_ok(s))
        PL_ERR(c, val, "cluster name '%.70s' must be 1-%d characters from A-Z a-z 0-9 . _ -", s,
               POLICY_NAME_MAX);
      else if (s)
        cl->name = s;
    } else if (key == CK_DESCRIPTION) {
      cl->description = pl_scalar(c, val, "description");
    } else if (key == CK_MATCH) {
      have_match = 1;
      if (pn_is_null(val))
        PL_ERR(c, val, "empty value for 'match' (write 'match: {}' to match every host)");
      else if (pl_expect_map(c, val, "match"))
        pl_schema_match(c, val, cl);
    } else if (key >= CK_USE_FIRST) {
      parse_use_key(c, key - CK_USE_FIRST, val, &l);
    }
  }
  if (!have_name) PL_ERR(c, v, "cluster is missing its 'name'");
  if (!have_match)
    PL_ERR(c, v, "cluster is missing 'match' (write 'match: {}' to match every host)");
  finish_use(c, &l, &cl->use);
}

static void parse_clusters(pl_ctx* c, const pnode* v) {
  if (v->kind != PN_SEQ) {
    if (pn_is_null(v))
      PL_ERR(c, v, "empty value for 'clusters' (expected a list; write [] for none)");
    else
      PL_ERR(c, v, "'clusters' must be a list, not %s", pl_kind_name(v));
    return;
  }
  struct weft_policy* p = c->p;
  if (v->n == 0) return;
  p->clusters = pl_alloc(&p->arena, (size_t)v->n * sizeof *p->clusters);
  if (p->clusters == NULL) {
    PL_ERR(c, v, "out of memory");
    return;
  }
  p->nclusters = v->n;
  for (int i = 0; i < v->n; i++) {
    parse_cluster(c, v->kids[i], &p->clusters[i], i);
    if (p->clusters[i].name == NULL) continue;
    for (int j = 0; j < i; j++) {
      if (p->clusters[j].name && !strcmp(p->clusters[j].name, p->clusters[i].name)) {
        const pnode* at = v->kids[i];
        PL_ERR(c, at, "duplicate cluster name '%s' (first at %d:%d)", p->clusters[i].name,
               p->clusters[j].line, p->clusters[j].col);
        break;
      }
    }
  }
}

int pl_schema_build(struct weft_policy* p, const pnode* root, policy_errors* e) {
  pl_ctx c = {p, e, p->path};
  if (root == NULL) {
    pl_error(e, p->path, 1, 1, "empty policy file (expected a mapping with 'version: 1')");
    return -1;
  }
  if (root->kind != PN_MAP) {
    PL_ERR(&c, root, "a policy file is a mapping with 'version: 1', not %s", pl_kind_name(root));
    return -1;
  }
  /* The version first: a file of another version is not read any further. */
  const pnode* version = NULL;
  for (int i = 0; i < root->n; i++)
    if (!strcmp(root->kids[2 * i]->str, "version")) version = root->kids[2 * i + 1];
  if (version == NULL) {
    PL_ERR(&c, root, "missing 'version: 1'");
  } else {
    int64_t v;
    if (!pn_int(version, &v)) {
      if (version->kind == PN_SCALAR && !pn_is_null(version))
        PL_ERR(&c, version, "'version' must be the integer 1, not '%.30s'", version->str);
      else
        PL_ERR(&c, version, "'version' must be the integer 1, not %s", pl_kind_name(version));
      return -1;
    }
    if (v != 1) {
      PL_ERR(&c, version, "unsupported policy version %lld (this weft reads version 1)",
             (long long)v);
      return -1;
    }
  }
  for (int i = 0; i < root->n; i++) {
    const pnode *k = root->kids[2 * i], *v = root->kids[2 * i + 1];
    int key = pl_key_lookup(&c, k, PL_KS_TOP, "the top level");
    if (key == 1) parse_clusters(&c, v);
    else if (key == 2) parse_defaults(&c, v);
  }
  return e->n > 0 || e->dropped > 0 ? -1 : 0;
}
