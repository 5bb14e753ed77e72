/* The host proxy of the proxy GIN type: it consumes the descriptors (GFDs) that device-API
 * kernels write into their queues, in NCCL 2.30's format (abi/gin/gin_proxy_v2_30.h), and
 * executes them through a one-sided backend: an RMA table (ncclRma_v15_t view: a loaded RMA
 * plugin, a GIN v11..v13 plugin's host puts, or the socket net's own table), whose group and
 * context the caller connected and created. Puts, putValue (inline), signals (indexed and VA),
 * counters, get and flush; ordering is the backend's: a signal travels with its put
 * (iputSignal), so it is applied at the target after the data.
 *
 * Memory: the caller owns the memory the kernel shares (queues, cis, counters: host memory
 * the GPU can reach, zeroed) and gives the proxy its host view; the proxy never needs the
 * device-only words (pis, signal offsets, get indices, shadows). gin_proxy_fill_gpu_ctx writes
 * the per-context structs the kernel reads from the addresses the kernel sees. The proxy core
 * takes plain pointers, so host memory stands in for the GPU-visible queues in tests.
 *
 * Threads: gin_proxy_start runs gin_proxy_progress on a thread of its own until
 * gin_proxy_destroy; without start, the caller calls gin_proxy_progress. The first failure
 * (a backend call, a malformed GFD) is logged once with rank, peer, context and GFD, kept
 * (gin_proxy_error), reported through on_error, and stops the proxy. */
#ifndef WEFT_GIN_PROXY_H
#define WEFT_GIN_PROXY_H

#include <stdint.h>

#include "nccl.h"
#include "nccl_rma.h"
#include "gin/gin_proxy_v2_30.h"

typedef struct gin_proxy gin_proxy;

typedef struct {
  int rank, nranks;
  int ncontexts;          /* >= 1; context x of the backend serves GIN context x */
  int nsignals;           /* per context */
  int ncounters;          /* per context */
  uint32_t queue_size;    /* GFDs per queue: a power of two */
  const ncclRma_v15_t* rma;
  void* coll;             /* the backend's group (connect) */
  void* ctx;              /* the backend's context (createContext, >= ncontexts contexts) */
  void* signals_mh;       /* registration of every context's signals; NULL when nsignals == 0 */
  ncclGinProxyGfd_v2_30_t* queues; /* [ncontexts][nranks][queue_size] */
  uint32_t* cis;                   /* [ncontexts][nranks] */
  uint64_t* counters;              /* [ncontexts][ncounters]; NULL when ncounters == 0 */
  void (*on_error)(void* arg, ncclResult_t why); /* optional; called once, on the proxy thread */
  void* on_error_arg;
  /* Staged mode, for a backend that moves host memory only (weft's socket net) and windows it
   * cannot register (GPU memory): window handles are the proxy's own (gin_proxy_window_add);
   * the source proxy copies the bytes out of the window (copy_out) into a registered bounce
   * slot and sends them, with a header, into a ring the target proxy registered for it; the
   * target proxy copies them into the window (copy_in) and only then adds the signal itself
   * (signals_host), then returns the slot's credit. A get is a request the target answers with
   * reply messages copied out of its window; it completes when the last is copied in. */
  int staged;
  ncclResult_t (*copy_in)(void* arg, void* window_mem, const void* host, size_t n);
  ncclResult_t (*copy_out)(void* arg, void* host, const void* window_mem, size_t n);
  void* copy_arg;
  uint64_t* signals_host; /* staged: every context's signals, as this process sees them */
} gin_proxy_config;

/* Bytes of the memory the caller provides for a configuration. */
size_t gin_proxy_queues_bytes(int ncontexts, int nranks, uint32_t queue_size);
size_t gin_proxy_cis_bytes(int ncontexts, int nranks);

/* Make the proxy. Collective over the backend's group: it registers one inline-value buffer
 * per context with regMrSym, in the same order on every rank. Bad configurations are
 * ncclInvalidArgument with a WARN naming the field. */
ncclResult_t gin_proxy_create(const gin_proxy_config* cfg, gin_proxy** out);

/* Staged mode: make the window [base, base + size) reachable; *handle is what the library
 * writes into the device window's ginWins[c]. Every rank adds its windows in the same order
 * (windows are symmetric), so a handle names the same window everywhere. At most
 * GIN_PROXY_MAX_WINDOWS; callable while the proxy runs. */
#define GIN_PROXY_MAX_WINDOWS 256
ncclResult_t gin_proxy_window_add(gin_proxy* p, void* base, size_t size, uint64_t* handle);

/* Start the proxy thread. */
ncclResult_t gin_proxy_start(gin_proxy* p);

/* One pass: completions, then at most one new GFD per queue. *busy: whether anything moved or
 * is still outstanding. Returns the proxy's error once it has one. */
ncclResult_t gin_proxy_progress(gin_proxy* p, int* busy);

/* ncclSuccess, or the first failure. */
ncclResult_t gin_proxy_error(gin_proxy* p);

/* Stop the thread (if any), wait up to a second for outstanding requests, deregister the
 * inline buffers and free the proxy. NULL is a no-op. */
ncclResult_t gin_proxy_destroy(gin_proxy* p);

/* The per-context structs kernels read (out[ncontexts]), from the addresses the kernel sees
 * (device pointers, or the host pointers themselves in host memory): queues, cis, pis,
 * lastIssuedGet and lastVisibleGet laid out [ncontexts][nranks], counters, signals and
 * signal_offsets [ncontexts][n]. */
typedef struct {
  uintptr_t queues, pis, cis, counters, signals, signal_offsets, last_issued_get,
      last_visible_get;
} gin_proxy_kernel_addrs;
void gin_proxy_fill_gpu_ctx(ncclGinProxyGpuCtx_v2_30_t* out, int ncontexts, int nranks,
                            uint32_t queue_size, int nsignals, int ncounters,
                            const gin_proxy_kernel_addrs* a);

#endif
