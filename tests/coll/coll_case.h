/* One case of the collective correctness matrix, its text form, the full matrix and the sampler
 * that picks the CI subset.
 *
 * A case is a configuration (ranks, transport, algorithm, protocol: one communicator) plus one
 * operation (collective, datatype, reduction, size, in place or not, root). Its text form is
 * what WEFT_COLL_CASE takes, e.g.
 *     3/net/Ring/LL/AllReduce/bfloat16/prod/1M+3/inplace/root0
 * Together with the seed (WEFT_TEST_SEED) it names the input data exactly, so one failing case
 * can be rerun alone.
 *
 * Sizes are ELEMENT COUNTS of the API's count argument (count for AllReduce, Reduce, Broadcast,
 * Send/Recv; sendcount for AllGather; recvcount for ReduceScatter; the per-rank count for
 * AlltoAll, Gather, Scatter):
 *     0, 1, 7           that many elements
 *     1M+3              1 MiB / sizeof(type) + 3 elements (just over 1 MiB, unaligned)
 *     48M               48 MiB / sizeof(type) elements; for the collectives whose largest buffer
 *                       is nranks * count (AllGather, ReduceScatter, AlltoAll, Gather, Scatter)
 *                       48 MiB / sizeof(type) / nranks, so no buffer exceeds 48 MiB.
 * Root: the root rank of Reduce, Broadcast, Gather, Scatter; for SendRecv the shift s (each rank
 * sends to rank+s and receives from rank-s, mod nranks; s = 0 is a send to self); 0 otherwise. */
#ifndef COLL_CASE_H
#define COLL_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

typedef enum {
  COLL_ALLREDUCE,
  COLL_REDUCE,
  COLL_BROADCAST,
  COLL_ALLGATHER,
  COLL_REDUCESCATTER,
  COLL_SENDRECV,
  COLL_ALLTOALL,
  COLL_GATHER,
  COLL_SCATTER,
  COLL_NUM
} coll_kind;

typedef enum {
  OP_SUM,
  OP_PROD,
  OP_MAX,
  OP_MIN,
  OP_AVG,
  OP_PREMULSUM, /* ncclRedOpCreatePreMulSum, scalar ncclScalarHostImmediate */
  OP_CUSTOM,    /* weftRedOpCreateCustom */
  OP_NUM,
  OP_NONE = -1  /* collectives without a reduction */
} coll_op;

typedef enum { SIZE_0, SIZE_1, SIZE_7, SIZE_1M3, SIZE_48M, SIZE_NUM } coll_size;
typedef enum { TR_SHM, TR_NET, TR_NUM } coll_transport;
/* Tree and TwoShot run AllReduce only; OneShot the five collectives (on up to 8 ranks); the
 * logarithmic algorithms (up to 32768 ranks): RecDoubling and Rabenseifner AllReduce, Bruck
 * AllGather, RecHalving ReduceScatter, Binomial Broadcast and Reduce. */
typedef enum {
  ALGO_RING,
  ALGO_TREE,
  ALGO_ONESHOT,
  ALGO_TWOSHOT,
  ALGO_RECDOUBLING,
  ALGO_RABENSEIFNER,
  ALGO_BRUCK,
  ALGO_RECHALVING,
  ALGO_BINOMIAL,
  ALGO_NUM
} coll_algo;
#define COLL_DIRECT_MAX_RANKS 8
#define COLL_LOG_MAX_RANKS 32768
typedef enum { PROTO_SIMPLE, PROTO_LL, PROTO_NUM } coll_proto;

typedef struct {
  /* configuration: one communicator */
  int nranks;
  coll_transport transport;
  coll_algo algo;
  coll_proto proto;
  /* operation */
  coll_kind coll;
  ncclDataType_t type;
  coll_op op;
  coll_size size;
  int inplace;
  int root;
} coll_case;

#define COLL_CASE_STR 128
#define COLL_NUM_TYPES 12

