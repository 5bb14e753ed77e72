/* Bootstrap: the out-of-band TCP network among the ranks of one communicator, used during init
 * (and by split, policy agreement and debug checks) before any data transport exists.
 *
 * The unique id carries the root's address, a random magic and a random secret. Every
 * connection (rank→root, rank→rank) opens with a handshake that carries magic and secret; a
 * connection that fails it (stray client, port scanner, garbage) is closed and ignored, and the
 * init in progress carries on. Nothing read from the network sizes an allocation without a
 * bound check. Every wait is bounded; on an init timeout the error names the ranks that never
 * checked in. All functions log their own failures with rank and peer. */
#ifndef WEFT_BOOTSTRAP_H
#define WEFT_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "util/socket.h"

/* What the first bytes of an ncclUniqueId hold (the rest is zero). */
typedef struct {
  uint64_t magic;     /* random, or WEFT_COMM_ID_MAGIC for NCCL_COMM_ID */
  weft_sockaddr addr; /* the root's listener */
  uint64_t secret;    /* random per id; NCCL_COMM_ID ids derive it from the address */
} weft_bootstrap_id;

#define WEFT_COMM_ID_MAGIC 0x0280028002800280ull

typedef struct weft_bootstrap weft_bootstrap;

/* ncclGetUniqueId: pick an interface, start a root listener thread in this process, fill id.
 * The root thread exits once every rank of one init has checked in (or the init timed out). */
ncclResult_t bootstrap_get_unique_id(ncclUniqueId* id);

/* NCCL_COMM_ID=host:port: build the id from it; rank 0 also starts the root on that address
 * (call with the rank). Returns ncclInvalidArgument on a bad value. */
ncclResult_t bootstrap_id_from_env(int rank, ncclUniqueId* id);

/* Decode/validate an id received from the user (ncclInvalidArgument when it is not one). */
ncclResult_t bootstrap_id_decode(const ncclUniqueId* id, weft_bootstrap_id* out);

/* Join the ranks of id: check in with the root, learn every rank's address, connect the ring.
 * Blocks at most timeout_ms; on timeout the error names the ranks that never arrived. The abort
 * flag (may be NULL) is polled: when it becomes non-zero the call returns ncclRemoteError. */
ncclResult_t bootstrap_init(const ncclUniqueId* id, int rank, int nranks, int timeout_ms,
                            volatile uint32_t* abort_flag, weft_bootstrap** out);

/* Every rank contributes size bytes at data + rank*size; afterwards all hold all. */
ncclResult_t bootstrap_allgather(weft_bootstrap* b, void* data, size_t size);
ncclResult_t bootstrap_barrier(weft_bootstrap* b);
/* Tagged point-to-point messages; a receive must name the exact size the sender sent (a
 * different size is ncclInternalError naming both sizes). Messages with other (peer, tag) that
 * arrive meanwhile are queued. */
ncclResult_t bootstrap_send(weft_bootstrap* b, int peer, int tag, const void* data, size_t size);
ncclResult_t bootstrap_recv(weft_bootstrap* b, int peer, int tag, void* data, size_t size);
/* bootstrap_recv that also ends early when give_up(b, ctx) returns anything but ncclSuccess
 * (asked each time the wait looks and nothing matched; it must not wait or call the bootstrap
 * but for bootstrap_queued_tags, and it logs why): for a wait that can tell from what else the
 * peer sent that this message will not come. */
typedef ncclResult_t (*bootstrap_give_up_fn)(weft_bootstrap* b, void* ctx);
ncclResult_t bootstrap_recv_unless(weft_bootstrap* b, int peer, int tag, void* data, size_t size,
                                   bootstrap_give_up_fn give_up, void* ctx);
/* The tags in [lo, hi] of messages from peer that arrived and wait for their receive, oldest
 * first, at most max of them into tags; returns how many were written. */
int bootstrap_queued_tags(const weft_bootstrap* b, int peer, int lo, int hi, int* tags, int max);

/* This rank's bootstrap listener (the interface the bootstrap chose). */
const weft_sockaddr* bootstrap_listen_addr(const weft_bootstrap* b);
int bootstrap_rank(const weft_bootstrap* b);
int bootstrap_nranks(const weft_bootstrap* b);
/* Set the bound on later waits (init uses the init timeout; afterwards the op timeout). */
void bootstrap_set_timeout(weft_bootstrap* b, int timeout_ms);
/* Without blocking: 1 (and *how) when peer has closed its bootstrap or exited (our connection
 * to it reads EOF, or its listener refuses a probe; probes are spaced out); 0 when it looks
 * alive or cannot be told. For waits outside the bootstrap that depend on peer (net connection
 * setup). Same thread rules as bootstrap_recv. */
int bootstrap_peer_gone(weft_bootstrap* b, int peer, const char** how);

/* While an init runs: ask its root (the address in id) which ranks have not checked in yet.
 * One connection, at most timeout_ms; never logs. ncclRemoteError when the root does not answer
 * (refused: its process is gone or not started yet, or the init is past the root; or silent).
 * nranks 0 in out: nobody has checked in (the root has no nranks yet). */
#define BOOTSTRAP_PROGRESS_RANGES 64
typedef struct {
  int nranks, nmissing, waited_ms;
  int nranges; /* the first ranges of missing ranks, each first..last */
  int first[BOOTSTRAP_PROGRESS_RANGES], last[BOOTSTRAP_PROGRESS_RANGES];
} bootstrap_init_progress;
ncclResult_t bootstrap_query_init(const ncclUniqueId* id, int rank, int nranks, int timeout_ms,
                                  bootstrap_init_progress* out);

/* Make every wait in progress or to come return promptly with an error (from any thread). */
void bootstrap_abort(weft_bootstrap* b);
/* Close connections and free; safe after abort. */
void bootstrap_close(weft_bootstrap* b);

#endif
