/* The strings NCCL's profiler descriptors carry for functions, datatypes, algorithms and
 * protocols (v2+), and their inverse for the v1 shim, which passes indexes. */
#include <string.h>

#include "plugin/profiler.h"
#include "util/names.h"

static const char* const funcs[WEFT_PROF_NFUNCS] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
    "Send",      "Recv",   "AlltoAll",  "Scatter",       "Gather"};
static const char* const dtypes[ncclNumTypes] = {
    "ncclInt8",    "ncclUint8",   "ncclInt32",      "ncclUint32",     "ncclInt64",
    "ncclUint64",  "ncclFloat16", "ncclFloat32",    "ncclFloat64",    "ncclBfloat16",
    "ncclFloat8e4m3", "ncclFloat8e5m2"};
/* NCCL's seven, then weft's own in NCCL's spelling (algo/algo.h numbers them after NCCL's). */
static const char* const algos[] = {"TREE",    "RING",        "COLLNET_DIRECT", "COLLNET_CHAIN",
                                    "NVLS",    "NVLS_TREE",   "PAT",            "ONESHOT",
                                    "TWOSHOT", "RECDOUBLING", "RABENSEIFNER",   "BINOMIAL"};
static const char* const protos[NCCL_NUM_PROTOCOLS] = {"LL", "LL128", "SIMPLE"};

#define NAME_OF(table, i) \
  ((i) >= 0 && (size_t)(i) < sizeof table / sizeof table[0] ? table[i] : "Unknown")

const char* prof_func_name(int func) { return NAME_OF(funcs, func); }
const char* prof_dtype_name(int dtype) { return NAME_OF(dtypes, dtype); }
const char* prof_algo_name(int algo) { return NAME_OF(algos, algo); }
const char* prof_proto_name(int proto) { return NAME_OF(protos, proto); }

/* Index of s in table, or fallback (unknown or NULL). */
static int name_index(const char* const* table, int n, const char* s, int fallback) {
  if (s == NULL) return fallback;
  for (int i = 0; i < n; i++)
    if (strcmp(table[i], s) == 0) return i;
  return fallback;
}

int prof_func_index(const char* s) { return name_index(funcs, WEFT_PROF_NFUNCS, s, 0); }
int prof_dtype_index(const char* s) { return name_index(dtypes, ncclNumTypes, s, 0); }
int prof_algo_index(const char* s) {
  return name_index(algos, NCCL_NUM_ALGORITHMS, s, NCCL_ALGO_RING);
}
int prof_proto_index(const char* s) {
  return name_index(protos, NCCL_NUM_PROTOCOLS, s, NCCL_PROTO_SIMPLE);
}
