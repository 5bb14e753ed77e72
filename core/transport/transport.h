/* Connections of a communicator: which transport carries each (kind, channel, peer, direction,
 * protocol), their setup over bootstrap, and their teardown.
 *
 * Transports: shm (POSIX shared memory, for peers on the same host unless NCCL_SHM_DISABLE=1;
 * the receiver creates the segment, the sender maps it and unlinks the name at once, so nothing
 * stays in /dev/shm) and net (the communicator's net plugin; buffers are local on both sides
 * and the proxy thread moves slots with isend/irecv). Both give the executor a weft_conn.
 *
 * Setup is collective per pair: when rank A connects key (kind, c, B, send, proto), B must
 * connect (kind, c, A, recv, proto) at the same logical point (its own transport_connect call).
 * Messages are tagged by the key, and bootstrap queues early arrivals, so the order in which
 * the pairs of one call are listed does not matter. */
#ifndef WEFT_TRANSPORT_H
#define WEFT_TRANSPORT_H

#include <stddef.h>
#include "nccl.h"
#include "transport/conn.h"

struct ncclComm;

/* Connections of collectives (ring, tree) and of send/recv are separate FIFOs: collectives run
 * in the same order on every rank, point-to-point transfers only match per peer. */
enum { WEFT_CONN_COLL = 0, WEFT_CONN_P2P = 1, WEFT_CONN_NKINDS = 2 };
enum { WEFT_TRANSPORT_SHM = 1, WEFT_TRANSPORT_NET = 2 };

#define WEFT_MAX_CHANNELS 64

typedef struct {
  int kind;    /* WEFT_CONN_COLL / WEFT_CONN_P2P */
  int channel; /* 0 .. nchannels-1 */
  int peer;    /* the other rank, != this rank */
  int send;    /* 1: this rank produces, 0: this rank consumes */
  int proto;   /* NCCL_PROTO_SIMPLE or NCCL_PROTO_LL */
} weft_conn_key;

typedef struct {
  int nchannels;
  size_t buffsize;    /* Simple: bytes of a connection's 8 slots (NCCL_BUFFSIZE) */
  size_t ll_buffsize; /* LL: same (NCCL_LL_BUFFSIZE) */
  int shm_disable;    /* agreed across ranks */
} weft_transport_params;

/* Table of connections; nothing is connected yet. */
ncclResult_t transport_init(struct ncclComm* comm, const weft_transport_params* p);

/* Connect every key not connected yet (duplicates and connected keys are skipped). Blocking,
 * bounded by WEFT_TIMEOUT_MS, polls the abort flag; errors name the peer and the key. Only one
 * thread may call this for a communicator at a time (it uses the bootstrap). */
ncclResult_t transport_connect(struct ncclComm* comm, const weft_conn_key* keys, int n);

/* The connection for key, or NULL when it is not connected. */
weft_conn* transport_find(struct ncclComm* comm, const weft_conn_key* key);
/* How that connection is carried (WEFT_TRANSPORT_*), 0 when not connected. */
int transport_kind_of(struct ncclComm* comm, const weft_conn_key* key);
/* 1 when any connection goes through the net (the proxy then has work). */
int transport_uses_net(struct ncclComm* comm);

/* Close everything (net comms, registrations, mappings, segment names still owned) and free
 * the table. The executor and the proxy must be stopped first. */
void transport_fini(struct ncclComm* comm);

/* The two ends' byte sizes of one step for a protocol under the agreed parameters. */
size_t transport_step_bytes(struct ncclComm* comm, int proto);

#endif
