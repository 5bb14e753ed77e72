/* The event an InfiniBand/RoCE net plugin reports through the profiler callback (NetPlugin
 * events, net ABI v10+): the plugin id it passes is NCCL_PROFILER_NET_TYPE_IB |
 * NCCL_PROFILER_NET_IB_VER and the event's data points to this descriptor, one per work request
 * from its post to its completion. Layout as NCCL's net_ib_v1.h. */
#ifndef WEFT_ABI_PROFILER_NET_IB_V1_H
#define WEFT_ABI_PROFILER_NET_IB_V1_H

#include <stddef.h>
#include <stdint.h>

#define NCCL_PROFILER_NET_IB_VER 1

enum {
  ncclProfileQp = (1 << 0), /* one work request on one queue pair */
};

typedef struct {
  uint8_t type; /* ncclProfileQp */
  union {
    struct {
      int device;     /* the plugin's device index */
      uint64_t wr_id; /* work request id */
      int opcode;     /* ibv opcode */
      int qpNum;      /* queue pair number */
      size_t length;  /* bytes of the work request */
    } qp;
  };
} ncclProfilerNetIbDescr_v1_t;

#endif
