/* libyaml events → a tree of pnodes in the arena, with every limit checked before anything is
 * allocated for it. libyaml's event parser does the YAML; this file only assembles the result:
 *
 * - depth: a collection start past PL_MAX_DEPTH is an error (libyaml 0.2.5 has no limit);
 * - size: scalars longer than PL_MAX_SCALAR, collections with more than PL_MAX_ENTRIES entries
 *   and more than PL_MAX_NODES nodes in all are errors;
 * - aliases: an anchor is usable once its node is complete, so an alias inside its own anchor
 *   (`&a [*a]`) is an error and the tree is never cyclic. An alias shares its target (nothing
 *   is copied) but counts the target's node count again, so a "billion laughs" document fails
 *   at the first alias that takes the total past PL_MAX_NODES, after a few hundred events;
 * - tags, a second document and duplicate mapping keys are errors; keys must be scalars. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "policy_internal.h"

typedef struct {
  pnode* node;
  pnode** kids; /* malloc'd while the collection is open */
  int n, cap;
  const char* anchor; /* pending until the node ends */
} level;

typedef struct {
  const char* file;
  const char* buf;
  pl_arena* arena;
  policy_errors* e;
  level lv[PL_MAX_DEPTH + 1]; /* lv[0] holds the document's root */
  int depth;
  struct {
    const char* name;
    pnode* node;
    int line, col;
  } anchors[PL_MAX_ANCHORS];
  int nanchors;
  long total;
  int docs;
} builder;

#define LINE(m) ((int)(m).line + 1)
#define COL(m) ((int)(m).column + 1)

