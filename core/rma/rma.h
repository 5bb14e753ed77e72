/* One-sided communication: ncclPutSignal, ncclSignal and ncclWaitSignal on symmetric windows
 * (NCCL 2.30's semantics), in host mode (below) and device mode (rma_dev.c).
 *
 * Every NCCL_WIN_COLL_SYMMETRIC window of a communicator gets a number, its place in the
 * order the ranks registered their windows (a collective call, so the same on every rank): a
 * put names the target's window by that number, never by an address.
 *
 * Host mode: the first symmetric window connects every pair of ranks with a FIFO of its own
 * (transport/, kind WEFT_CONN_RMA: shm on one host, the net plugin otherwise). A put writes
 * steps {header, data} into the FIFO to the target; a signal is a step with no data. On the
 * target, the communicator's rma thread (rma_service.c) drains each FIFO whatever the target's
 * caller is doing: it copies the data into the window and then, release-ordered after the
 * data, adds one to the target's counter for that peer. A wait (rma_wait) adds the count it
 * waits for to what it consumed before and waits until the counter reaches it, helping the rma
 * thread drain the FIFOs it waits on; so a program that waits for N signals each time replays
 * the same way. A step for a window the target has not registered yet stays in the FIFO until
 * it has. With an RMA plugin usable on every rank, the peers whose FIFO goes over the net use
 * the plugin's iputSignal instead, and waits read the signal words it writes (rma_plugin.c).
 *
 * Ordering: puts and signals to one peer arrive in the order they were issued; a signal counts
 * every put issued before it to that peer. The calls return when the data has left the caller's
 * buffer (in a FIFO or the plugin's hands): the source buffer may be reused. A wait returns
 * when the counts arrived, with the data of every put counted in place. */
#ifndef WEFT_RMA_H
#define WEFT_RMA_H

#include <stddef.h>

#include "comm/comm.h"
#include "nccl.h"

/* A symmetric window was registered on comm (any mode, every rank in the same order): number
 * it. Called by the registering thread. */
ncclResult_t rma_window_add(struct ncclComm* comm, const weft_mem_reg* reg);
/* Collective, after rma_window_add of a window on a communicator already connected (rma_connect
 * does the same for the windows before it): with an RMA plugin in use, returns once every rank
 * has registered the window with the plugin, so that no put into it overtakes a peer's
 * registration; without one, at once. */
ncclResult_t rma_window_sync(struct ncclComm* comm);
/* It is being deregistered: steps for it that arrive later are refused (a WARN naming the
 * peer, and that peer's waits fail). */
void rma_window_remove(struct ncclComm* comm, const weft_mem_reg* reg);

/* Collective (every rank, at its first symmetric window): host mode connects the one-sided
 * FIFOs with every peer and starts the rma thread; device mode allocates this GPU's signal
 * counters and maps every peer's (rma_dev.c). Idempotent. Bounded by WEFT_TIMEOUT_MS. */
ncclResult_t rma_connect(struct ncclComm* comm);
/* 1 once rma_connect has run on comm. */
int rma_connected(const struct ncclComm* comm);

/* Write bytes from src into peer's copy of window win at offset, then raise one signal there
 * (signal index 0). bytes 0 (win NULL) is ncclSignal. The arguments are checked by the caller
 * (api/); win is a symmetric window of comm. Host mode: blocks only while the FIFO to peer is
 * full (the peer's rma thread drains it), bounded by WEFT_TIMEOUT_MS; a dead peer or an
 * aborted communicator fails it (ncclRemoteError), naming the peer. Device mode: enqueued on
 * stream (a copy into the peer's mapped window, then the signal kernel). */
ncclResult_t rma_put(struct ncclComm* comm, const void* src, size_t bytes, int peer,
                     const weft_mem_reg* win, size_t offset, void* stream);

/* Wait until counts[i] more signals arrived from peers[i] (i < n; a peer may repeat, its
 * counts add up) than earlier waits consumed, then consume them. Host mode: bounded by
 * WEFT_TIMEOUT_MS, the error names the peer, the signal index and the count; a dead peer fails
 * it as soon as what it sent before it died has been drained. Device mode: a kernel on stream
 * waits (bounded like every kernel wait), the host thread does not. */
ncclResult_t rma_wait(struct ncclComm* comm, int n, const int* peers, const int* counts,
                      void* stream);

/* Stop the rma thread and free the state. Before transport_fini: the thread reads the FIFOs. */
void rma_fini(struct ncclComm* comm);

#endif
