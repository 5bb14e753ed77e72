/* The facts abi_matches_nvidia_header compares: one list of sizes, offsets and values, expanded
 * once against NVIDIA's nccl.h and once against weft's (the two cannot share a translation
 * unit). Only names both headers define appear here; the version macros are left out on
 * purpose (weft advertises 2.27.7). Each TU defines ABI_TABLE_FN, includes its nccl.h, then
 * this file. */
#ifndef WEFT_TEST_ABI_TABLE_H
#define WEFT_TEST_ABI_TABLE_H

#include <stddef.h>

struct abi_entry {
  const char* name;
  long long value;
};

#define ABI_TABLE_MAX 256

/* Fill out[] (ABI_TABLE_MAX entries) and return the count. */
int abi_table_nvidia(struct abi_entry* out);
int abi_table_weft(struct abi_entry* out);

#endif

#ifdef ABI_TABLE_FN

#define ABI_PUT(n, v)                                                                         \
  do {                                                                                        \
    out[count].name = (n);                                                                    \
    out[count].value = (long long)(v);                                                        \
    count++;                                                                                  \
  } while (0)
#define ABI_SIZE(T) ABI_PUT("sizeof(" #T ")", sizeof(T))
#define ABI_OFF(T, f) ABI_PUT("offsetof(" #T ", " #f ")", offsetof(T, f))
#define ABI_VAL(x) ABI_PUT(#x, (x))
/* Floats compared in millionths. */
#define ABI_FVAL(x) ABI_PUT(#x " * 1e6", (long long)((double)(x) * 1e6))

