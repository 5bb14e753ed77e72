/* The facts one rank publishes about its GPU's peer-to-peer reach (transport/transport_p2p.c
 * fills them, the communicator carries them in every rank's info). */
#ifndef WEFT_TOPO_P2P_INFO_H
#define WEFT_TOPO_P2P_INFO_H

#include <stdint.h>

/* What each rank publishes at init (inside weft_rank_info) so that both ends of a pair decide
 * p2p against shm from the same facts: device ordinals mean nothing across processes
 * (CUDA_VISIBLE_DEVICES), PCI addresses do. Zero in host mode. */
#define WEFT_P2P_MAX_GPUS 32
typedef struct {
  uint64_t proc_id;    /* random per process: "same process" survives pid namespaces */
  uint64_t bus;        /* this rank's GPU: PCI domain << 16 | bus << 8 | device */
  uint8_t uuid[16];    /* this rank's GPU (MIG instance): "the same GPU" */
  int32_t p2p_disable; /* this rank's NCCL_P2P_DISABLE */
  int32_t p2p_level;   /* this rank's NCCL_P2P_LEVEL (WEFT_P2P_LEVEL_*) */
  int32_t npeers;      /* GPUs this rank's GPU can write peer to peer (visible to it) */
  int32_t take_fd;     /* 1: this process can copy a peer process's descriptor (pidfd_getfd);
                        * 0: owners hand theirs over by SCM_RIGHTS. Probed once per
                        * communicator; p2p FIFOs and LSA windows read it */
  uint64_t peer_bus[WEFT_P2P_MAX_GPUS];
  uint8_t peer_nvl[WEFT_P2P_MAX_GPUS]; /* 1: NVLink-class link (see transport_p2p.c) */
} weft_p2p_rank_info;
enum { WEFT_P2P_LEVEL_ANY = 0, WEFT_P2P_LEVEL_LOC = 1, WEFT_P2P_LEVEL_NVL = 2 };

#endif
