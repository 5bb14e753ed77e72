/* weft's rule tuner: the rules, how they are read (YAML, or NCCL's example CSV) and how one is
 * applied to NCCL's cost table. Pure: no environment, no logging (the loaders report positioned
 * errors into a policy_errors list), so tests link it directly (weft_tuner_rules).
 *
 * A rule matches an operation on: collective, byte range, node range, rank range, pipelined-op
 * range and registered buffers (each optional: omitted matches anything). It names a set of
 * algorithms, a set of protocols (each optional: omitted means any) and a channel count (0: the
 * core's). Applying the first matching rule whose set holds a usable cell (>= 0) to the table:
 * with one algorithm and one protocol, that cell becomes 0 (NCCL's way of saying "this one");
 * with a larger set, usable cells outside it become NCCL_ALGO_PROTO_IGNORE, so the core's model
 * picks the cheapest inside it. Cells that were NCCL_ALGO_PROTO_IGNORE are never written. A
 * rule whose set has no usable cell here is skipped, so a file can say "NVLS where it runs,
 * else Ring". */
#ifndef WEFT_TUNER_RULES_H
#define WEFT_TUNER_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_tuner.h"
#include "policy/policy.h" /* policy_errors: positioned error messages */

/* Algorithms: NCCL's seven, then weft's OneShot and TwoShot (weft.h), whose rows a table has
 * only when weft passes nine (the weftTunerAlgorithms extension; stock NCCL passes seven). */
enum { TUNER_MAX_RULES = 4096, TUNER_MAX_CHANNELS = 64, TUNER_NUM_COLLS = 5, TUNER_NUM_ALGOS = 9 };
#define TUNER_MAX_CHUNK (1ull << 30) /* bytes; a chunk larger than any buffer is a typo */

typedef struct {
  uint64_t min, max; /* inclusive */
} tuner_range;

typedef struct {
  unsigned colls;         /* bits of ncclFunc_t 0..4 */
  tuner_range bytes;      /* per-rank buffer ("size"); full buffer for AllGather/ReduceScatter */
  tuner_range nodes, ranks, pipe_ops;
  int reg_buff;           /* -1 any, 0, 1 */
  unsigned algos;         /* bits of NCCL_ALGO_* */
  unsigned protos;        /* bits of NCCL_PROTO_* */
  int channels;           /* 0: keep the core's */
  int line;               /* where it was written (1-based) */
  uint64_t chunk;         /* bytes per chunk (tuner v6 getChunkSize); 0: keep the core's */
} tuner_rule;

typedef struct {
  tuner_rule* rules;
  int n;
} tuner_rules;

#define TUNER_ANY_RANGE ((tuner_range){0, UINT64_MAX})
#define TUNER_ALL_COLLS ((1u << TUNER_NUM_COLLS) - 1)
#define TUNER_ALL_ALGOS ((1u << TUNER_NUM_ALGOS) - 1)
#define TUNER_ALL_PROTOS ((1u << NCCL_NUM_PROTOCOLS) - 1)

/* Read rules. name stands for the file in messages. Returns the rule count (>= 0), or -1 with
 * errs filled (*out untouched). YAML is strict: an unknown key, a wrong type or value, a bad
 * range is an error with line and column, and no rule of the file is used. CSV follows NCCL's
 * example tuner: bad lines are reported in errs but skipped (*skipped counts them), the others
 * are used. */
int tuner_rules_load_yaml(const char* name, const char* buf, size_t len, tuner_rules* out,
                          policy_errors* errs);
int tuner_rules_load_csv(const char* name, const char* buf, size_t len, tuner_rules* out,
                         policy_errors* errs, int* skipped);
void tuner_rules_free(tuner_rules* r);

/* The first rule that matches and can act on table; applies it (see above) and returns it, or
 * NULL (table untouched). *nch is set to the rule's channel count when it has one. No
 * allocation. */
const tuner_rule* tuner_rules_apply(const tuner_rules* r, int coll, size_t nbytes, size_t nranks,
                                    size_t nnodes, int pipe_ops, int reg_buff,
                                    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
                                    int* nch);

/* The same on a table of nalgo rows (NCCL's seven, or weft's nine): a rule naming only rows the
 * table lacks is skipped like one that cannot run. */
const tuner_rule* tuner_rules_apply_rows(const tuner_rules* r, int coll, size_t nbytes,
                                         size_t nranks, size_t nnodes, int pipe_ops, int reg_buff,
                                         float (*table)[NCCL_NUM_PROTOCOLS], int nalgo,
                                         int* nch);

/* The same rule choice for a v2 tuner, which names one algorithm and protocol: the first
 * matching rule naming exactly one of each, with the algorithm in algos_ok (others are
 * skipped). NULL: no opinion. */
const tuner_rule* tuner_rules_pick(const tuner_rules* r, int coll, size_t nbytes, size_t nranks,
                                   size_t nnodes, int pipe_ops, unsigned algos_ok, int* algo,
                                   int* proto, int* nch);

/* The chunk size for a v6 getChunkSize call: the first rule that matches the operation
 * (collective, bytes, ranks, nodes; pipelined ops and registration are not known there and
 * match anything) and whose algorithm and protocol sets hold algo and proto, when it sets a
 * chunk. Returns that rule and writes *chunk, or NULL (untouched). */
const tuner_rule* tuner_rules_chunk(const tuner_rules* r, int coll, size_t nbytes, size_t nranks,
                                    size_t nnodes, int algo, int proto, uint64_t* chunk);

/* Names, case-insensitive; '_' and '-' ignored (all_reduce, AllReduce; nvls_tree, NVLSTree).
 * Return the index, or -1. */
int tuner_coll_index(const char* s);
int tuner_algo_index(const char* s);
int tuner_proto_index(const char* s);
/* The accepted spellings (for "did you mean"). */
extern const char* const tuner_coll_names[TUNER_NUM_COLLS];
extern const char* const tuner_algo_names[TUNER_NUM_ALGOS];
extern const char* const tuner_proto_names[NCCL_NUM_PROTOCOLS];

/* A byte count: digits with an optional K, M, G or T suffix (powers of 1024, optionally followed
 * by B or iB, any case). 0 on success. */
int tuner_parse_bytes(const char* s, uint64_t* out);

#endif