int ABI_TABLE_FN(struct abi_entry* out) {
  int count = 0;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;

  ABI_SIZE(ncclUniqueId);
  ABI_VAL(NCCL_UNIQUE_ID_BYTES);
  ABI_SIZE(ncclComm_t);
  ABI_SIZE(ncclWindow_t);
  ABI_SIZE(cudaStream_t);

  ABI_SIZE(ncclConfig_t);
  ABI_OFF(ncclConfig_t, size);
  ABI_OFF(ncclConfig_t, magic);
  ABI_OFF(ncclConfig_t, version);
  ABI_OFF(ncclConfig_t, blocking);
  ABI_OFF(ncclConfig_t, cgaClusterSize);
  ABI_OFF(ncclConfig_t, minCTAs);
  ABI_OFF(ncclConfig_t, maxCTAs);
  ABI_OFF(ncclConfig_t, netName);
  ABI_OFF(ncclConfig_t, splitShare);
  ABI_OFF(ncclConfig_t, trafficClass);
  ABI_OFF(ncclConfig_t, commName);
  ABI_OFF(ncclConfig_t, collnetEnable);
  ABI_OFF(ncclConfig_t, CTAPolicy);
  ABI_OFF(ncclConfig_t, shrinkShare);
  ABI_OFF(ncclConfig_t, nvlsCTAs);
  ABI_OFF(ncclConfig_t, nChannelsPerNetPeer);
  ABI_OFF(ncclConfig_t, nvlinkCentricSched);
  ABI_OFF(ncclConfig_t, graphUsageMode);
  ABI_OFF(ncclConfig_t, numRmaCtx);
  ABI_OFF(ncclConfig_t, maxP2pPeers);
  ABI_OFF(ncclConfig_t, graphStreamOrdering);
  ABI_SIZE(struct ncclConfig_v23000);
  ABI_VAL(NCCL_API_MAGIC);

  /* What NCCL_CONFIG_INITIALIZER fills in (version differs on purpose; it must still be the
   * header's own NCCL_VERSION_CODE). */
  ABI_VAL(cfg.size);
  ABI_VAL(cfg.magic);
  ABI_VAL(cfg.version == NCCL_VERSION_CODE);
  ABI_VAL(cfg.blocking);
  ABI_VAL(cfg.cgaClusterSize);
  ABI_VAL(cfg.minCTAs);
  ABI_VAL(cfg.maxCTAs);
  ABI_VAL(cfg.netName == NULL);
  ABI_VAL(cfg.splitShare);
  ABI_VAL(cfg.trafficClass);
  ABI_VAL(cfg.commName == NULL);
  ABI_VAL(cfg.collnetEnable);
  ABI_VAL(cfg.CTAPolicy);
  ABI_VAL(cfg.shrinkShare);
  ABI_VAL(cfg.nvlsCTAs);
  ABI_VAL(cfg.nChannelsPerNetPeer);
  ABI_VAL(cfg.nvlinkCentricSched);
  ABI_VAL(cfg.graphUsageMode);
  ABI_VAL(cfg.numRmaCtx);
  ABI_VAL(cfg.maxP2pPeers);
  ABI_VAL(cfg.graphStreamOrdering);

  ABI_SIZE(ncclSimInfo_t);
  ABI_OFF(ncclSimInfo_t, size);
  ABI_OFF(ncclSimInfo_t, magic);
  ABI_OFF(ncclSimInfo_t, version);
  ABI_OFF(ncclSimInfo_t, estimatedTime);
  ABI_SIZE(struct ncclSimInfo_v22200);
  ABI_VAL(sim.size);
  ABI_VAL(sim.magic);
  ABI_VAL(sim.version == NCCL_VERSION_CODE);
  ABI_FVAL(sim.estimatedTime);

  /* The encoding, not the version. */
  ABI_VAL(NCCL_VERSION(2, 8, 4));
  ABI_VAL(NCCL_VERSION(2, 9, 0));
  ABI_VAL(NCCL_VERSION(2, 27, 7));
  ABI_VAL(NCCL_VERSION(2, 28, 9));
  ABI_VAL(NCCL_VERSION(3, 0, 1));
  ABI_VAL(NCCL_VERSION(1, 9, 3));

  ABI_SIZE(ncclResult_t);
  ABI_VAL(ncclSuccess);
  ABI_VAL(ncclUnhandledCudaError);
  ABI_VAL(ncclSystemError);
  ABI_VAL(ncclInternalError);
  ABI_VAL(ncclInvalidArgument);
  ABI_VAL(ncclInvalidUsage);
  ABI_VAL(ncclRemoteError);
  ABI_VAL(ncclInProgress);
  ABI_VAL(ncclTimeout);
  ABI_VAL(ncclNumResults);

  ABI_SIZE(ncclDataType_t);
  ABI_VAL(ncclInt8);
  ABI_VAL(ncclChar);
  ABI_VAL(ncclUint8);
  ABI_VAL(ncclInt32);
  ABI_VAL(ncclInt);
  ABI_VAL(ncclUint32);
  ABI_VAL(ncclInt64);
  ABI_VAL(ncclUint64);
  ABI_VAL(ncclFloat16);
  ABI_VAL(ncclHalf);
  ABI_VAL(ncclFloat32);
  ABI_VAL(ncclFloat);
  ABI_VAL(ncclFloat64);
  ABI_VAL(ncclDouble);
  ABI_VAL(ncclBfloat16);
  ABI_VAL(ncclFloat8e4m3);
  ABI_VAL(ncclFloat8e5m2);
  ABI_VAL(ncclNumTypes);

  ABI_SIZE(ncclRedOp_t);
  ABI_VAL(ncclSum);
  ABI_VAL(ncclProd);
  ABI_VAL(ncclMax);
  ABI_VAL(ncclMin);
  ABI_VAL(ncclAvg);
  ABI_VAL(ncclNumOps);
  ABI_VAL(ncclMaxRedOp);

  ABI_SIZE(ncclScalarResidence_t);
  ABI_VAL(ncclScalarDevice);
  ABI_VAL(ncclScalarHostImmediate);

  ABI_VAL(NCCL_CONFIG_UNDEF_INT);
  ABI_VAL(NCCL_CONFIG_UNDEF_PTR == NULL);
  ABI_VAL(NCCL_SPLIT_NOCOLOR);
  ABI_FVAL(NCCL_UNDEF_FLOAT);
  ABI_VAL(NCCL_COMM_NULL == NULL);
  ABI_VAL(NCCL_WIN_DEFAULT);
  ABI_VAL(NCCL_WIN_COLL_SYMMETRIC);
  ABI_VAL(NCCL_WIN_REQUIRED_ALIGNMENT);
  ABI_VAL(NCCL_CTA_POLICY_DEFAULT);
  ABI_VAL(NCCL_CTA_POLICY_EFFICIENCY);
  ABI_VAL(NCCL_CTA_POLICY_ZERO);
  ABI_VAL(NCCL_SHRINK_DEFAULT);
  ABI_VAL(NCCL_SHRINK_ABORT);
  ABI_VAL(NCCL_REVOKE_DEFAULT);

  return count;
}

#endif
