/* Shared by the files of transport/: a connection's full state (the executor's weft_conn plus
 * what the transport holds), the table, the setup message and the per-transport steps. */
#ifndef WEFT_TRANSPORT_INTERNAL_H
#define WEFT_TRANSPORT_INTERNAL_H

#include <stdint.h>

#include "nccl_net.h"
#include "transport/transport.h"

#define SHM_NAME_MAX 64

typedef struct tconn {
  weft_conn conn; /* first: the executor's view */
  weft_conn_key key;
  int transport;
  /* shm */
  void* map;
  size_t map_bytes;
  char shm_name[SHM_NAME_MAX]; /* receiver: name still to unlink ("" once done) */
  /* net */
  int dev;
  void* listen_comm;
  void* net_comm; /* send or receive comm */
  void* mhandle;
  void* mem;      /* local control block + slots */
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  int connected;
} tconn;

struct weft_transport {
  weft_transport_params p;
  int nranks;
  tconn** table; /* WEFT_CONN_NKINDS * nchannels * nranks * 2 (dir) * 2 (proto) */
  size_t ntable;
  int nnet;      /* connections over the net */
};

/* What the receiver tells the sender about a connection (bootstrap, tagged by the key). */
#define CONN_INFO_MAGIC 0x77636f6eu /* "wcon" */
typedef struct {
  uint32_t magic;
  int32_t transport;
  int32_t kind, channel, proto;
  int32_t pid;
  uint64_t step_bytes;
  uint64_t shm_bytes;
  char shm_name[SHM_NAME_MAX];
  unsigned char net_handle[NCCL_NET_HANDLE_MAXSIZE];
} conn_info;

/* ---- transport_shm.c ---- */
/* Receiver: create and map a segment for c (name in c->shm_name, fills info). */
ncclResult_t shm_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info);
/* Sender: map the receiver's segment, then unlink its name. */
ncclResult_t shm_send_connect(struct ncclComm* comm, tconn* c, const conn_info* info);
void shm_close(tconn* c);

/* ---- transport_net.c ---- */
ncclResult_t net_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info);
ncclResult_t net_send_setup(struct ncclComm* comm, tconn* c, const conn_info* info);
/* One non-blocking attempt at connect/accept; *done set when the comm exists. */
ncclResult_t net_try_connect(struct ncclComm* comm, tconn* c, int* done);
/* Buffers, registration, hand-off to the proxy (once connected). */
ncclResult_t net_finish(struct ncclComm* comm, tconn* c);
void net_close(struct ncclComm* comm, tconn* c);

/* Control block + slots of a connection, page aligned. */
static inline size_t conn_mem_bytes(size_t step_bytes) {
  return WEFT_FIFO_CTRL_BYTES + (size_t)WEFT_NSTEPS * step_bytes;
}

#endif
