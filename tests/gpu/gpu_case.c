/* GPU case names, sizes, the full matrix and the default sample (see gpu_case.h). */
#include "gpu_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll_fp.h"

const char* const gpu_kind_name[GPU_NUM_KINDS] = {
    "AllReduce", "Reduce",   "Broadcast", "AllGather", "ReduceScatter",
    "SendRecv",  "AlltoAll", "Gather",    "Scatter",   "SendRecvAlltoAll"};

const char* const gpu_size_name[GPU_SIZE_NUM] = {"0",    "1",       "7",       "1023",  "4097",
                                                 "65539", "1048581", "16MiB+1", "64MiB"};
static const size_t small_elems[GPU_SIZE_SMALL] = {0, 1, 7, 1023, 4097, 65536 + 3, 1048576 + 5};

#define NUM_OPS 7 /* sum prod max min avg premulsum premulsum_dev */
static const char* const op_names[NUM_OPS] = {"sum", "prod",      "max",          "min",
                                              "avg", "premulsum", "premulsum_dev"};

int gpu_kind_is_reduction(int k) { return k < COLL_NUM && coll_is_reduction((coll_kind)k); }
int gpu_kind_has_inplace(int k) { return k < COLL_NUM && coll_has_inplace((coll_kind)k); }
int gpu_kind_has_root(int k) { return k < COLL_NUM && coll_has_root((coll_kind)k); }
int gpu_kind_optional(int k) { return k == COLL_ALLTOALL || k == COLL_GATHER || k == COLL_SCATTER; }

static int spread_by_ranks(int k) {
  return k == COLL_ALLGATHER || k == COLL_REDUCESCATTER || k == COLL_ALLTOALL ||
         k == COLL_GATHER || k == COLL_SCATTER || k == GPU_A2A_P2P;
}

size_t gpu_case_count(const gpu_case* c, int nranks) {
  if (c->size < GPU_SIZE_SMALL) return small_elems[c->size];
  size_t esz = fp_type_size(c->type);
  size_t bytes = (c->size == GPU_SIZE_SMALL ? 16u : 64u) << 20;
  size_t n = bytes / esz;
  if (spread_by_ranks(c->kind)) n /= (size_t)nranks;
  return c->size == GPU_SIZE_SMALL ? n + 1 : n;
}

static int op_index(const gpu_case* c) {
  return c->op == OP_PREMULSUM && c->scalar_dev ? NUM_OPS - 1 : (int)c->op;
}

void gpu_case_name(const gpu_case* c, char out[GPU_CASE_STR]) {
  snprintf(out, GPU_CASE_STR, "%s/%s/%s/%s/%s/root%d", gpu_kind_name[c->kind],
           coll_type_name(c->type), c->op == OP_NONE ? "none" : op_names[op_index(c)],
           gpu_size_name[c->size], c->inplace ? "inplace" : "outofplace", c->root);
}

uint64_t gpu_case_key(uint64_t seed, const gpu_case* c) {
  char s[GPU_CASE_STR];
  gpu_case_name(c, s);
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (const char* p = s; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return coll_mix64(seed ^ coll_mix64(h ^ 0x69707567ull));
}

coll_case gpu_case_ref(const gpu_case* c, int nranks) {
  coll_case r;
  memset(&r, 0, sizeof r);
  r.nranks = nranks;
  r.coll = c->kind == GPU_A2A_P2P ? COLL_ALLTOALL : (coll_kind)c->kind;
  r.type = c->type;
  r.op = c->op;
  r.size = SIZE_7; /* not used by the reference */
  r.inplace = c->inplace;
  r.root = c->root;
  return r;
}

void gpu_list_add(gpu_case_list* l, const gpu_case* c) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 256;
    l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
    if (!l->v) {
      fprintf(stderr, "out of memory for %d cases\n", l->cap);
      exit(1);
    }
  }
  l->v[l->n++] = *c;
}

void gpu_list_free(gpu_case_list* l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}

static void set_op(gpu_case* c, int o) {
  c->op = o == NUM_OPS - 1 ? OP_PREMULSUM : (coll_op)o;
  c->scalar_dev = o == NUM_OPS - 1;
}

void gpu_full_matrix(const gpu_space* sp, gpu_case_list* out) {
  for (int k = 0; k < GPU_NUM_KINDS; k++) {
    if (!(sp->kinds >> k & 1)) continue;
    int nops = gpu_kind_is_reduction(k) ? NUM_OPS : 1;
    int nroots = gpu_kind_has_root(k) ? sp->nranks : 1;
    int nip = gpu_kind_has_inplace(k) ? 2 : 1;
    for (int t = 0; t < COLL_NUM_TYPES; t++)
      for (int o = 0; o < nops; o++)
        for (int s = 0; s < GPU_SIZE_NUM; s++)
          for (int ip = 0; ip < nip; ip++)
            for (int root = 0; root < nroots; root++) {
              gpu_case c = {k, (ncclDataType_t)t, OP_NONE, 0, s, ip, root};
              if (nops > 1) set_op(&c, o);
              gpu_list_add(out, &c);
            }
  }
}

/* ---- sample ------------------------------------------------------------------------------- */

static int pick(uint64_t* rng, int n) { return (int)(coll_mix64(++*rng) % (uint64_t)n); }

