/* Connections of a communicator: which transport carries each (kind, channel, peer, direction,
 * protocol), their setup over bootstrap, and their teardown.
 *
 * Transports: shm (POSIX shared memory, for peers on the same host unless NCCL_SHM_DISABLE=1;
 * the receiver creates the segment, the sender maps it and unlinks the name at once, so nothing
 * stays in /dev/shm) and net (the communicator's net plugin; buffers are local on both sides
 * and the proxy thread moves slots with isend/irecv). Both give the executor a weft_conn.
 *
 * Device mode (comm->mode == WEFT_MODE_DEVICE) adds p2p (GPU memory of the receiver, cuMem
 * mapped by the sender from its descriptor, or CUDA IPC where cuMem is off, or used directly
 * when both ranks live in one process), preferred
 * over shm for peers on the same host whose GPUs reach each other; shm and net slots are then
 * pinned and mapped into the GPU. Every connected key also gets a weft_dev_conn (device/device.h)
 * in device memory, in a per-communicator table, for the kernels.
 *
 * Setup is collective per pair: when rank A connects key (kind, c, B, send, proto), B must
 * connect (kind, c, A, recv, proto) at the same logical point (its own transport_connect call).
 * Messages are tagged by the key, and bootstrap queues early arrivals, so the order in which
 * the pairs of one call are listed does not matter. */
#ifndef WEFT_TRANSPORT_H
#define WEFT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "topo/p2p_info.h"
#include "transport/conn.h"

struct ncclComm;

/* Connections of collectives (ring, tree) and of send/recv are separate FIFOs: collectives run
 * in the same order on every rank, point-to-point transfers only match per peer. One-sided
 * puts and signals (rma/, host mode) have FIFOs of their own, drained by the target's rma
 * thread whatever the target's caller is doing. */
enum { WEFT_CONN_COLL = 0, WEFT_CONN_P2P = 1, WEFT_CONN_RMA = 2, WEFT_CONN_NKINDS = 3 };
enum { WEFT_TRANSPORT_SHM = 1, WEFT_TRANSPORT_NET = 2, WEFT_TRANSPORT_P2P = 3 };

#define WEFT_MAX_CHANNELS 64

typedef struct {
  int kind;    /* WEFT_CONN_COLL / WEFT_CONN_P2P */
  int channel; /* 0 .. nchannels-1 */
  int peer;    /* the other rank, != this rank */
  int send;    /* 1: this rank produces, 0: this rank consumes */
  int proto;   /* NCCL_PROTO_SIMPLE or NCCL_PROTO_LL */
} weft_conn_key;

/* When a net connection's receives need the plugin's iflush (slots in GPU memory). */
enum {
  WEFT_NET_FLUSH_NONE = 0,   /* host memory, or NCCL_GDR_FLUSH_DISABLE=1 */
  WEFT_NET_FLUSH_DATA = 1,   /* after every receive that carried bytes */
  WEFT_NET_FLUSH_ALWAYS = 2  /* after every receive (the plugin's forceFlush) */
};

/* Hands a connected net connection to whatever moves its slots through the plugin (the proxy,
 * which sits above transport/: the communicator's owner passes this in). net_comm is the
 * plugin's send or recv comm, mhandle the registration of conn->buff, flush a WEFT_NET_FLUSH_*
 * (receives only). */
typedef ncclResult_t (*weft_net_start_fn)(struct ncclComm* comm, weft_conn* conn, void* net_comm,
                                          void* mhandle, int flush);

typedef struct {
  int nchannels;
  size_t buffsize;    /* Simple: bytes of a connection's 8 slots (NCCL_BUFFSIZE) */
  size_t ll_buffsize; /* LL: same (NCCL_LL_BUFFSIZE) */
  int shm_disable;    /* agreed across ranks */
  weft_net_start_fn net_start; /* required when the communicator has a net */
} weft_transport_params;

/* Table of connections; nothing is connected yet. Device mode makes no CUDA call here: the
 * device table and the private stream are created by the first transport_connect. */
ncclResult_t transport_init(struct ncclComm* comm, const weft_transport_params* p);

/* The most connections the table can hold (what the proxy must be sized for). */
size_t transport_capacity(struct ncclComm* comm);

