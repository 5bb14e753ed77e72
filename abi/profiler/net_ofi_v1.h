/* The event weft's libfabric net plugin (weft-ofi) reports through the profiler callback
 * (NetPlugin events, net ABI v10+). NCCL defines no type for libfabric; this one is weft's own:
 * the plugin id is WEFT_PROFILER_NET_TYPE_OFI | WEFT_PROFILER_NET_OFI_VER and the event's data
 * points to this descriptor, one per libfabric operation (fi_tsend, or one fi_trecv per slot of
 * a receive) from its post to its completion.
 *
 * The type id (high 16 bits of the plugin id) is 0x7746 ("wF"). NCCL numbers its own types from
 * 1 upward (IB = 1, SOCK = 2, profiler_types.h); a value this far from them, in the positive
 * half of the 16 bits, stays clear of every type NCCL has or would add next, so a profiler that
 * switches on the type never takes an OFI event for one of NCCL's. A profiler that knows only
 * NCCL's types sees an unknown type and should ignore the data. */
#ifndef WEFT_ABI_PROFILER_NET_OFI_V1_H
#define WEFT_ABI_PROFILER_NET_OFI_V1_H

#include <stddef.h>
#include <stdint.h>

#include "profiler_types.h"

#define WEFT_PROFILER_NET_TYPE_OFI (0x7746U << NCCL_PROFILER_NET_VER_BITS)
#define WEFT_PROFILER_NET_OFI_VER 1

enum {
  weftProfileOfiOp = (1 << 0), /* one libfabric data operation */
};

/* op: what the operation is */
enum {
  weftProfileOfiTsend = 0, /* fi_tsend: a whole message */
  weftProfileOfiTrecv = 1, /* fi_trecv: one slot of a receive */
};

typedef struct {
  uint8_t type; /* weftProfileOfiOp */
  union {
    struct {
      int op;               /* weftProfileOfiTsend or weftProfileOfiTrecv */
      int device;           /* the plugin's device index (one provider domain) */
      size_t length;        /* bytes: a send's message; a receive's posted size at start, the
                             * bytes that arrived in the update at its stop */
      uint64_t tag;         /* the libfabric tag of the operation (the plugin's tag layout) */
      uint64_t peer;        /* fi_addr_t of the destination (send); FI_ADDR_UNSPEC (receive) */
      const char* provider; /* the provider's name, e.g. "tcp;ofi_rxm" (valid while the plugin
                             * is loaded) */
    } op;
  };
} weftProfilerNetOfiDescr_v1_t;

#endif