/* Fills the fields the caller did not fix: op (reductions), in place, root; -1 means "draw". */
static gpu_case draw(const gpu_space* sp, uint64_t* rng, int kind, int type, int op, int size,
                     int inplace) {
  if (type < 0) type = pick(rng, COLL_NUM_TYPES);
  if (size < 0) size = 1 + pick(rng, GPU_SIZE_SMALL - 1); /* 1 .. 1048581 */
  gpu_case c = {kind, (ncclDataType_t)type, OP_NONE, 0, size, 0, 0};
  if (gpu_kind_is_reduction(kind)) set_op(&c, op >= 0 ? op : pick(rng, NUM_OPS));
  if (gpu_kind_has_inplace(kind)) c.inplace = inplace >= 0 ? inplace : pick(rng, 2);
  if (gpu_kind_has_root(kind)) c.root = pick(rng, sp->nranks);
  return c;
}

void gpu_sample(const gpu_space* sp, uint64_t seed, gpu_case_list* out) {
  uint64_t rng = coll_mix64(seed ^ 0x73616d706c65ull);
  int red[3], nred = 0, kinds[GPU_NUM_KINDS], nk = 0;
  for (int k = 0; k < GPU_NUM_KINDS; k++) {
    if (!(sp->kinds >> k & 1)) continue;
    kinds[nk++] = k;
    if (gpu_kind_is_reduction(k)) red[nred++] = k;
  }
  gpu_case c;
  /* Every type x op over the reduction collectives: pair p = t*7 + o goes to red[p % nred];
   * for a fixed t (or o) consecutive pairs cycle through every reduction collective. */
  for (int t = 0; nred && t < COLL_NUM_TYPES; t++)
    for (int o = 0; o < NUM_OPS; o++) {
      c = draw(sp, &rng, red[(t * NUM_OPS + o) % nred], t, o, -1, -1);
      gpu_list_add(out, &c);
    }
  /* Every data-movement collective x type. */
  for (int i = 0; i < nk; i++)
    for (int t = 0; !gpu_kind_is_reduction(kinds[i]) && t < COLL_NUM_TYPES; t++) {
      c = draw(sp, &rng, kinds[i], t, -1, -1, -1);
      gpu_list_add(out, &c);
    }
  /* Every collective x small size, in place and out of place alternating. */
  for (int i = 0; i < nk; i++)
    for (int s = 0; s < GPU_SIZE_SMALL; s++) {
      c = draw(sp, &rng, kinds[i], -1, -1, s, (s + i) & 1);
      gpu_list_add(out, &c);
    }
  /* Every root (shift) of every rooted collective. */
  for (int i = 0; i < nk; i++)
    for (int root = 0; gpu_kind_has_root(kinds[i]) && root < sp->nranks; root++) {
      c = draw(sp, &rng, kinds[i], -1, -1, -1, -1);
      c.root = root;
      gpu_list_add(out, &c);
    }
  /* Large: an AllReduce (float types, sum) and a data-movement case. */
  if (sp->big && nk) {
    static const ncclDataType_t ft[4] = {ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
    int k = (sp->kinds >> COLL_ALLREDUCE & 1) ? COLL_ALLREDUCE : kinds[0];
    c = draw(sp, &rng, k, ft[pick(&rng, 4)], OP_SUM, GPU_SIZE_SMALL + 1, -1);
    gpu_list_add(out, &c);
    int dm = -1;
    for (int i = 0; i < nk && dm < 0; i++)
      if (!gpu_kind_is_reduction(kinds[i])) dm = kinds[i];
    c = draw(sp, &rng, dm >= 0 ? dm : kinds[nk - 1], -1, -1, GPU_SIZE_SMALL, -1);
    gpu_list_add(out, &c);
  }
  for (int i = 0; nk && i < sp->extra; i++) {
    c = draw(sp, &rng, kinds[pick(&rng, nk)], -1, -1, -1, -1);
    gpu_list_add(out, &c);
  }
}

/* ---- selection ---------------------------------------------------------------------------- */

static void keep_if(gpu_case_list* l, int (*keep)(const char* name, const char* arg),
                    const char* arg) {
  int n = 0;
  for (int i = 0; i < l->n; i++) {
    char name[GPU_CASE_STR];
    gpu_case_name(&l->v[i], name);
    if (keep(name, arg)) l->v[n++] = l->v[i];
  }
  l->n = n;
}

static int in_list(const char* word, const char* list, char sep) {
  size_t wl = strlen(word);
  for (const char* p = list; *p;) {
    const char* e = strchr(p, sep);
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == wl && !strncasecmp(p, word, n)) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

static int name_listed(const char* name, const char* names) { return in_list(name, names, ','); }

static int fields_match(const char* name, const char* filter) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", filter);
  for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
    if (!in_list(w, name, '/')) return 0;
  return 1;
}

void gpu_list_keep_names(gpu_case_list* l, const char* names) { keep_if(l, name_listed, names); }
void gpu_list_keep_matching(gpu_case_list* l, const char* f) { keep_if(l, fields_match, f); }

unsigned gpu_parse_kinds(const char* s) {
  const unsigned std = (1u << COLL_ALLREDUCE) | (1u << COLL_REDUCE) | (1u << COLL_BROADCAST) |
                       (1u << COLL_ALLGATHER) | (1u << COLL_REDUCESCATTER);
  const unsigned p2p = (1u << COLL_SENDRECV) | (1u << GPU_A2A_P2P);
  const unsigned extra = (1u << COLL_ALLTOALL) | (1u << COLL_GATHER) | (1u << COLL_SCATTER);
  unsigned m = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    unsigned add = !strcasecmp(t, "std") ? std : !strcasecmp(t, "p2p") ? p2p
                   : !strcasecmp(t, "extra") ? extra : !strcasecmp(t, "all") ? std | p2p | extra
                                                                              : 0;
    for (int k = 0; !add && k < GPU_NUM_KINDS; k++)
      if (!strcasecmp(t, gpu_kind_name[k])) add = 1u << k;
    if (!add) return 0;
    m |= add;
  }
  return m;
}
