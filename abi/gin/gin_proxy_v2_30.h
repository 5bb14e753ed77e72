/* The proxy GIN type's device/host contract of NCCL 2.30 (checked against 2.30.7's
 * nccl_device/gin/proxy/gin_proxy_device_host_common.h by tests/gin): what a kernel compiled
 * against NVIDIA's 2.30 nccl_device.h writes when ncclDevComm.ginNetDeviceTypes[c] is
 * NCCL_NET_DEVICE_GIN_PROXY, and the per-context struct it reads through ginHandles[c]. FROZEN:
 * kernels already compiled carry it; NCCL promises no GIN compatibility across releases, so a
 * later release's contract is a new file. Plain C11, no CUDA header.
 *
 * Per context (ginHandles[c] points to an array of ncclGinProxyGpuCtx_v2_30_t, one per
 * context of that connection) and per peer (GIN rank) there is one queue of queueSize (a power
 * of two) 128-byte descriptors (GFDs). A kernel thread claims slot pis[peer]++ (a relaxed
 * atomic add on device memory), waits until slot - cis[peer] < queueSize, and writes the 16
 * qwords with 16-byte write-through stores in no set order; every qword carries a valid bit
 * (bit 0), set by the kernel. Who writes what:
 *   queues  kernel writes, proxy reads and zeroes each qword after reading the whole GFD
 *           (host memory the GPU can write: the proxy polls it)
 *   pis     kernel only (device memory); the proxy keeps its own count of GFDs seen
 *   cis     proxy writes: GFDs of that queue completed, in order (the kernel's flush and
 *           credit waits read it; memory both can reach)
 *   counters  proxy adds 1 to counters[counterId] when a GFD with WITH_COUNTER completed
 *           locally (its source may be reused); the kernel reads and resets them
 *   signals  the backend adds to signals[signalId] of the target's context, after the data
 *           of the same put (and earlier puts to that target) has landed; the kernel reads them
 *           relative to signalOffsets[signalId] (its own, device memory, zeroed)
 *   lastIssuedGet, lastVisibleGet  kernel only (device memory, zeroed)
 * An indexed signal of context x is the 64-bit word (signalId + x * nSignals) of the target's
 * signal buffer, which is registered with the backend once for all contexts.
 *
 * Descriptor fields (qword index: bits, lowest first; bit 0 is always the valid bit):
 *   0 HEADER     1..4 GFD version (2), 7..63 size in bytes
 *   1 INLINE_LOW 8..39 value bits 0..31, 40..55 value bits 32..47 (putValue)
 *     SRC_OFF    1..63 source offset (put; remote offset for get); VA_SIGNAL_OFF for VA signals
 *   2 INLINE_HIGH 8..23 value bits 48..63
 *     SRC_HANDLE 1..63 source window (put; remote window for get); VA_SIGNAL_HANDLE
 *   3 DST_OFF    1..63 destination offset (local offset for get)
 *   4 DST_HANDLE 1..63 destination window (local window for get)
 *   5 COMPLETION 1..23 counter id, 24..47 signal id, 48..63 signal value bits 0..15
 *   6 SIGNAL_VAL 1 strong signal, 8..23 signal value bits 16..31, 24..55 bits 32..63
 *   7 HEADER_EXT 8..23 op (NCCL_GIN_PROXY_V2_30_OP_*)
 *   8..15        only the valid bit
 * A window handle is what the library put in the device window's ginWins[c]: for the proxy
 * type, the backend's registration handle; offsets are already 4096 * ginOffset4K + offset.
 * Puts over 1 GiB arrive split into 1 GiB GFDs, the signal on the last. */
#ifndef WEFT_ABI_GIN_PROXY_V2_30_H
#define WEFT_ABI_GIN_PROXY_V2_30_H

#include <stddef.h>
#include <stdint.h>

/* ncclNetDeviceHandle.netDeviceVersion of the proxy type, and the GFD version kernels write. */
#define NCCL_GIN_PROXY_V2_30_NET_DEVICE_VERSION 100
#define NCCL_GIN_PROXY_V2_30_GFD_VERSION 2

