/* reftuner: a small, correct tuner exporting ncclTunerPlugin_v2..v6 (test-only). It prefers
 * RING/SIMPLE above 64 KiB and TREE/LL below, among the cells the core left usable, and asks
 * for 4 channels; v6's getChunkSize doubles the core's chunk for RING/SIMPLE above 1 MiB. Broken tuners wrap its entries, breaking one thing:
 *   REFTUNER_EXPORT_V5(ncclTunerPlugin_v5, "broken-x", .getCollInfo = my_get) */
#ifndef WEFT_TEST_REFTUNER_H
#define WEFT_TEST_REFTUNER_H

#include "nccl_tuner.h"

ncclResult_t reftuner_init_v2(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** ctx);
ncclResult_t reftuner_init_v5(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                              ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                              ncclTunerConstants_v5_t* constants);
ncclResult_t reftuner_get_v2(void* ctx, ncclFunc_t coll, size_t nBytes, int collNetSupport,
                             int nvlsSupport, int numPipeOps, int* algo, int* proto, int* nCh);
ncclResult_t reftuner_get_v3(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                             float** table, int numAlgo, int numProto, int* nCh);
ncclResult_t reftuner_get_v4(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                             float** table, int numAlgo, int numProto, int regBuff, int* nCh);
ncclResult_t reftuner_fini(void* ctx);
ncclResult_t reftuner_chunk(void* ctx, ncclFunc_t coll, size_t nBytes, int algo, int proto,
                            int nChannels, size_t* chunkSize);

#define REFTUNER_EXPORT(sym, type, plugin_name, ...)                                     \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Woverride-init\"")  \
  __attribute__((visibility("default"))) const type sym = {.name = plugin_name, __VA_ARGS__}; \
  _Pragma("GCC diagnostic pop")

#define REFTUNER_EXPORT_V2(sym, plugin_name, ...)                                          \
  REFTUNER_EXPORT(sym, ncclTuner_v2_t, plugin_name, .init = reftuner_init_v2,              \
                  .getCollInfo = reftuner_get_v2, .destroy = reftuner_fini, __VA_ARGS__)
#define REFTUNER_EXPORT_V3(sym, plugin_name, ...)                                          \
  REFTUNER_EXPORT(sym, ncclTuner_v3_t, plugin_name, .init = reftuner_init_v2,              \
                  .getCollInfo = reftuner_get_v3, .destroy = reftuner_fini, __VA_ARGS__)
#define REFTUNER_EXPORT_V4(sym, plugin_name, ...)                                          \
  REFTUNER_EXPORT(sym, ncclTuner_v4_t, plugin_name, .init = reftuner_init_v2,              \
                  .getCollInfo = reftuner_get_v4, .destroy = reftuner_fini, __VA_ARGS__)
#define REFTUNER_EXPORT_V5(sym, plugin_name, ...)                                          \
  REFTUNER_EXPORT(sym, ncclTuner_v5_t, plugin_name, .init = reftuner_init_v5,              \
                  .getCollInfo = reftuner_get_v4, .finalize = reftuner_fini, __VA_ARGS__)

#define REFTUNER_EXPORT_V6(sym, plugin_name, ...)                                          \
  REFTUNER_EXPORT(sym, ncclTuner_v6_t, plugin_name, .init = reftuner_init_v5,              \
                  .getCollInfo = reftuner_get_v4, .finalize = reftuner_fini,               \
                  .getChunkSize = reftuner_chunk, __VA_ARGS__)

#endif
