/* Handing a file descriptor to the other processes of a collective step, by SCM_RIGHTS over
 * abstract UNIX sockets: the way a cuMem allocation's descriptor reaches peers where taking it
 * with pidfd_getfd is refused (Yama's ptrace_scope >= 1 without CAP_SYS_PTRACE: a container's
 * default, and an ordinary user's on Ubuntu).
 *
 * Each rank that serves opens a listening socket before the step's allgather (fdx_open: the
 * name is this process id and a random token, which the allgather publishes), then every rank
 * calls fdx_exchange with what the allgather said: it connects to each process it fetches from,
 * serves its own descriptor to the nserve connections it expects, then receives one descriptor
 * per fetch. Connecting first (the listen backlog holds the connections) and serving before
 * receiving means no order of the ranks can deadlock. Only a peer of this user is served
 * (SO_PEERCRED), and a descriptor is taken only from the process the allgather named (its pid
 * and user, read from the socket), so a squatter on the name gets nothing and gives nothing.
 * Bounded by timeout_ms; no CUDA call, no communicator: the unit test drives it with memfds. */
#ifndef WEFT_TRANSPORT_FDX_H
#define WEFT_TRANSPORT_FDX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl.h"

typedef struct weft_fdx weft_fdx;

/* Listen for up to backlog fetchers; *token goes into the allgather beside getpid(). */
ncclResult_t fdx_open(int backlog, weft_fdx** out, uint64_t* token);

/* Serve fd to nserve fetchers and fetch one descriptor from each of the nfetch processes
 * (pids[i], tokens[i]) into fds_out[i] (the caller closes them). x may be NULL when nserve is 0.
 * On failure every descriptor fetched so far is closed, fds_out[] is -1 and why says which
 * process and step failed. */
ncclResult_t fdx_exchange(weft_fdx* x, int fd, int nserve, int nfetch, const int32_t* pids,
                          const uint64_t* tokens, int* fds_out, int timeout_ms, char* why,
                          size_t whylen);

void fdx_close(weft_fdx* x);

/* fdx_exchange's three steps, for a step whose descriptors differ per fetcher (the p2p FIFOs,
 * transport_vmem.c: one listener per descriptor, each served to one fetcher). Every process of
 * the step runs all its fdx_connect (which never waits: the listener's backlog holds the
 * connection), then all its fdx_serve, then all its fdx_take, so no order deadlocks; one
 * deadline bounds the step. fdx_connect: *sock connected to process pid's listener (token),
 * after checking the process that holds it is pid of this user; -1 on failure. fdx_serve: fd
 * to nserve fetchers of this user. fdx_take: the descriptor process pid sends on sock into
 * *fd (the caller closes it; -1 on failure). Failures say why and return ncclSystemError. */
typedef struct {
  uint64_t at_ms; /* clock_ms() */
  int timeout_ms;
} fdx_deadline;
fdx_deadline fdx_deadline_in(int timeout_ms);
ncclResult_t fdx_connect(int32_t pid, uint64_t token, int* sock, char* why, size_t whylen);
ncclResult_t fdx_serve(weft_fdx* x, int fd, int nserve, fdx_deadline d, char* why,
                       size_t whylen);
ncclResult_t fdx_take(int sock, int32_t pid, fdx_deadline d, int* fd, char* why, size_t whylen);

/* The SCM_RIGHTS message itself, shared with the registration service (transport_regsrv.c):
 * fdx_send sends len bytes of buf with fd attached when fd >= 0 (sendmsg's result, errno set);
 * fdx_recv receives up to len bytes into buf and sets *fd to the first descriptor that came
 * (any other is closed; -1 when none came, and always when recvmsg failed, whose control
 * buffer then holds nothing to read) and *msg_flags (when not NULL) to recvmsg's msg_flags
 * (MSG_TRUNC, MSG_CTRUNC). No retry on EINTR: the callers decide. */
ssize_t fdx_send(int sock, const void* buf, size_t len, int fd, int flags);
ssize_t fdx_recv(int sock, void* buf, size_t len, int flags, int* fd, int* msg_flags);

#endif
