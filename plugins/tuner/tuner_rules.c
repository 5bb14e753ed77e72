/* Rules: names, byte counts, matching and applying one to the cost table (see tuner_rules.h). */
#include "tuner_rules.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char* const tuner_coll_names[TUNER_NUM_COLLS] = {"broadcast", "reduce", "allgather",
                                                       "reducescatter", "allreduce"};
const char* const tuner_algo_names[TUNER_NUM_ALGOS] = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat",
    "oneshot", "twoshot"};
const char* const tuner_proto_names[NCCL_NUM_PROTOCOLS] = {"ll", "ll128", "simple"};

/* a and b equal ignoring case, '_' and '-'. */
static int same_name(const char* a, const char* b) {
  for (;;) {
    while (*a == '_' || *a == '-') a++;
    while (*b == '_' || *b == '-') b++;
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    if (*a == '\0') return 1;
    a++;
    b++;
  }
}

static int lookup(const char* const* names, int n, const char* s) {
  for (int i = 0; i < n; i++)
    if (same_name(names[i], s)) return i;
  return -1;
}

int tuner_coll_index(const char* s) { return lookup(tuner_coll_names, TUNER_NUM_COLLS, s); }
int tuner_algo_index(const char* s) { return lookup(tuner_algo_names, TUNER_NUM_ALGOS, s); }
int tuner_proto_index(const char* s) { return lookup(tuner_proto_names, NCCL_NUM_PROTOCOLS, s); }

int tuner_parse_bytes(const char* s, uint64_t* out) {
  if (s == NULL || !isdigit((unsigned char)*s)) return -1;
  uint64_t v = 0;
  for (; isdigit((unsigned char)*s); s++) {
    uint64_t d = (uint64_t)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  int shift = 0;
  switch (toupper((unsigned char)*s)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
  }
  if (shift) {
    s++;
    if (toupper((unsigned char)s[0]) == 'I' && toupper((unsigned char)s[1]) == 'B') s += 2;
    else if (toupper((unsigned char)s[0]) == 'B') s++;
  }
  if (*s != '\0') return -1;
  if (shift && v > (UINT64_MAX >> shift)) return -1;
  *out = v << shift;
  return 0;
}

void tuner_rules_free(tuner_rules* r) {
  if (r == NULL) return;
  free(r->rules);
  r->rules = NULL;
  r->n = 0;
}

static int in(const tuner_range* r, uint64_t v) { return v >= r->min && v <= r->max; }

static int matches(const tuner_rule* r, int coll, size_t nbytes, size_t nranks, size_t nnodes,
                   int pipe_ops, int reg_buff) {
  if (coll < 0 || coll >= TUNER_NUM_COLLS || !(r->colls & (1u << coll))) return 0;
  if (!in(&r->bytes, nbytes) || !in(&r->ranks, nranks) || !in(&r->nodes, nnodes)) return 0;
  if (!in(&r->pipe_ops, pipe_ops < 0 ? 0 : (uint64_t)pipe_ops)) return 0;
  if (r->reg_buff >= 0 && r->reg_buff != (reg_buff != 0)) return 0;
  return 1;
}

static int one_bit(unsigned v) { return v && !(v & (v - 1)); }

static int bit_index(unsigned v) {
  int i = 0;
  while (!(v & 1u)) {
    v >>= 1;
    i++;
  }
  return i;
}

const tuner_rule* tuner_rules_apply(const tuner_rules* rs, int coll, size_t nbytes, size_t nranks,
                                    size_t nnodes, int pipe_ops, int reg_buff,
                                    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
                                    int* nch) {
  return tuner_rules_apply_rows(rs, coll, nbytes, nranks, nnodes, pipe_ops, reg_buff, table,
                                NCCL_NUM_ALGORITHMS, nch);
}

const tuner_rule* tuner_rules_apply_rows(const tuner_rules* rs, int coll, size_t nbytes,
                                         size_t nranks, size_t nnodes, int pipe_ops, int reg_buff,
                                         float (*table)[NCCL_NUM_PROTOCOLS], int nalgo,
                                         int* nch) {
  if (nalgo > TUNER_NUM_ALGOS) nalgo = TUNER_NUM_ALGOS;
  for (int i = 0; rs && i < rs->n; i++) {
    const tuner_rule* r = &rs->rules[i];
    if (!matches(r, coll, nbytes, nranks, nnodes, pipe_ops, reg_buff)) continue;
    int inside = 0;
    for (int a = 0; a < nalgo; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
        if ((r->algos & (1u << a)) && (r->protos & (1u << p)) && table[a][p] >= 0) inside++;
    if (inside == 0) continue; /* nothing it names can run here: the next rule */
    if (one_bit(r->algos) && one_bit(r->protos)) {
      table[bit_index(r->algos)][bit_index(r->protos)] = 0.0f;
    } else {
      for (int a = 0; a < nalgo; a++)
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
          if (table[a][p] >= 0 && !((r->algos & (1u << a)) && (r->protos & (1u << p))))
            table[a][p] = (float)NCCL_ALGO_PROTO_IGNORE;
    }
    if (r->channels > 0) *nch = r->channels;
    return r;
  }
  return NULL;
}

const tuner_rule* tuner_rules_pick(const tuner_rules* rs, int coll, size_t nbytes, size_t nranks,
                                   size_t nnodes, int pipe_ops, unsigned algos_ok, int* algo,
                                   int* proto, int* nch) {
  for (int i = 0; rs && i < rs->n; i++) {
    const tuner_rule* r = &rs->rules[i];
    if (!matches(r, coll, nbytes, nranks, nnodes, pipe_ops, 0)) continue;
    if (!one_bit(r->algos) || !one_bit(r->protos) || !(r->algos & algos_ok)) continue;
    *algo = bit_index(r->algos);
    *proto = bit_index(r->protos);
    if (r->channels > 0) *nch = r->channels;
    return r;
  }
  return NULL;
}

const tuner_rule* tuner_rules_chunk(const tuner_rules* rs, int coll, size_t nbytes, size_t nranks,
                                    size_t nnodes, int algo, int proto, uint64_t* chunk) {
  if (algo < 0 || algo >= NCCL_NUM_ALGORITHMS || proto < 0 || proto >= NCCL_NUM_PROTOCOLS)
    return NULL;
  for (int i = 0; rs && i < rs->n; i++) {
    const tuner_rule* r = &rs->rules[i];
    if (coll < 0 || coll >= TUNER_NUM_COLLS || !(r->colls & (1u << coll))) continue;
    if (!in(&r->bytes, nbytes) || !in(&r->ranks, nranks) || !in(&r->nodes, nnodes)) continue;
    if (!(r->algos & (1u << algo)) || !(r->protos & (1u << proto))) continue;
    if (r->chunk == 0) return NULL; /* the first rule that applies keeps the core's chunk */
    *chunk = r->chunk;
    return r;
  }
  return NULL;
}