/* The op word (HEADER_EXT). The base op is PUT (bit 0) unless VA_SIGNAL, GET or FLUSH is set. */
#define NCCL_GIN_PROXY_V2_30_OP_PUT (1u << 0)
#define NCCL_GIN_PROXY_V2_30_OP_WITH_INLINE (1u << 1)
#define NCCL_GIN_PROXY_V2_30_OP_WITH_COUNTER (1u << 2)
#define NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_INC (1u << 3)
#define NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_ADD (1u << 4)
#define NCCL_GIN_PROXY_V2_30_OP_VA_SIGNAL (1u << 5)
#define NCCL_GIN_PROXY_V2_30_OP_GET (1u << 6)
#define NCCL_GIN_PROXY_V2_30_OP_FLUSH (1u << 7)

/* Qword indices. */
enum {
  NCCL_GIN_PROXY_V2_30_Q_HEADER = 0,
  NCCL_GIN_PROXY_V2_30_Q_INLINE_LOW = 1,
  NCCL_GIN_PROXY_V2_30_Q_SRC_OFF = 1,
  NCCL_GIN_PROXY_V2_30_Q_VA_SIGNAL_OFF = 1,
  NCCL_GIN_PROXY_V2_30_Q_INLINE_HIGH = 2,
  NCCL_GIN_PROXY_V2_30_Q_SRC_HANDLE = 2,
  NCCL_GIN_PROXY_V2_30_Q_VA_SIGNAL_HANDLE = 2,
  NCCL_GIN_PROXY_V2_30_Q_DST_OFF = 3,
  NCCL_GIN_PROXY_V2_30_Q_DST_HANDLE = 4,
  NCCL_GIN_PROXY_V2_30_Q_COMPLETION = 5,
  NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL = 6,
  NCCL_GIN_PROXY_V2_30_Q_HEADER_EXT = 7,
  NCCL_GIN_PROXY_V2_30_QWORDS = 16
};

/* One descriptor: 128 bytes, 16-byte aligned (kernels store it in 16-byte pieces). */
typedef struct {
  uint64_t qword[NCCL_GIN_PROXY_V2_30_QWORDS];
} ncclGinProxyGfd_v2_30_t;

/* One context of a proxy connection, as kernels read it (device addresses as uintptr_t). */
typedef struct {
  int32_t nranks;
  uint32_t queueSize;
  uintptr_t queues;         /* ncclGinProxyGfd_v2_30_t[nranks * queueSize], queue of peer p at p */
  uintptr_t pis;            /* uint32_t[nranks] */
  uintptr_t cis;            /* uint32_t[nranks] */
  uintptr_t counters;       /* uint64_t[nCounters] of this context */
  uintptr_t signals;        /* uint64_t[nSignals] of this context */
  uintptr_t signalOffsets;  /* uint64_t[nSignals] */
  uintptr_t lastIssuedGet;  /* uint32_t[nranks] */
  uintptr_t lastVisibleGet; /* uint32_t[nranks] */
} ncclGinProxyGpuCtx_v2_30_t;

/* ncclGinRequest_t as the proxy type fills it (flushAsync / wait; kernel-side only). */
typedef struct {
  int32_t peer;
  uint32_t nextGfdIdx;
  uint32_t lastIssuedGet;
} ncclGinProxyRequest_v2_30_t;

/* Field access. A field of `bits` bits at bit `at` of qword q. */
static inline uint64_t ncclGinProxyV2_30Field(const ncclGinProxyGfd_v2_30_t* g, int q, int at,
                                              int bits) {
  uint64_t mask = bits == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << bits) - 1);
  return (g->qword[q] >> at) & mask;
}
static inline void ncclGinProxyV2_30SetField(ncclGinProxyGfd_v2_30_t* g, int q, int at, int bits,
                                             uint64_t v) {
  uint64_t mask = (bits == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << bits) - 1)) << at;
  g->qword[q] = (g->qword[q] & ~mask) | ((v << at) & mask);
}

