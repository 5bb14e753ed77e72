/* Inside the policy engine: the arena every parsed file lives in, the YAML tree built from
 * libyaml events, the validated model and the schema's key tables. Nothing here outlives the
 * weft_policy that owns the arena. */
#ifndef WEFT_POLICY_INTERNAL_H
#define WEFT_POLICY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"

/* What one policy file may cost. Hostile input stops at the first limit it reaches. */
enum {
  PL_MAX_FILE = 1 << 20,   /* bytes */
  PL_MAX_DEPTH = 32,       /* nested collections, aliased content included */
  PL_MAX_SCALAR = 4096,    /* bytes of one scalar */
  PL_MAX_NODES = 10000,    /* nodes, counting aliased content at every use */
  PL_MAX_ENTRIES = 512,    /* items of one list, pairs of one mapping */
  PL_MAX_ANCHORS = 64,
  PL_MAX_ARENA = 16 << 20, /* bytes of parsed state */
  PL_MAX_GLOB = 255,
  PL_MAX_PLUGINS = 14,     /* names in net.plugin (NCCL_NET_PLUGIN's limit) */
};

/* ---- policy_util.c ---- */
typedef struct pl_chunk pl_chunk;
typedef struct {
  pl_chunk* head;
  size_t total;
} pl_arena;
/* Zeroed memory; NULL past PL_MAX_ARENA or when out of memory. */
void* pl_alloc(pl_arena* a, size_t n);
char* pl_strndup(pl_arena* a, const char* s, size_t n);
void pl_arena_free(pl_arena* a);

void pl_error(policy_errors* e, const char* file, int line, int col, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The candidate closest to word (case-insensitive edit distance), or NULL when none is close. */
const char* pl_suggest(const char* word, const char* const* cands, int n);
/* [A-Za-z_][A-Za-z0-9_]* */
int pl_env_name_ok(const char* s);
uint64_t pl_fnv1a(const void* p, size_t n, uint64_t h);
#define PL_FNV_SEED 0xcbf29ce484222325ull

/* ---- policy_yaml.c: libyaml events → tree ---- */
typedef enum { PN_SCALAR, PN_SEQ, PN_MAP } pn_kind;
typedef struct pnode {
  pn_kind kind;
  int line, col; /* 1-based start */
  int quoted;    /* scalar not written plain (quoted or block) */
  int raw_len;   /* source bytes of a one-line scalar; -1 when it spans lines */
  const char* str; /* scalar text (no NUL inside) */
  size_t len;
  struct pnode** kids; /* list: n items; mapping: key 2i, value 2i+1 */
  int n;
  int size;   /* nodes in the subtree (aliases count their target again) */
  int height; /* 1 for a scalar */
} pnode;

/* Parse one document. Aliases share their target node (the tree is a DAG, never cyclic).
 * Returns 0 with *root (NULL for an empty stream) or -1 after one error. */
int pl_yaml_parse(const char* file, const char* buf, size_t len, pl_arena* a, pnode** root,
                  policy_errors* e);

int pn_is_null(const pnode* n);
/* Plain true/false/yes/no/on/off in the usual spellings. */
int pn_bool(const pnode* n, int* out);
/* Plain decimal integer. */
int pn_int(const pnode* n, int64_t* out);

/* ---- the model ---- */
typedef struct {
  int set;
  int64_t min, max;
} pl_range;

typedef struct {
  const char** v;
  int n;
} pl_globs;

typedef enum { PL_ENV_SET, PL_ENV_UNSET, PL_ENV_EQ } pl_env_kind;
typedef struct {
  const char* name;
  const char* value;
  pl_env_kind kind;
} pl_env_cond;

typedef struct {
  policy_item* items;
  int nitems;
  uint64_t hash;
} pl_use;

typedef struct {
  const char* name;
  const char* description;
  int line, col;
  pl_globs hostname, nic, gpu;
  pl_range nodes, rpn;
  pl_env_cond* env;
  int nenv;
  pl_use use;
} pl_cluster;

struct weft_policy {
  pl_arena arena;
  const char* path;
  pl_cluster* clusters;
  int nclusters;
  int has_defaults;
  pl_use defaults;
};

/* ---- policy_schema*.c: tree → model ---- */
typedef struct {
  struct weft_policy* p;
  policy_errors* e;
  const char* file;
} pl_ctx;
#define PL_ERR(c, node, ...) pl_error((c)->e, (c)->file, (node)->line, (node)->col, __VA_ARGS__)

int pl_schema_build(struct weft_policy* p, const pnode* root, policy_errors* e);
/* match: mapping of conditions into cl. */
void pl_schema_match(pl_ctx* c, const pnode* map, pl_cluster* cl);
const char* pl_kind_name(const pnode* n);
/* Expect a mapping (error naming what otherwise); 1 when it is one. */
int pl_expect_map(pl_ctx* c, const pnode* n, const char* what);
/* Look a key up in keyset ks; on failure an error with a suggestion and -1. */
int pl_key_lookup(pl_ctx* c, const pnode* key, int ks, const char* where);
/* A non-empty scalar (errors say what); NULL otherwise. */
const char* pl_scalar(pl_ctx* c, const pnode* n, const char* what);

/* ---- policy_keys.c: the schema's own keys ---- */
typedef struct {
  const char* name;
  const char* type;
  const char* help;
} pl_key;
typedef struct {
  const char* context;
  const char* title;
  const pl_key* keys;
  int n;
} pl_keyset;
enum { PL_KS_TOP, PL_KS_CLUSTER, PL_KS_DEFAULTS, PL_KS_MATCH, PL_KS_NET, PL_KS_TUNER,
       PL_KS_RANGE, PL_KS_COUNT };
extern const pl_keyset pl_keysets[PL_KS_COUNT];

/* Names a policy may not set (WEFT_POLICY, WEFT_TEST_*). */
int pl_setting_forbidden(const char* name);

/* ---- policy_glob.c ---- */
/* NULL when pat is a usable glob, else what is wrong with it and *at its byte offset. */
const char* pl_glob_check(const char* pat, size_t* at);
int pl_glob_match(const char* pat, const char* s, int casefold);

#endif
