/* Case description, text form, full matrix and CI sampler (see coll_case.h). */
#include "coll_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll_fp.h"
#include "testutil.h"

const char* const coll_kind_name[COLL_NUM] = {"AllReduce", "Reduce",   "Broadcast",
                                              "AllGather", "ReduceScatter", "SendRecv",
                                              "AlltoAll",  "Gather",   "Scatter"};
const char* const coll_op_name[OP_NUM] = {"sum", "prod", "max", "min", "avg", "premulsum", "custom"};
const char* const coll_size_name[SIZE_NUM] = {"0", "1", "7", "1M+3", "48M"};
const char* const coll_transport_name[TR_NUM] = {"shm", "net"};
const char* const coll_algo_name[ALGO_NUM] = {"Ring", "Tree", "OneShot", "TwoShot"};
const char* const coll_proto_name[PROTO_NUM] = {"Simple", "LL"};

static const char* const type_names[COLL_NUM_TYPES] = {
    "int8",    "uint8",   "int32",   "uint32",   "int64",  "uint64",
    "float16", "float32", "float64", "bfloat16", "f8e4m3", "f8e5m2"};

const char* coll_type_name(ncclDataType_t t) {
  return (int)t >= 0 && (int)t < COLL_NUM_TYPES ? type_names[t] : "?";
}

int coll_is_reduction(coll_kind c) {
  return c == COLL_ALLREDUCE || c == COLL_REDUCE || c == COLL_REDUCESCATTER;
}

int coll_has_inplace(coll_kind c) {
  return c == COLL_ALLREDUCE || c == COLL_REDUCE || c == COLL_BROADCAST || c == COLL_ALLGATHER ||
         c == COLL_REDUCESCATTER;
}

int coll_has_root(coll_kind c) {
  return c == COLL_REDUCE || c == COLL_BROADCAST || c == COLL_GATHER || c == COLL_SCATTER ||
         c == COLL_SENDRECV;
}

int coll_algo_fits(coll_algo a, coll_kind c, int nranks) {
  switch (a) {
    case ALGO_RING: return 1;
    case ALGO_TREE: return c == COLL_ALLREDUCE;
    case ALGO_TWOSHOT: return c == COLL_ALLREDUCE && nranks <= COLL_DIRECT_MAX_RANKS;
    case ALGO_ONESHOT:
      return nranks <= COLL_DIRECT_MAX_RANKS &&
             (c == COLL_ALLREDUCE || c == COLL_REDUCE || c == COLL_BROADCAST ||
              c == COLL_ALLGATHER || c == COLL_REDUCESCATTER);
    default: return 0;
  }
}

int coll_case_valid(const coll_case* c) {
  if (c->nranks < 1 || (int)c->transport < 0 || c->transport >= TR_NUM) return 0;
  if ((int)c->algo < 0 || c->algo >= ALGO_NUM || (int)c->proto < 0 || c->proto >= PROTO_NUM)
    return 0;
  if ((int)c->coll < 0 || c->coll >= COLL_NUM) return 0;
  if ((int)c->type < 0 || (int)c->type >= COLL_NUM_TYPES) return 0;
  if ((int)c->size < 0 || c->size >= SIZE_NUM) return 0;
  if (!coll_algo_fits(c->algo, c->coll, c->nranks)) return 0;
  if (coll_is_reduction(c->coll) ? ((int)c->op < 0 || c->op >= OP_NUM) : c->op != OP_NONE)
    return 0;
  if (c->inplace != 0 && (c->inplace != 1 || !coll_has_inplace(c->coll))) return 0;
  if (coll_has_root(c->coll) ? (c->root < 0 || c->root >= c->nranks) : c->root != 0) return 0;
  return 1;
}

static int coll_scales_with_ranks(coll_kind c) {
  return c == COLL_ALLGATHER || c == COLL_REDUCESCATTER || c == COLL_ALLTOALL ||
         c == COLL_GATHER || c == COLL_SCATTER;
}

