/* weft's frozen profiler headers (abi/profiler/) against the layout of NCCL's own: sizes and
 * offsets of every version's table, descriptor and state arguments on LP64, and the values of
 * the event bits and states. The numbers were taken by compiling NVIDIA's profiler_v1..v6.h
 * (plugins/profiler/example/nccl in NVIDIA/nccl) with g++; a header edit that moves a field
 * fails this at compile time. */
#include <stddef.h>

#include "nccl_profiler.h"
#include "testutil.h"

_Static_assert(sizeof(ncclProfiler_v1_t) == 48, "abi");
_Static_assert(sizeof(ncclProfilerEventDescr_v1_t) == 120, "abi");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v1_t) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, parentObj) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, rank) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, coll.seqNumber) == 40, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, coll.count) == 72, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, coll.algo) == 106, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, coll.proto) == 107, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, p2p.peer) == 72, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, proxyOp.isSend) == 44, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, proxyStep.step) == 24, "abi");
_Static_assert(offsetof(ncclProfiler_v1_t, finalize) == 40, "abi");
_Static_assert(sizeof(ncclProfiler_v2_t) == 48, "abi");
_Static_assert(sizeof(ncclProfilerEventDescr_v2_t) == 128, "abi");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v2_t) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, parentObj) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, rank) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, coll.seqNumber) == 40, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, coll.count) == 72, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, coll.algo) == 112, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, coll.proto) == 120, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, p2p.peer) == 72, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, proxyOp.isSend) == 44, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, proxyStep.step) == 24, "abi");
_Static_assert(offsetof(ncclProfiler_v2_t, finalize) == 40, "abi");
_Static_assert(sizeof(ncclProfiler_v3_t) == 48, "abi");
_Static_assert(sizeof(ncclProfilerEventDescr_v3_t) == 120, "abi");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v3_t) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, parentObj) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, rank) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, coll.seqNumber) == 40, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, coll.count) == 72, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, coll.algo) == 104, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, coll.proto) == 112, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, p2p.peer) == 72, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, proxyOp.isSend) == 44, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, proxyStep.step) == 24, "abi");
_Static_assert(offsetof(ncclProfiler_v3_t, finalize) == 40, "abi");
_Static_assert(sizeof(ncclProfiler_v4_t) == 48, "abi");
_Static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 104, "abi");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v4_t) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, rank) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber) == 24, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.count) == 56, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.algo) == 88, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.proto) == 96, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, p2p.peer) == 56, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, proxyOp.isSend) == 44, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, proxyStep.step) == 24, "abi");
_Static_assert(offsetof(ncclProfiler_v4_t, finalize) == 40, "abi");
_Static_assert(sizeof(ncclProfiler_v5_t) == 48, "abi");
_Static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112, "abi");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, rank) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.algo) == 88, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.proto) == 96, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.peer) == 56, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.isSend) == 44, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyStep.step) == 24, "abi");
_Static_assert(offsetof(ncclProfiler_v5_t, finalize) == 40, "abi");
_Static_assert(sizeof(ncclProfiler_v6_t) == 48, "abi");
_Static_assert(sizeof(ncclProfilerEventDescr_v6_t) == 112, "abi");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v6_t) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, parentObj) == 8, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, rank) == 16, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.seqNumber) == 24, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.count) == 56, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.algo) == 88, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.proto) == 96, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, p2p.peer) == 56, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, proxyOp.isSend) == 44, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, proxyStep.step) == 24, "abi");
_Static_assert(offsetof(ncclProfiler_v6_t, finalize) == 40, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.parentGroup) == 64, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, collApi.graphCaptured) == 64, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 32, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, netPlugin.data) == 32, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, groupApi.groupDepth) == 28, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream) == 104, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.useIntraSync) == 40, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, kernelCh.pTimer) == 32, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v3_t, netPlugin.data) == 32, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v1_t, coll.isNvls) == 112, "abi");
_Static_assert(offsetof(ncclProfilerEventDescr_v2_t, coll.trafficBytes) == 96, "abi");
_Static_assert(offsetof(ncclProfilerEventStateArgs_v5_t, kernelCh.pTimer) == 0, "abi");
_Static_assert(offsetof(ncclProfilerEventStateArgs_v1_t, proxyOp.steps) == 8, "abi");
_Static_assert(ncclProfileKernelLaunch == 2048 && ncclProfileCeBatch == 16384, "abi");
_Static_assert(ncclProfilerKernelChStop == 22 && ncclProfilerGroupEndApiStart == 24 &&
                   ncclProfilerCeBatchComplete == 30 && ncclProfilerProxyStepSendPeerWait_v4 == 20,
               "states");

/* NetPlugin descriptors: NCCL's socket and IB ones, and weft's OFI one (frozen as v1). */
_Static_assert(sizeof(ncclProfilerNetSockDescr_v1_t) == 24, "abi");
_Static_assert(offsetof(ncclProfilerNetSockDescr_v1_t, sock.length) == 16, "abi");
_Static_assert(sizeof(ncclProfilerNetIbDescr_v1_t) == 40, "abi");
_Static_assert(offsetof(ncclProfilerNetIbDescr_v1_t, qp.wr_id) == 16, "abi");
_Static_assert(offsetof(ncclProfilerNetIbDescr_v1_t, qp.length) == 32, "abi");
_Static_assert(sizeof(weftProfilerNetOfiDescr_v1_t) == 48, "abi");
_Static_assert(offsetof(weftProfilerNetOfiDescr_v1_t, op.length) == 16, "abi");
_Static_assert(offsetof(weftProfilerNetOfiDescr_v1_t, op.provider) == 40, "abi");
_Static_assert(NCCL_PROFILER_NET_TYPE_IB == 0x10000 && NCCL_PROFILER_NET_TYPE_SOCK == 0x20000 &&
                   WEFT_PROFILER_NET_TYPE_OFI == 0x77460000u,
               "net plugin types");

int main(void) {
  test_require_weft_lib();
  /* The current view is v6, its symbol is what stock NCCL 2.29 probes first. */
  EXPECT(sizeof(ncclProfiler_t) == sizeof(ncclProfiler_v6_t));
  return 0;
}
