/* One case of the GPU correctness matrix, its name, the full matrix and the default sample.
 *
 * A case is one operation on the world's communicator: the collective (tests/coll's coll_kind,
 * plus SendRecvAlltoAll: n Sends and n Recvs per rank in one group), datatype, reduction (with
 * PreMulSum's scalar on the host or in device memory), size, in place or not, root. The
 * configuration (algorithm, protocol, transport) is the environment's: one ctest entry each.
 * Its name, e.g.  AllReduce/bfloat16/premulsum_dev/1048581/inplace/root0
 * together with the seed names the input data exactly (WEFT_GPU_CASE=<name> reruns it alone).
 *
 * Sizes are ELEMENT counts of the API's count argument (count; sendcount for AllGather;
 * recvcount for ReduceScatter; the per-peer count for AlltoAll, Gather, Scatter and
 * SendRecvAlltoAll): 0, 1, 7, 1023, 4097, 65539 (64Ki+3), 1048581 (1Mi+5), and two large ones
 * given in bytes: 16MiB+1 (16 MiB / sizeof(type) + 1 elements) and 64MiB (64 MiB / sizeof
 * (type)); for the collectives whose largest buffer is nranks * count both are divided by
 * nranks, so no buffer exceeds about 64 MiB.
 * Buffer offsets: send and receive pointers start 0..3 elements past a 64-byte boundary, chosen
 * per case from the seed (so unaligned starts are covered), with guard bytes around both.
 * Root: Reduce, Broadcast, Gather, Scatter root; SendRecv shift s (send to rank+s, receive from
 * rank-s; 0 is a send to self). */
#ifndef GPU_CASE_H
#define GPU_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "coll_case.h"

/* coll_kind values, then this one. */
#define GPU_A2A_P2P COLL_NUM
#define GPU_NUM_KINDS (COLL_NUM + 1)

#define GPU_SIZE_NUM 9
#define GPU_SIZE_SMALL 7 /* sizes [0, 7) are small; 7 and 8 are the large ones */

typedef struct {
  int kind;            /* coll_kind or GPU_A2A_P2P */
  ncclDataType_t type;
  coll_op op;          /* OP_NONE without a reduction; never OP_CUSTOM */
  int scalar_dev;      /* OP_PREMULSUM: the scalar in device memory (ncclScalarDevice) */
  int size;            /* [0, GPU_SIZE_NUM) */
  int inplace;
  int root;
} gpu_case;

#define GPU_CASE_STR 128

extern const char* const gpu_kind_name[GPU_NUM_KINDS];
extern const char* const gpu_size_name[GPU_SIZE_NUM];

int gpu_kind_is_reduction(int kind);
int gpu_kind_has_inplace(int kind);
int gpu_kind_has_root(int kind);
/* AlltoAll, Gather, Scatter: cases are skipped (not failed) while the library says "not
 * available yet" for them. */
int gpu_kind_optional(int kind);

/* The count argument (see above). */
size_t gpu_case_count(const gpu_case* c, int nranks);
void gpu_case_name(const gpu_case* c, char out[GPU_CASE_STR]);
/* Key of (seed, case): every input value and the offsets derive from it. */
uint64_t gpu_case_key(uint64_t seed, const gpu_case* c);
/* The coll_case the reference (coll_ref.h) is built from. */
coll_case gpu_case_ref(const gpu_case* c, int nranks);

typedef struct {
  gpu_case* v;
  int n, cap;
} gpu_case_list;

void gpu_list_add(gpu_case_list* l, const gpu_case* c);
void gpu_list_free(gpu_case_list* l);

/* What a run draws from. kinds: bit mask of (1 << kind). */
typedef struct {
  int nranks;
  unsigned kinds;
  int big;   /* sample: two large cases */
  int extra; /* sample: random cases after the coverage cases */
} gpu_space;

/* Every case of the space (all sizes, ops, types, roots, in place and out of place). */
void gpu_full_matrix(const gpu_space* sp, gpu_case_list* out);

/* The default sample, deterministic in (seed, space). Guarantees, for the kinds in the space:
 * every datatype x every op (host and device PreMulSum counted apart) over the reduction
 * collectives, spread so that every reduction collective meets every datatype and every op;
 * every data-movement collective x every datatype; every collective x every small size, in
 * place and out of place; every root (shift) of every rooted collective; with big, a 64 MiB
 * AllReduce and a 16MiB+1 data-movement case; then `extra` random small cases. */
void gpu_sample(const gpu_space* sp, uint64_t seed, gpu_case_list* out);

/* Keeps the cases whose name is one of the comma-separated names (case-insensitive). */
void gpu_list_keep_names(gpu_case_list* l, const char* names);
/* Keeps the cases every comma-separated word of filter equals a '/'-field of (e.g.
 * "AllReduce,bfloat16"). */
void gpu_list_keep_matching(gpu_case_list* l, const char* filter);

/* "std" (AllReduce, Reduce, Broadcast, AllGather, ReduceScatter), "p2p" (SendRecv,
 * SendRecvAlltoAll), "extra" (AlltoAll, Gather, Scatter), "all", or names, joined by ','.
 * Returns 0 for an unknown word. */
unsigned gpu_parse_kinds(const char* s);

#endif
