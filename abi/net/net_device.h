/* Network device offload, shared by net plugin ABIs v7 and later: how a plugin tells the core
 * that a connection is driven (partly) from GPU code. Values are NCCL's and never change; new
 * offload kinds are only ever appended. */
#ifndef WEFT_ABI_NET_DEVICE_H
#define WEFT_ABI_NET_DEVICE_H

#define NCCL_NET_DEVICE_INVALID_VERSION 0x0
#define NCCL_NET_MTU_SIZE 4096
/* The only unpack-offload version the core accepts in netDeviceVersion. */
#define NCCL_NET_DEVICE_UNPACK_VERSION 0x7

typedef enum {
  NCCL_NET_DEVICE_HOST = 0,      /* no offload: the proxy thread drives the connection */
  NCCL_NET_DEVICE_UNPACK = 1,    /* GPU kernels unpack received data (e.g. TCPX/devmem) */
  NCCL_NET_DEVICE_GIN_PROXY = 2, /* GPU-initiated networking through a proxy */
  NCCL_NET_DEVICE_GIN_GDAKI = 3, /* GPU-initiated networking, GPU rings the NIC directly */
  NCCL_NET_DEVICE_GIN_GPI = 4,   /* NCCL 2.32: GIN over a GPI backend */
  NCCL_NET_DEVICE_GIN_EFA_GDA = 5 /* NCCL 2.32: GIN on EFA, GPU-driven */
} ncclNetDeviceType;

#endif
