/* libnccl-tuner-weft.so: the entries every exported version shares (tuner_plugin.c) and that
 * tuner_exports.c puts into the ncclTunerPlugin_v2 .. _v6 tables. */
#ifndef WEFT_TUNER_PLUGIN_H
#define WEFT_TUNER_PLUGIN_H

#include "nccl_tuner.h"
#include "tuner_rules.h"
#include "weft.h" /* WEFT_NUM_ALGORITHMS, weftTunerAlgorithms */

ncclResult_t weft_tuner_init(size_t nranks, size_t nnodes, ncclDebugLogger_t log, void** ctx);
ncclResult_t weft_tuner_init_v5(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                                ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                                ncclTunerConstants_v5_t* constants);
ncclResult_t weft_tuner_get_v2(void* ctx, ncclFunc_t coll, size_t nbytes, int collnet, int nvls,
                               int pipe_ops, int* algo, int* proto, int* nch);
ncclResult_t weft_tuner_get_v3(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe_ops,
                               float** table, int nalgo, int nproto, int* nch);
ncclResult_t weft_tuner_get_v4(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe_ops,
                               float** table, int nalgo, int nproto, int reg_buff, int* nch);
ncclResult_t weft_tuner_fini(void* ctx);
/* v6: the first matching rule's chunk, else *chunk as the core chose it. */
ncclResult_t weft_tuner_chunk(void* ctx, ncclFunc_t coll, size_t nbytes, int algo, int proto,
                              int nchannels, size_t* chunk);

#endif
