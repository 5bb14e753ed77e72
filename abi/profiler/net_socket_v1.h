/* The event a socket net plugin reports through the profiler callback (NetPlugin events, net
 * ABI v10+): the plugin id it passes is NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER
 * and the event's data points to this descriptor. Layout as NCCL's net_socket_v1.h. */
#ifndef WEFT_ABI_PROFILER_NET_SOCKET_V1_H
#define WEFT_ABI_PROFILER_NET_SOCKET_V1_H

#include <stddef.h>
#include <stdint.h>

#define NCCL_PROFILER_NET_SOCKET_VER 1

enum {
  ncclProfileSocket = (1 << 0), /* one request's bytes moving over one socket */
};

typedef struct {
  uint8_t type; /* ncclProfileSocket */
  union {
    struct {
      int fd;
      int op; /* the plugin's own code for send or receive */
      size_t length;
    } sock;
  };
} ncclProfilerNetSockDescr_v1_t;

#endif