extern const char* const coll_kind_name[COLL_NUM];
extern const char* const coll_op_name[OP_NUM];
extern const char* const coll_size_name[SIZE_NUM];
extern const char* const coll_transport_name[TR_NUM];
extern const char* const coll_algo_name[ALGO_NUM];
extern const char* const coll_proto_name[PROTO_NUM];
const char* coll_type_name(ncclDataType_t type);

int coll_is_reduction(coll_kind c);
int coll_has_inplace(coll_kind c);
/* 1 for Reduce, Broadcast, Gather, Scatter (root) and SendRecv (shift). */
int coll_has_root(coll_kind c);
/* 1 when algo can run collective c on nranks (Ring: everything; Tree, TwoShot: AllReduce;
 * OneShot: AllReduce, Reduce, Broadcast, AllGather, ReduceScatter, up to 8 ranks; the
 * logarithmic ones as coll_algo lists them). */
int coll_algo_fits(coll_algo a, coll_kind c, int nranks);
/* 1 when the case is a valid point of the matrix (the algorithm fits the collective, op only
 * for reductions, in place only where the API defines it, root within the ranks, ...). */
int coll_case_valid(const coll_case* c);

/* The count argument for the case (see the size table above). */
size_t coll_case_count(const coll_case* c);

/* Text form (buffer of COLL_CASE_STR); parse returns 0 on success, -1 on a malformed or
 * invalid string. coll_case_form describes the form for error messages. */
void coll_case_format(const coll_case* c, char* out);
int coll_case_parse(const char* s, coll_case* c);
extern const char* const coll_case_form;

/* 64-bit key of (seed, case): every input value of the case derives from it. */
uint64_t coll_case_key(uint64_t seed, const coll_case* c);

/* splitmix64 finalizer: a well-mixed function of a counter. */
static inline uint64_t coll_mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A growable list of cases. */
typedef struct {
  coll_case* v;
  int n, cap;
} coll_case_list;

void coll_list_add(coll_case_list* l, const coll_case* c);
void coll_list_free(coll_case_list* l);

/* What a sample or the full matrix draws from. colls is a bit mask of (1 << coll_kind). */
typedef struct {
  int nranks;
  coll_transport transport;
  unsigned colls;
  int big;   /* sample: add 48M cases (one AllReduce, one data-movement collective) */
  int extra; /* sample: fully random cases added after the coverage cases */
} coll_space;

/* The full matrix of the space, ordered by configuration: every valid case of sizes 0 to 1M+3;
 * of the 48M cases, with big == 1 one per (collective, datatype) chosen by the seed, with
 * big >= 2 all of them, with big == 0 none. */
void coll_full_matrix(const coll_space* sp, uint64_t seed, coll_case_list* out);

/* The CI sample of the space for a seed. Deterministic in (seed, space). Guarantees, for the
 * collectives in the space: every collective x every datatype; every reduction collective x every
 * op; every datatype x every op (over the reduction collectives); every collective x sizes 0, 1,
 * 7, 1M+3; every collective x both protocols; in place and out of place for every collective
 * that has both; AllReduce x every algorithm x Simple/LL; with every algorithm but Ring forced
 * (OneShot, TwoShot, RecDoubling, Rabenseifner, Bruck, RecHalving, Binomial), every
 * collective they run x every datatype, every reduction they run x every op, in place and out
 * of place; every root (shift) of every rooted collective; with big, a 48M AllReduce and a 48M Broadcast or AllGather. Then `extra` random
 * cases (sizes up to 1M+3). Ordered by configuration (algorithm, protocol). */
void coll_sample(const coll_space* sp, uint64_t seed, coll_case_list* out);

/* One random valid case of the space (sizes up to 1M+3), as the sampler's extra cases. */
void coll_random_case(const coll_space* sp, uint64_t* rng, coll_case* out);

/* Stable sort by configuration (algorithm, protocol), keeping the order within one. */
void coll_list_sort_by_config(coll_case_list* l);

/* 1 when every comma-separated word of filter (NULL or "" matches all) equals one of the
 * '/'-separated fields of the case's text form (case-insensitive), e.g. "AllReduce,bfloat16,LL". */
int coll_case_matches(const coll_case* c, const char* filter);

#endif