/* The operation a connection is made for, told to the peer with the connection's details: when
 * the two ranks' setups do not meet (their operations differ: a root, a send/receive size that
 * picks another protocol), the error names both sides' operations. */
typedef struct {
  int32_t func, dtype, root, peer; /* peer: of a Send/Recv; -1 otherwise */
  uint64_t count, seq;
} weft_conn_why;

/* Connect every key not connected yet (duplicates and connected keys are skipped). Blocking,
 * bounded by WEFT_TIMEOUT_MS, polls the abort flag; errors name the peer and the key. A peer
 * found setting up a connection this rank's batch does not expect (its operation differs) is
 * an ncclInvalidUsage at once, naming both operations (whys[i]: what needs keys[i]; may be
 * NULL). Only one thread may call this for a communicator at a time (it uses the bootstrap). */
ncclResult_t transport_connect(struct ncclComm* comm, const weft_conn_key* keys,
                               const weft_conn_why* whys, int n);

/* "coll", "p2p" or "one-sided", for messages. */
const char* transport_kind_name(int kind);

/* The connection for key, or NULL when it is not connected. */
weft_conn* transport_find(struct ncclComm* comm, const weft_conn_key* key);
/* How that connection is carried (WEFT_TRANSPORT_*), 0 when not connected. */
int transport_kind_of(struct ncclComm* comm, const weft_conn_key* key);
/* Device mode: the kernels' descriptor of that connection (device memory of comm->cuda_dev,
 * filled before the key counts as connected, never moved until transport_fini); NULL when not
 * connected or in host mode. */
typedef struct weft_dev_conn weft_dev_conn;
weft_dev_conn* transport_dev_conn(struct ncclComm* comm, const weft_conn_key* key);
/* Device mode: the base of that table (every transport_dev_conn points into it; NULL before
 * the first connection or in host mode). */
weft_dev_conn* transport_dev_table(struct ncclComm* comm);
/* The connections this rank has made so far (each algorithm's, lazily, as its work first
 * needs them) and the bytes of their FIFOs here (control block + WEFT_NSTEPS slots each);
 * NCCL_DEBUG_SUBSYS=INIT logs both with every new connection. */
void transport_memory(struct ncclComm* comm, int* nconn, size_t* fifo_bytes);
/* 1 when any connection goes through the net (the proxy then has work). */
int transport_uses_net(struct ncclComm* comm);

/* 1 when this device-mode rank reaches every other rank peer-to-peer (LL128 needs it). */
int transport_all_p2p(const struct ncclComm* comm);
/* 1 when every pair of device-mode ranks on one host reaches each other over NVLink (the same
 * answer on every rank: computed from the published rank infos only). */
int transport_all_nvlink(const struct ncclComm* comm);

/* Close everything (net comms, registrations, mappings, segment names still owned, CUDA IPC
 * mappings, device memory, the device table and stream) and free the table. The executor, the
 * proxy and every kernel using the connections must be stopped first. */
void transport_fini(struct ncclComm* comm);

/* The two ends' byte sizes of one step for a protocol under the agreed parameters. */
size_t transport_step_bytes(struct ncclComm* comm, int proto);


/* Fill this rank's weft_p2p_rank_info (CUDA queries in device mode, zeros in host mode). */
ncclResult_t transport_p2p_rank_info(const struct ncclComm* comm, weft_p2p_rank_info* out);

/* ---- zero-copy windows (transport_window.c, device mode) ---- */
#define WEFT_WINDOW_MAX_RANKS 8 /* the direct algorithms' limit (algo.h WEFT_DIRECT_MAX_RANKS) */
typedef struct weft_window_map weft_window_map;
/* Collective (every rank of comm, in the same order, as ncclCommWindowRegister): map every
 * rank's [buff, buff + size) into this process. *out is NULL when the window cannot be zero
 * copy on every rank (NCCL_DEBUG=INFO, subsystem REG, says why); an error only when the
 * exchange itself failed. */
ncclResult_t transport_window_map(struct ncclComm* comm, void* buff, size_t size,
                                  weft_window_map** out);
void transport_window_unmap(struct ncclComm* comm, weft_window_map* m);
/* The ranks' buffers as mapped here, in GPU memory (nranks entries, rank order). */
char* const* transport_window_peers(const weft_window_map* m);
/* Rank q's buffer as mapped in this process (host-side copy of that table). */
char* transport_window_peer(const weft_window_map* m, int q);
/* The bytes every rank registered at least. */
size_t transport_window_bytes(const weft_window_map* m);


