/* What every profiler plugin ABI version shares: the event type bits (the activation mask is
 * an OR of them), the event states, and the process id type of ProxyOp descriptors. Values
 * never change; a new version only adds. Each version's descriptor type field holds one bit. */
#ifndef WEFT_ABI_PROFILER_TYPES_H
#define WEFT_ABI_PROFILER_TYPES_H

#include <sys/types.h>

enum {
  ncclProfileGroup = (1 << 0),        /* a group launch (v1+) */
  ncclProfileColl = (1 << 1),         /* a collective as the core runs it (v1+) */
  ncclProfileP2p = (1 << 2),          /* a send or receive as the core runs it (v1+) */
  ncclProfileProxyOp = (1 << 3),      /* the proxy's share of an operation on a channel (v1+) */
  ncclProfileProxyStep = (1 << 4),    /* one network step of a ProxyOp (v1+) */
  ncclProfileProxyCtrl = (1 << 5),    /* the proxy thread's own state (v1+) */
  ncclProfileKernelCh = (1 << 6),     /* one channel of the kernel (v3+) */
  ncclProfileNetPlugin = (1 << 7),    /* defined by a net plugin, reported through profFn (v3+) */
  ncclProfileGroupApi = (1 << 8),     /* ncclGroupStart..End as the user called it (v5+) */
  ncclProfileCollApi = (1 << 9),      /* a collective API call (v5+) */
  ncclProfileP2pApi = (1 << 10),      /* a send/recv API call (v5+) */
  ncclProfileKernelLaunch = (1 << 11), /* the launch of a group's kernel (v5+) */
  ncclProfileCeColl = (1 << 12),      /* copy-engine collective (v6) */
  ncclProfileCeSync = (1 << 13),      /* copy-engine synchronisation (v6) */
  ncclProfileCeBatch = (1 << 14),     /* copy-engine batch (v6) */
};

typedef enum {
  /* ProxyOp states of v1..v3 (deprecated in v4) */
  ncclProfilerProxyOpSendPosted = 0,
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyOpInProgress_v4 = 19,
  /* ProxyStep states */
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  /* ProxyCtrl states */
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  /* NetPlugin */
  ncclProfilerNetPluginUpdate = 21,
  /* KernelCh: the stop timestamp (v4+) */
  ncclProfilerKernelChStop = 22,
  /* GroupApi (v5+) */
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24,
  /* copy-engine events (v6) */
  ncclProfilerCeCollStart = 25,
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

typedef pid_t ncclPid_t;

/* NetPlugin events: the id a net plugin passes says which plugin and which version of its
 * event data (type in the high 16 bits, version in the low). */
#define NCCL_PROFILER_NET_VER_BITS (16)
#define NCCL_PROFILER_NET_VER_MASK (~0U >> NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_MASK (~0U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_IB (1U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_SOCK (2U << NCCL_PROFILER_NET_VER_BITS)

#endif