static int fail(builder* b, yaml_mark_t m, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(builder* b, yaml_mark_t m, const char* fmt, ...) {
  char text[POLICY_ERR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  pl_error(b->e, b->file, LINE(m), COL(m), "%s", text);
  return -1;
}

static int out_of_memory(builder* b, yaml_mark_t m) {
  return fail(b, m, "%s", "out of memory (policy larger than the parser's bound)");
}

static int reject_tag(builder* b, const yaml_char_t* tag, yaml_mark_t m) {
  if (tag == NULL) return 0;
  return fail(b, m, "YAML tags are not supported (found '%s')", (const char*)tag);
}

/* Find a complete anchor; -1 when none. */
static int find_anchor(const builder* b, const char* name) {
  for (int i = 0; i < b->nanchors; i++)
    if (!strcmp(b->anchors[i].name, name)) return i;
  return -1;
}

static int pending_anchor(const builder* b, const char* name) {
  for (int d = 1; d <= b->depth; d++)
    if (b->lv[d].anchor && !strcmp(b->lv[d].anchor, name)) return 1;
  return 0;
}

/* Check an anchor name when it appears (duplicates are errors, as in libyaml's loader). */
static int check_new_anchor(builder* b, const yaml_char_t* anchor, yaml_mark_t m) {
  if (anchor == NULL) return 0;
  const char* name = (const char*)anchor;
  int i = find_anchor(b, name);
  if (i >= 0 || pending_anchor(b, name)) {
    if (i >= 0)
      return fail(b, m, "anchor '&%.60s' defined twice (first at %d:%d)", name,
                  b->anchors[i].line, b->anchors[i].col);
    return fail(b, m, "anchor '&%.60s' defined twice", name);
  }
  if (b->nanchors == PL_MAX_ANCHORS)
    return fail(b, m, "more than %d anchors", PL_MAX_ANCHORS);
  return 0;
}

static int register_anchor(builder* b, const char* name, pnode* node) {
  int i = b->nanchors++;
  b->anchors[i].name = name;
  b->anchors[i].node = node;
  b->anchors[i].line = node->line;
  b->anchors[i].col = node->col;
  return 0;
}

/* Append node to the open collection; m is where the node starts. */
static int add_node(builder* b, pnode* node, yaml_mark_t m) {
  level* l = &b->lv[b->depth];
  if (b->depth == 0) {
    l->node = node;
    return 0;
  }
  int max = l->node->kind == PN_MAP ? 2 * PL_MAX_ENTRIES : PL_MAX_ENTRIES;
  if (l->n == max) return fail(b, m, "more than %d entries in one list or mapping", PL_MAX_ENTRIES);
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 8;
    pnode** k = realloc(l->kids, (size_t)cap * sizeof *k);
    if (k == NULL) return out_of_memory(b, m);
    l->kids = k;
    l->cap = cap;
  }
  l->kids[l->n++] = node;
  return 0;
}

static pnode* new_node(builder* b, pn_kind kind, yaml_mark_t m) {
  if (++b->total > PL_MAX_NODES) {
    fail(b, m, "more than %d nodes in the document", PL_MAX_NODES);
    return NULL;
  }
  pnode* n = pl_alloc(b->arena, sizeof *n);
  if (n == NULL) {
    out_of_memory(b, m);
    return NULL;
  }
  n->kind = kind;
  n->line = LINE(m);
  n->col = COL(m);
  n->raw_len = -1;
  n->size = 1;
  n->height = 1;
  return n;
}

static int on_scalar(builder* b, const yaml_event_t* ev) {
  yaml_mark_t m = ev->start_mark;
  const char* v = (const char*)ev->data.scalar.value;
  size_t len = ev->data.scalar.length;
  if (reject_tag(b, ev->data.scalar.tag, m)) return -1;
  if (len > PL_MAX_SCALAR) return fail(b, m, "scalar longer than %d bytes", PL_MAX_SCALAR);
  if (memchr(v, '\0', len)) return fail(b, m, "%s", "NUL character in a scalar");
  if (check_new_anchor(b, ev->data.scalar.anchor, m)) return -1;
  pnode* n = new_node(b, PN_SCALAR, m);
  if (n == NULL) return -1;
  n->str = pl_strndup(b->arena, v, len);
  if (n->str == NULL) return out_of_memory(b, m);
  n->len = len;
  n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
  if (ev->end_mark.line == m.line) n->raw_len = (int)(ev->end_mark.index - m.index);
  if (ev->data.scalar.anchor) {
    const char* a = pl_strndup(b->arena, (const char*)ev->data.scalar.anchor,
                               strlen((const char*)ev->data.scalar.anchor));
    if (a == NULL) return out_of_memory(b, m);
    register_anchor(b, a, n);
  }
  return add_node(b, n, m);
}

static int on_start(builder* b, const yaml_event_t* ev, pn_kind kind) {
  yaml_mark_t m = ev->start_mark;
  const yaml_char_t* tag = kind == PN_MAP ? ev->data.mapping_start.tag
                                          : ev->data.sequence_start.tag;
  const yaml_char_t* anchor = kind == PN_MAP ? ev->data.mapping_start.anchor
                                             : ev->data.sequence_start.anchor;
  if (reject_tag(b, tag, m)) return -1;
  if (b->depth == PL_MAX_DEPTH) return fail(b, m, "nesting deeper than %d levels", PL_MAX_DEPTH);
  if (check_new_anchor(b, anchor, m)) return -1;
  pnode* n = new_node(b, kind, m);
  if (n == NULL) return -1;
  level* l = &b->lv[++b->depth];
  memset(l, 0, sizeof *l);
  l->node = n;
  if (anchor) {
    l->anchor = pl_strndup(b->arena, (const char*)anchor, strlen((const char*)anchor));
    if (l->anchor == NULL) return out_of_memory(b, m);
  }
  return 0;
}

/* Keys are scalars (else -1: the tree cannot be read on); a duplicate key is an error that
 * does not stop the parse: it is reported and its pair dropped, so the checks that follow
 * report the file's other errors too (pl_schema_build fails on any error recorded). */
static int check_keys(builder* b, pnode* map) {
  int kept = 0;
  for (int i = 0; i < map->n; i++) {
    pnode *k = map->kids[2 * i], *v = map->kids[2 * i + 1];
    if (k->kind != PN_SCALAR) {
      pl_error(b->e, b->file, k->line, k->col, "mapping keys must be scalars, not %s",
               pl_kind_name(k));
      return -1;
    }
    const pnode* first = NULL;
    for (int j = 0; j < kept && first == NULL; j++) {
      const pnode* f = map->kids[2 * j];
      if (f->len == k->len && !memcmp(f->str, k->str, k->len)) first = f;
    }
    if (first) {
      pl_error(b->e, b->file, k->line, k->col, "duplicate key '%.80s' (first at %d:%d)", k->str,
               first->line, first->col);
      continue;
    }
    map->kids[2 * kept] = k;
    map->kids[2 * kept + 1] = v;
    kept++;
  }
  map->n = kept;
  return 0;
}

static int on_end(builder* b, const yaml_event_t* ev) {
  level* l = &b->lv[b->depth];
  pnode* n = l->node;
  if (n->kind == PN_MAP && l->n % 2 != 0)
    return fail(b, ev->start_mark, "%s", "mapping with a key and no value");
  if (l->n > 0) {
    n->kids = pl_alloc(b->arena, (size_t)l->n * sizeof *n->kids);
    if (n->kids == NULL) return out_of_memory(b, ev->start_mark);
    memcpy(n->kids, l->kids, (size_t)l->n * sizeof *n->kids);
  }
  n->n = n->kind == PN_MAP ? l->n / 2 : l->n;
  for (int i = 0; i < l->n; i++) {
    n->size += l->kids[i]->size;
    if (l->kids[i]->height + 1 > n->height) n->height = l->kids[i]->height + 1;
  }
  free(l->kids);
  l->kids = NULL;
  if (n->kind == PN_MAP && check_keys(b, n)) return -1;
  const char* anchor = l->anchor;
  b->depth--;
  if (anchor) register_anchor(b, anchor, n);
  yaml_mark_t at = {0, (size_t)(n->line - 1), (size_t)(n->col - 1)};
  return add_node(b, n, at);
}

static int on_alias(builder* b, const yaml_event_t* ev) {
  yaml_mark_t m = ev->start_mark;
  const char* name = (const char*)ev->data.alias.anchor;
  int i = find_anchor(b, name);
  if (i < 0) {
    if (pending_anchor(b, name))
      return fail(b, m, "alias '*%.60s' is inside the node it refers to", name);
    return fail(b, m, "alias '*%.60s' refers to no anchor defined before it", name);
  }
  pnode* t = b->anchors[i].node;
  b->total += t->size;
  if (b->total > PL_MAX_NODES)
    return fail(b, m, "aliases expand the document past %d nodes", PL_MAX_NODES);
  if (b->depth + t->height > PL_MAX_DEPTH + 1)
    return fail(b, m, "alias nests the document deeper than %d levels", PL_MAX_DEPTH);
  return add_node(b, t, m);
}

/* libyaml reports reader errors (bad encoding) by byte offset only. */
static void offset_position(const char* buf, size_t len, size_t off, int* line, int* col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off && i < len; i++) {
    if (buf[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

static void parser_error(builder* b, const yaml_parser_t* p, size_t len) {
  const char* problem = p->problem ? p->problem : "invalid YAML";
  const char* context = p->context ? p->context : "";
  int line, col;
  if (p->error == YAML_READER_ERROR) {
    offset_position(b->buf, len, p->problem_offset, &line, &col);
    pl_error(b->e, b->file, line, col, "YAML: %s", problem);
    return;
  }
  if (p->error == YAML_MEMORY_ERROR) {
    pl_error(b->e, b->file, 0, 0, "YAML: out of memory");
    return;
  }
  line = LINE(p->problem_mark);
  col = COL(p->problem_mark);
  pl_error(b->e, b->file, line, col, "YAML: %s%s%s", problem, *context ? " " : "", context);
}

int pl_yaml_parse(const char* file, const char* buf, size_t len, pl_arena* a, pnode** root,
                  policy_errors* e) {
  builder* b = calloc(1, sizeof *b);
  if (b == NULL) {
    pl_error(e, file, 0, 0, "out of memory");
    return -1;
  }
  b->file = file;
  b->buf = buf;
  b->arena = a;
  b->e = e;
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    free(b);
    pl_error(e, file, 0, 0, "out of memory");
    return -1;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char*)buf, len);
  int rc = 0, done = 0;
  while (!done && rc == 0) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      parser_error(b, &parser, len);
      rc = -1;
      break;
    }
    switch (ev.type) {
      case YAML_DOCUMENT_START_EVENT:
        if (++b->docs > 1) rc = fail(b, ev.start_mark, "%s", "more than one YAML document");
        break;
      case YAML_SCALAR_EVENT: rc = on_scalar(b, &ev); break;
      case YAML_SEQUENCE_START_EVENT: rc = on_start(b, &ev, PN_SEQ); break;
      case YAML_MAPPING_START_EVENT: rc = on_start(b, &ev, PN_MAP); break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: rc = on_end(b, &ev); break;
      case YAML_ALIAS_EVENT: rc = on_alias(b, &ev); break;
      case YAML_STREAM_END_EVENT: done = 1; break;
      default: break;
    }
    yaml_event_delete(&ev);
  }
  for (int d = 1; d <= b->depth; d++) free(b->lv[d].kids);
  if (rc == 0) *root = b->lv[0].node;
  yaml_parser_delete(&parser);
  free(b);
  return rc;
}

int pn_is_null(const pnode* n) {
  if (n->kind != PN_SCALAR || n->quoted) return 0;
  return n->len == 0 || !strcmp(n->str, "~") || !strcmp(n->str, "null") ||
         !strcmp(n->str, "Null") || !strcmp(n->str, "NULL");
}

int pn_bool(const pnode* n, int* out) {
  static const char* const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                    "YES",  "on",   "On",   "ON"};
  static const char* const no[] = {"false", "False", "FALSE", "no", "No",
                                   "NO",    "off",   "Off",   "OFF"};
  if (n->kind != PN_SCALAR || n->quoted) return 0;
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (!strcmp(n->str, yes[i])) {
      *out = 1;
      return 1;
    }
    if (!strcmp(n->str, no[i])) {
      *out = 0;
      return 1;
    }
  }
  return 0;
}

int pn_int(const pnode* n, int64_t* out) {
  if (n->kind != PN_SCALAR || n->quoted || n->len == 0) return 0;
  const char* s = n->str;
  int neg = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  size_t digits = strlen(s);
  if (digits == 0 || digits > 18) return 0; /* no overflow */
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return 0;
    v = v * 10 + (*s - '0');
  }
  *out = neg ? -v : v;
  return 1;
}
