/* The registration service of one rank (device mode): how a peer process has this process map
 * its buffer (ncclCommRegister), so that this rank's kernels can read it in place.
 *
 * Each rank of a device communicator with peers in other processes on its host serves one
 * abstract UNIX socket (SOCK_SEQPACKET, named from its process id, the communicator and its
 * rank) on a thread of its own. A peer that registers a buffer connects once and sends one
 * request per buffer: IMPORT (a CUDA IPC handle and offset, or a cuMem descriptor passed with
 * SCM_RIGHTS) is answered with the buffer's address in the server's process; RELEASE undoes one
 * import, and CANCEL the one an IMPORT made after its requester stopped waiting for the answer
 * (sent by regsrv_import then). When a connection closes (the peer destroyed its communicator,
 * or died) every import it made is released. Only processes of this user are served
 * (SO_PEERCRED); a request that is malformed, for another communicator, or for an unknown
 * import is refused with a reason and changes nothing. The mapping itself is the importer's
 * (transport_regview.c passes CUDA's; the unit test a fake), so this file makes no CUDA call. */
#ifndef WEFT_TRANSPORT_REGSRV_H
#define WEFT_TRANSPORT_REGSRV_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

#define WEFT_REGSRV_NAME_MAX 108 /* sun_path */
#define WEFT_REGSRV_HANDLE_BYTES 64
#define WEFT_REGSRV_WHY 96

enum { WEFT_REGSRV_IPC = 1, WEFT_REGSRV_FD = 2 };

/* The reason an import is refused when the server's process still maps an earlier buffer of
 * the requester at that address (freed and allocated again, the old mapping not yet undone:
 * CUDA maps a range of a peer's allocation once). That registration is copied this time. */
#define WEFT_REGSRV_STILL_MAPPED "it still maps an earlier buffer there"

/* What the requester says of its buffer. */
typedef struct {
  int32_t how;     /* _IPC: handle is a cudaIpcMemHandle_t; _FD: a descriptor rides along */
  int32_t pad;
  uint64_t offset; /* the buffer's offset in its allocation */
  uint64_t alloc;  /* _FD: the allocation's bytes (what the importer maps) */
  uint64_t size;   /* the buffer's bytes */
  uint8_t handle[WEFT_REGSRV_HANDLE_BYTES];
} weft_regsrv_desc;

/* The server's importer. import maps d (fd: the descriptor received with it, or -1; the
 * server closes it afterwards) and returns 1 with *addr the buffer's address here and *mapping
 * what release needs, or 0 with why set. */
typedef struct {
  int (*import)(void* ctx, const weft_regsrv_desc* d, int fd, uint64_t* addr, void** mapping,
                char* why, size_t whylen);
  void (*release)(void* ctx, const weft_regsrv_desc* d, void* mapping);
  void* ctx;
} weft_regsrv_ops;

typedef struct weft_regsrv weft_regsrv;

/* The socket name (abstract: out[0] is '\0', *len the address length to bind or connect). */
void regsrv_name(char out[WEFT_REGSRV_NAME_MAX], size_t* len, uint64_t proc_id,
                 uint64_t comm_hash, int rank);

/* Serve name until regsrv_stop; key must come with every request (the communicator's hash).
 * rank only labels the logs. */
ncclResult_t regsrv_start(const char* name, size_t len, uint64_t key, int rank,
                          const weft_regsrv_ops* ops, weft_regsrv** out);
/* Stop the thread, close every connection and release every import still held. */
void regsrv_stop(weft_regsrv* s);
/* Imports held now (for tests and logs). */
int regsrv_imports(weft_regsrv* s);

/* ---- the requester's side: one connection per peer, used by one thread at a time ---- */

/* Connect to name within timeout_ms; -1 with why set when it cannot be reached. */
int regsrv_connect(const char* name, size_t len, int timeout_ms, char* why, size_t whylen);
/* IMPORT: 1 with *addr (the buffer in the server's process) and *id (for RELEASE), or 0 with
 * why set (refused, timed out, connection lost). fd: the descriptor to pass for _FD, else -1.
 * After a timeout it sends CANCEL for the request, unwaited: what the service still maps for
 * it is unmapped when done. */
int regsrv_import(int conn, uint64_t key, const weft_regsrv_desc* d, int fd, int timeout_ms,
                  uint64_t* addr, uint64_t* id, char* why, size_t whylen);
/* RELEASE one import: 1 done, 0 with why set. timeout_ms 0: only send it (1: sent), without
 * waiting for the answer. That is how weft releases: undoing a CUDA IPC mapping may wait until
 * the server's GPU work ends, and that work may be waiting for the requester. */
int regsrv_release(int conn, uint64_t key, uint64_t id, int timeout_ms, char* why,
                   size_t whylen);

#endif