size_t coll_case_count(const coll_case* c) {
  size_t esz = fp_type_size(c->type);
  switch (c->size) {
    case SIZE_0: return 0;
    case SIZE_1: return 1;
    case SIZE_7: return 7;
    case SIZE_1M3: return (1u << 20) / esz + 3;
    case SIZE_48M: {
      size_t n = (48u << 20) / esz;
      return coll_scales_with_ranks(c->coll) ? n / (size_t)c->nranks : n;
    }
    default: return 0;
  }
}

void coll_case_format(const coll_case* c, char* out) {
  snprintf(out, COLL_CASE_STR, "%d/%s/%s/%s/%s/%s/%s/%s/%s/root%d", c->nranks,
           coll_transport_name[c->transport], coll_algo_name[c->algo],
           coll_proto_name[c->proto], coll_kind_name[c->coll], coll_type_name(c->type),
           c->op == OP_NONE ? "none" : coll_op_name[c->op], coll_size_name[c->size],
           c->inplace ? "inplace" : "outofplace", c->root);
}

static int lookup(const char* tok, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcasecmp(tok, names[i])) return i;
  return -1;
}

int coll_case_parse(const char* s, coll_case* out) {
  char buf[COLL_CASE_STR * 2];
  char* f[10];
  int nf = 0;
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
    if (nf == 10) {
      nf++;
      break;
    }
    f[nf++] = t;
  }
  coll_case c;
  memset(&c, 0, sizeof c);
  char* end = NULL;
  int ok = nf == 10;
  if (ok) {
    c.nranks = (int)strtol(f[0], &end, 10);
    ok = *end == 0;
  }
  int tr = ok ? lookup(f[1], coll_transport_name, TR_NUM) : -1;
  int al = ok ? lookup(f[2], coll_algo_name, ALGO_NUM) : -1;
  int pr = ok ? lookup(f[3], coll_proto_name, PROTO_NUM) : -1;
  int co = ok ? lookup(f[4], coll_kind_name, COLL_NUM) : -1;
  int ty = ok ? lookup(f[5], type_names, COLL_NUM_TYPES) : -1;
  int op = ok ? (strcasecmp(f[6], "none") ? lookup(f[6], coll_op_name, OP_NUM) : OP_NONE) : -1;
  int sz = ok ? lookup(f[7], coll_size_name, SIZE_NUM) : -1;
  int ip = !ok ? -1 : !strcasecmp(f[8], "inplace") ? 1 : !strcasecmp(f[8], "outofplace") ? 0 : -1;
  if (ok && !strncasecmp(f[9], "root", 4)) {
    c.root = (int)strtol(f[9] + 4, &end, 10);
    ok = *end == 0 && f[9][4] != 0;
  } else {
    ok = 0;
  }
  ok = ok && tr >= 0 && al >= 0 && pr >= 0 && co >= 0 && ty >= 0 &&
       (op >= 0 || op == OP_NONE) && sz >= 0 && ip >= 0;
  if (ok) {
    c.transport = (coll_transport)tr;
    c.algo = (coll_algo)al;
    c.proto = (coll_proto)pr;
    c.coll = (coll_kind)co;
    c.type = (ncclDataType_t)ty;
    c.op = (coll_op)op;
    c.size = (coll_size)sz;
    c.inplace = ip;
  }
  if (!ok || !coll_case_valid(&c)) return -1;
  *out = c;
  return 0;
}

const char* const coll_case_form =
    "nranks/shm|net/Ring|Tree|OneShot|TwoShot/Simple|LL/collective/type/op|none/0|1|7|1M+3|48M/"
    "inplace|outofplace/rootN (Tree and TwoShot only for AllReduce, OneShot for AllReduce, "
    "Reduce, Broadcast, AllGather and ReduceScatter on up to 8 ranks, an op only for "
    "AllReduce, Reduce and ReduceScatter)";