/* ---- the LSA flat mapping of symmetric windows (transport_lsa.c, device mode) ---- */
/* This rank's LSA team: every rank when all run on this host and reach each other peer to
 * peer (device mode), else this rank alone (size 1, rank 0). The same on every rank. */
void transport_lsa_team(const struct ncclComm* comm, int* size, int* rank);
typedef struct weft_window_lsa weft_window_lsa;
/* Collective when the LSA team has several ranks (every rank, in the same order, as
 * ncclCommWindowRegister): map every rank's allocation holding buff at one flat reservation,
 * rank q's at q * stride. *out is NULL when the team is this rank alone or the window cannot
 * be mapped on every rank (NCCL_DEBUG_SUBSYS=REG says why: cudaMalloc memory, say); an error
 * only when the exchange itself failed. */
ncclResult_t transport_window_lsa_map(struct ncclComm* comm, void* buff, weft_window_lsa** out);
void transport_window_lsa_unmap(struct ncclComm* comm, weft_window_lsa* l);
/* LSA rank 0's buffer (its byte 0) in the flat mapping, and the bytes between two ranks'. */
char* transport_window_lsa_base(const weft_window_lsa* l);
uint64_t transport_window_lsa_stride(const weft_window_lsa* l);

/* ---- suspend and resume (transport_suspend.c, device mode) ----
 * The p2p FIFOs live in cuMem memory (transport_vmem.c) unless NCCL_CUMEM_ENABLE=0 or the
 * driver cannot: transport_can_suspend is 0 then, with why. transport_gpu_mem: this rank's
 * GPU memory that suspend releases (its FIFOs, rounded to the allocation granularity: counted
 * also while suspended) and what stays (connection and kernels' tables, GPUDirect slots, FIFOs
 * outside cuMem). transport_suspend (every kernel of the communicator done, on every rank:
 * the caller waits and meets the others first) unmaps the peers' FIFOs and releases this
 * rank's, keeping every address; *released: the bytes released. transport_resume, on every
 * rank together, maps new memory at the same addresses (control blocks as they were) and
 * remaps the peers'. Host mode and builds without CUDA: nothing to do. */
int transport_can_suspend(struct ncclComm* comm, char* why, size_t whylen);
void transport_gpu_mem(struct ncclComm* comm, uint64_t* suspendable, uint64_t* persist);
ncclResult_t transport_suspend(struct ncclComm* comm, uint64_t* released);
ncclResult_t transport_resume(struct ncclComm* comm);
/* GPU memory of the communicator that layers above allocate (one-sided counters, device-API
 * tables): count (sign 1) or stop counting (-1) the cudaMalloc allocation holding dev in
 * Persist. A no-op without CUDA, or once the transport is gone. */
void transport_gpu_persist(struct ncclComm* comm, const void* dev, int sign);

/* ---- registered buffers (transport_regview.c, device mode) ---- */
/* Whether registered buffers can be zero copy on this communicator at all: device mode,
 * WEFT_ZERO_COPY on, 2 to WEFT_WINDOW_MAX_RANKS ranks, every peer reached peer to peer. The
 * same answer on every rank (plan/ decides on it). */
int transport_reg_zero_copy(const struct ncclComm* comm);
typedef struct weft_reg_views weft_reg_views;
/* ncclCommRegister (local, at any time): have every peer's process map [buff, buff + size)
 * (the address itself in this process; another process's registration service otherwise).
 * *out is NULL when no peer can read it in place (not GPU memory, zero copy off; NCCL_DEBUG=INFO
 * says why); an error only when this rank's own CUDA calls fail. */
ncclResult_t transport_reg_views(struct ncclComm* comm, void* buff, size_t size,
                                 weft_reg_views** out);
/* release: ask the peers to unmap it now (ncclCommDeregister); 0 at destroy, where closing
 * the connections to their services does. The operations using it must have completed. */
void transport_reg_views_free(struct ncclComm* comm, weft_reg_views* v, int release);
/* Per rank, the buffer's address in that rank's process (0: it copies), in GPU memory. */
char* const* transport_reg_views_table(const weft_reg_views* v);

#endif