static inline uint32_t ncclGinProxyV2_30Op(const ncclGinProxyGfd_v2_30_t* g) {
  return (uint32_t)ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_HEADER_EXT, 8, 16);
}
static inline uint32_t ncclGinProxyV2_30Version(const ncclGinProxyGfd_v2_30_t* g) {
  return (uint32_t)ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_HEADER, 1, 4);
}
static inline uint64_t ncclGinProxyV2_30Size(const ncclGinProxyGfd_v2_30_t* g) {
  return ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_HEADER, 7, 57);
}
/* SRC_OFF, SRC_HANDLE, DST_OFF, DST_HANDLE and the VA signal words: 63 bits above the flag. */
static inline uint64_t ncclGinProxyV2_30Word63(const ncclGinProxyGfd_v2_30_t* g, int q) {
  return ncclGinProxyV2_30Field(g, q, 1, 63);
}
static inline uint64_t ncclGinProxyV2_30Inline(const ncclGinProxyGfd_v2_30_t* g) {
  return ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_INLINE_LOW, 8, 48) |
         ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_INLINE_HIGH, 8, 16) << 48;
}
static inline uint32_t ncclGinProxyV2_30CounterId(const ncclGinProxyGfd_v2_30_t* g) {
  return (uint32_t)ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_COMPLETION, 1, 23);
}
static inline uint32_t ncclGinProxyV2_30SignalId(const ncclGinProxyGfd_v2_30_t* g) {
  return (uint32_t)ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_COMPLETION, 24, 24);
}
static inline uint64_t ncclGinProxyV2_30SignalValue(const ncclGinProxyGfd_v2_30_t* g) {
  return ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_COMPLETION, 48, 16) |
         ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL, 8, 16) << 16 |
         ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL, 24, 32) << 32;
}
static inline int ncclGinProxyV2_30Strong(const ncclGinProxyGfd_v2_30_t* g) {
  return (int)ncclGinProxyV2_30Field(g, NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL, 1, 1);
}

/* Build a GFD as a 2.30 kernel does (every valid bit set; fields not named stay zero): for code
 * that plays the kernel's part (tests) and for checking the decoders above. `value` is the
 * inline value (WITH_INLINE), else src_off/src_handle are the source (or, with VA_SIGNAL, the
 * signal's offset and window). */
typedef struct {
  uint32_t op;
  uint64_t size;
  uint64_t value; /* WITH_INLINE */
  uint64_t src_off, src_handle, dst_off, dst_handle;
  uint32_t counter_id, signal_id;
  uint64_t signal_value;
  int strong;
} ncclGinProxyV2_30Fields;

static inline void ncclGinProxyV2_30Build(ncclGinProxyGfd_v2_30_t* g,
                                          const ncclGinProxyV2_30Fields* f) {
  for (int i = 0; i < NCCL_GIN_PROXY_V2_30_QWORDS; i++) g->qword[i] = 1;
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_HEADER, 1, 4,
                            NCCL_GIN_PROXY_V2_30_GFD_VERSION);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_HEADER, 7, 57, f->size);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_HEADER_EXT, 8, 16, f->op);
  if (f->op & NCCL_GIN_PROXY_V2_30_OP_FLUSH) return;
  if (f->op & NCCL_GIN_PROXY_V2_30_OP_WITH_INLINE) {
    ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_INLINE_LOW, 8, 48, f->value);
    ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_INLINE_HIGH, 8, 16, f->value >> 48);
  } else {
    ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_SRC_OFF, 1, 63, f->src_off);
    ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_SRC_HANDLE, 1, 63, f->src_handle);
  }
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_DST_OFF, 1, 63, f->dst_off);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_DST_HANDLE, 1, 63, f->dst_handle);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_COMPLETION, 1, 23, f->counter_id);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_COMPLETION, 24, 24, f->signal_id);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_COMPLETION, 48, 16, f->signal_value);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL, 8, 16, f->signal_value >> 16);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL, 24, 32, f->signal_value >> 32);
  ncclGinProxyV2_30SetField(g, NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL, 1, 1, f->strong ? 1 : 0);
}

#ifndef WEFT_DEVCOMM_ASSERT
#ifdef __cplusplus
#define WEFT_DEVCOMM_ASSERT(e) static_assert(e, #e)
#else
#define WEFT_DEVCOMM_ASSERT(e) _Static_assert(e, #e)
#endif
#endif
WEFT_DEVCOMM_ASSERT(sizeof(ncclGinProxyGfd_v2_30_t) == 128);
WEFT_DEVCOMM_ASSERT(sizeof(ncclGinProxyRequest_v2_30_t) == 12);
#if UINTPTR_MAX == UINT64_MAX
WEFT_DEVCOMM_ASSERT(sizeof(ncclGinProxyGpuCtx_v2_30_t) == 72);
WEFT_DEVCOMM_ASSERT(offsetof(ncclGinProxyGpuCtx_v2_30_t, queues) == 8);
WEFT_DEVCOMM_ASSERT(offsetof(ncclGinProxyGpuCtx_v2_30_t, signalOffsets) == 48);
WEFT_DEVCOMM_ASSERT(offsetof(ncclGinProxyGpuCtx_v2_30_t, lastVisibleGet) == 64);
#endif

#endif