uint64_t coll_case_key(uint64_t seed, const coll_case* c) {
  char s[COLL_CASE_STR];
  coll_case_format(c, s);
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (const char* p = s; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return coll_mix64(seed ^ coll_mix64(h));
}

void coll_list_add(coll_case_list* l, const coll_case* c) {
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

void coll_list_free(coll_case_list* l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}

void coll_full_matrix(const coll_space* sp, uint64_t seed, coll_case_list* out) {
  uint64_t rng = coll_mix64(seed ^ 0xf011ull ^ ((uint64_t)sp->nranks << 8) ^ sp->transport) | 1;
  coll_case c;
  memset(&c, 0, sizeof c);
  c.nranks = sp->nranks;
  c.transport = sp->transport;
  for (int co = 0; co < COLL_NUM; co++) {
    if (!(sp->colls & (1u << co))) continue;
    int red = coll_is_reduction((coll_kind)co);
    for (int ty = 0; ty < COLL_NUM_TYPES; ty++) {
      int first48 = out->n, n48 = 0;
      for (int al = 0; al < ALGO_NUM; al++)
        for (int pr = 0; pr < PROTO_NUM; pr++)
          for (int op = red ? 0 : OP_NONE; op < (red ? OP_NUM : OP_NONE + 1); op++)
            for (int sz = 0; sz < SIZE_NUM; sz++)
              for (int ip = 0; ip < (coll_has_inplace((coll_kind)co) ? 2 : 1); ip++)
                for (int r = 0; r < (coll_has_root((coll_kind)co) ? sp->nranks : 1); r++) {
                  c.algo = (coll_algo)al;
                  c.proto = (coll_proto)pr;
                  c.coll = (coll_kind)co;
                  c.type = (ncclDataType_t)ty;
                  c.op = (coll_op)op;
                  c.size = (coll_size)sz;
                  c.inplace = ip;
                  c.root = r;
                  if (!coll_case_valid(&c)) continue;
                  if (sz != SIZE_48M) {
                    coll_list_add(out, &c);
                  } else if (sp->big >= 2) {
                    coll_list_add(out, &c);
                  } else if (sp->big == 1) { /* reservoir: one 48M case per (coll, type) */
                    n48++;
                    if (n48 == 1) {
                      coll_list_add(out, &c);
                      first48 = out->n - 1;
                    } else if (test_rand(&rng) % (uint64_t)n48 == 0) {
                      out->v[first48] = c;
                    }
                  }
                }
    }
  }
  coll_list_sort_by_config(out);
}

/* Constraints for one sampled case; -1 leaves a field free. */
typedef struct {
  int coll, type, op, size, inplace, root, algo, proto;
} want_t;

static const want_t ANY = {-1, -1, -1, -1, -1, -1, -1, -1};

static int pick(uint64_t* rng, int n) { return (int)(test_rand(rng) % (uint64_t)n); }

static int coll_fits(int co, const want_t* w, const coll_space* sp) {
  if (!(sp->colls & (1u << co))) return 0;
  if (w->coll >= 0 && w->coll != co) return 0;
  if (w->op >= 0 && !coll_is_reduction((coll_kind)co)) return 0;
  if (w->algo >= 0 && !coll_algo_fits((coll_algo)w->algo, (coll_kind)co, sp->nranks)) return 0;
  if (w->inplace == 1 && !coll_has_inplace((coll_kind)co)) return 0;
  if (w->root > 0 && !coll_has_root((coll_kind)co)) return 0;
  return 1;
}

/* Sizes drawn when the size is free: mostly small, some just over 1 MiB. */
static coll_size random_size(uint64_t* rng) {
  static const coll_size table[8] = {SIZE_0, SIZE_1, SIZE_1, SIZE_7,
                                     SIZE_7, SIZE_7, SIZE_7, SIZE_1M3};
  return table[pick(rng, 8)];
}

/* A random valid case meeting w; 0 when no collective of the space can. */
static int random_case(const coll_space* sp, uint64_t* rng, const want_t* w, coll_case* out) {
  int fits[COLL_NUM], nfit = 0;
  for (int co = 0; co < COLL_NUM; co++)
    if (coll_fits(co, w, sp)) fits[nfit++] = co;
  if (nfit == 0) return 0;
  coll_case c;
  memset(&c, 0, sizeof c);
  c.nranks = sp->nranks;
  c.transport = sp->transport;
  c.coll = (coll_kind)fits[pick(rng, nfit)];
  c.type = (ncclDataType_t)(w->type >= 0 ? w->type : pick(rng, COLL_NUM_TYPES));
  c.op = coll_is_reduction(c.coll) ? (coll_op)(w->op >= 0 ? w->op : pick(rng, OP_NUM)) : OP_NONE;
  if (w->algo >= 0) {
    c.algo = (coll_algo)w->algo;
  } else {
    int fit[ALGO_NUM], nfit_a = 0;
    for (int a = 0; a < ALGO_NUM; a++)
      if (coll_algo_fits((coll_algo)a, c.coll, sp->nranks)) fit[nfit_a++] = a;
    c.algo = (coll_algo)fit[pick(rng, nfit_a)];
  }
  c.proto = (coll_proto)(w->proto >= 0 ? w->proto : pick(rng, PROTO_NUM));
  c.size = w->size >= 0 ? (coll_size)w->size : random_size(rng);
  c.inplace = coll_has_inplace(c.coll) ? (w->inplace >= 0 ? w->inplace : pick(rng, 2)) : 0;
  c.root = coll_has_root(c.coll) ? (w->root >= 0 ? w->root : pick(rng, sp->nranks)) : 0;
  if (!coll_case_valid(&c)) return 0;
  *out = c;
  return 1;
}

static int case_meets(const coll_case* c, const want_t* w) {
  return (w->coll < 0 || w->coll == (int)c->coll) && (w->type < 0 || w->type == (int)c->type) &&
         (w->op < 0 || w->op == (int)c->op) && (w->size < 0 || w->size == (int)c->size) &&
         (w->inplace < 0 || w->inplace == c->inplace) && (w->root < 0 || w->root == c->root) &&
         (w->algo < 0 || w->algo == (int)c->algo) && (w->proto < 0 || w->proto == (int)c->proto);
}

/* Adds a random case meeting w unless the list already has one. */
static void cover(coll_case_list* l, const coll_space* sp, uint64_t* rng, want_t w) {
  for (int i = 0; i < l->n; i++)
    if (case_meets(&l->v[i], &w)) return;
  coll_case c;
  if (random_case(sp, rng, &w, &c)) coll_list_add(l, &c);
}

void coll_sample(const coll_space* sp, uint64_t seed, coll_case_list* out) {
  uint64_t rng = coll_mix64(seed ^ coll_mix64(((uint64_t)sp->nranks << 32) ^
                                               ((uint64_t)sp->transport << 24) ^ sp->colls)) | 1;
  coll_case_list l = {0};
  want_t w;
  if (sp->colls & (1u << COLL_ALLREDUCE))
    for (int al = 0; al < ALGO_NUM; al++)
      for (int pr = 0; pr < PROTO_NUM; pr++) {
        w = ANY, w.coll = COLL_ALLREDUCE, w.algo = al, w.proto = pr;
        cover(&l, sp, &rng, w);
      }
  for (int co = 0; co < COLL_NUM; co++) {
    if (!(sp->colls & (1u << co))) continue;
    for (int ty = 0; ty < COLL_NUM_TYPES; ty++) {
      w = ANY, w.coll = co, w.type = ty;
      cover(&l, sp, &rng, w);
    }
    if (coll_is_reduction((coll_kind)co))
      for (int op = 0; op < OP_NUM; op++) {
        w = ANY, w.coll = co, w.op = op;
        cover(&l, sp, &rng, w);
      }
  }
  for (int ty = 0; ty < COLL_NUM_TYPES; ty++)
    for (int op = 0; op < OP_NUM; op++) {
      w = ANY, w.type = ty, w.op = op;
      cover(&l, sp, &rng, w);
    }
  /* The direct algorithms forced: every collective they run x every datatype and op, in place
   * and out of place. */
  for (int al = ALGO_ONESHOT; al <= ALGO_TWOSHOT; al++)
    for (int co = 0; co < COLL_NUM; co++) {
      if (!(sp->colls & (1u << co)) || !coll_algo_fits((coll_algo)al, (coll_kind)co, sp->nranks))
        continue;
      for (int ty = 0; ty < COLL_NUM_TYPES; ty++) {
        w = ANY, w.coll = co, w.algo = al, w.type = ty;
        cover(&l, sp, &rng, w);
      }
      if (coll_is_reduction((coll_kind)co))
        for (int op = 0; op < OP_NUM; op++) {
          w = ANY, w.coll = co, w.algo = al, w.op = op;
          cover(&l, sp, &rng, w);
        }
      if (coll_has_inplace((coll_kind)co))
        for (int ip = 0; ip < 2; ip++) {
          w = ANY, w.coll = co, w.algo = al, w.inplace = ip;
          cover(&l, sp, &rng, w);
        }
    }
  for (int co = 0; co < COLL_NUM; co++) {
    if (!(sp->colls & (1u << co))) continue;
    for (int sz = 0; sz < SIZE_48M; sz++) {
      w = ANY, w.coll = co, w.size = sz;
      cover(&l, sp, &rng, w);
    }
    for (int pr = 0; pr < PROTO_NUM; pr++) {
      w = ANY, w.coll = co, w.proto = pr;
      cover(&l, sp, &rng, w);
    }
    if (coll_has_inplace((coll_kind)co))
      for (int ip = 0; ip < 2; ip++) {
        w = ANY, w.coll = co, w.inplace = ip;
        cover(&l, sp, &rng, w);
      }
    if (coll_has_root((coll_kind)co))
      for (int r = 0; r < sp->nranks; r++) {
        w = ANY, w.coll = co, w.root = r;
        cover(&l, sp, &rng, w);
      }
  }
  if (sp->big) {
    w = ANY, w.coll = COLL_ALLREDUCE, w.size = SIZE_48M;
    cover(&l, sp, &rng, w);
    int movers[2] = {COLL_BROADCAST, COLL_ALLGATHER};
    int m = movers[pick(&rng, 2)];
    if (!(sp->colls & (1u << m))) m = movers[m == COLL_BROADCAST];
    w = ANY, w.coll = m, w.size = SIZE_48M;
    cover(&l, sp, &rng, w);
  }
  for (int i = 0; i < sp->extra; i++) {
    coll_case c;
    if (random_case(sp, &rng, &ANY, &c)) coll_list_add(&l, &c);
  }
  coll_list_sort_by_config(&l);
  for (int i = 0; i < l.n; i++) coll_list_add(out, &l.v[i]);
  coll_list_free(&l);
}

void coll_random_case(const coll_space* sp, uint64_t* rng, coll_case* out) {
  while (!random_case(sp, rng, &ANY, out)) {
  }
}

void coll_list_sort_by_config(coll_case_list* l) {
  coll_case* tmp = malloc((size_t)(l->n ? l->n : 1) * sizeof *tmp);
  if (!tmp) exit(1);
  int k = 0;
  for (int cfg = 0; cfg < ALGO_NUM * PROTO_NUM; cfg++)
    for (int i = 0; i < l->n; i++)
      if ((int)l->v[i].algo * PROTO_NUM + (int)l->v[i].proto == cfg) tmp[k++] = l->v[i];
  memcpy(l->v, tmp, (size_t)l->n * sizeof *tmp);
  free(tmp);
}

int coll_case_matches(const coll_case* c, const char* filter) {
  if (!filter || !*filter) return 1;
  char s[COLL_CASE_STR], fl[512];
  coll_case_format(c, s);
  snprintf(fl, sizeof fl, "%s", filter);
  for (char *save = NULL, *word = strtok_r(fl, ",", &save); word;
       word = strtok_r(NULL, ",", &save)) {
    char fields[COLL_CASE_STR];
    memcpy(fields, s, sizeof fields);
    int found = 0;
    for (char *s2 = NULL, *t = strtok_r(fields, "/", &s2); t && !found; t = strtok_r(NULL, "/", &s2))
      found = !strcasecmp(t, word);
    if (!found) return 0;
  }
  return 1;
}
