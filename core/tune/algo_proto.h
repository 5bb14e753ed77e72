/* NCCL_ALGO / NCCL_PROTO with NCCL's grammar, and the choice of algorithm, protocol and
 * channel count for one operation.
 *
 * Grammar: entries `[func:]elem[,elem…]` joined by ';'; only the first entry may omit the
 * function prefix (it then applies to every collective); a leading '^' in an element list
 * negates it (everything except…); names are case-insensitive. Functions: Broadcast, Reduce,
 * AllGather, ReduceScatter, AllReduce. Algorithms: Tree, Ring, CollNetDirect, CollNetChain,
 * NVLS, NVLSTree, PAT (NCCL's), OneShot, TwoShot (weft's direct algorithms), RecDoubling,
 * Rabenseifner, Binomial (weft's logarithmic ones; Bruck and RecHalving name PAT, which is
 * where the log-step AllGather and ReduceScatter run). Protocols: LL,
 * LL128, Simple. An unknown name is ncclInvalidUsage with a WARN naming the token. The choice
 * among what the masks allow is tune.h's. */
#ifndef WEFT_TUNE_ALGO_PROTO_H
#define WEFT_TUNE_ALGO_PROTO_H

#include <stddef.h>
#include "nccl.h"
#include "nccl_common.h"
#include "algo/algo.h" /* WEFT_NUM_ALGORITHMS, WEFT_ALGO_ONESHOT_ID, WEFT_ALGO_TWOSHOT_ID */

/* Per collective (ncclFuncBroadcast … ncclFuncAllReduce, indexes 0..4), a bit mask of allowed
 * algorithms (bit NCCL_ALGO_x) and protocols (bit NCCL_PROTO_x). */
#define WEFT_NUM_COLL_FUNCS 5
typedef struct {
  unsigned algo[WEFT_NUM_COLL_FUNCS];
  unsigned proto[WEFT_NUM_COLL_FUNCS];
} weft_algo_proto_mask;

/* Parse NCCL_ALGO (algo_spec) and NCCL_PROTO (proto_spec); NULL or "" allows everything. */
ncclResult_t tune_parse_masks(const char* algo_spec, const char* proto_spec,
                              weft_algo_proto_mask* out);

/* What the executors implement (host: Ring/Tree/OneShot/TwoShot × Simple/LL; device adds
 * LL128). */
typedef struct {
  unsigned algos;   /* bits of NCCL_ALGO_x */
  unsigned protos;  /* bits of NCCL_PROTO_x */
  int max_channels;
} weft_exec_caps;

typedef struct {
  int algo;     /* NCCL_ALGO_x */
  int proto;    /* NCCL_PROTO_x */
  int nchannels;
} weft_choice;

const char* tune_algo_name(int algo);
/* The name logs give algo running func: PAT(Bruck) / PAT(RecHalving) for the log-step
 * AllGather / ReduceScatter, else tune_algo_name. */
const char* tune_algo_name_for(int func, int algo);
const char* tune_proto_name(int proto);
/* "Broadcast" … "AllReduce" for ncclFunc 0..4, "Unknown" otherwise. */
const char* tune_func_name(int func);
/* "Tree,Ring" / "LL,Simple" for a mask of algorithms (protos = 0) or protocols; "none" when
 * empty. */
void tune_format_mask(char* buf, size_t len, unsigned bits, int protos);

#endif
