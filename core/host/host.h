/* The host executor: one worker thread per channel of a communicator runs the work items
 * (algo/work.h) submitted to its channel. Each item is a non-blocking state machine: a step runs
 * only when every FIFO it touches is ready (data in its receive slots, room in its send
 * slots), and then runs whole; otherwise the worker moves on to the next item. The worker
 * round-robins all its items and backs off (spin, yield, sleep) when none moved, so any set
 * of operations that could complete with unbounded buffering completes with 8 slots.
 *
 * Waits are bounded: an item that has not moved for WEFT_TIMEOUT_MS fails with
 * ncclRemoteError naming the peer it waited for; a same-host peer's process is checked every
 * ~100 ms of waiting (dead: ncclRemoteError at once); a connection error from the proxy fails
 * the item with that error; the communicator's abort flag fails every item at once. */
#ifndef WEFT_HOST_H
#define WEFT_HOST_H

#include <stddef.h>
#include "nccl.h"
#include "algo/work.h"

struct ncclComm;
typedef struct weft_host weft_host;

/* Start nchannels workers. ll_payload: the largest LL payload of one step (scratch size).
 * done is called once per submitted work item when it ends, on the worker's thread. */
ncclResult_t host_exec_create(struct ncclComm* comm, int nchannels, size_t ll_payload,
                              weft_work_done_fn done, weft_host** out);
/* Hand w to the worker of w->channel; the done function is called when it ends. */
void host_exec_submit(weft_host* h, weft_work* w);
/* Run, on the calling thread, the items of works[0..n) that are on channel 0, to their end
 * (each reported through done, as its worker would): the caller of a launch would only sleep
 * until they end, and two thread hand-offs cost more than a small operation. The channel's
 * worker must hold no items (launches wait for their items, so it holds none between them);
 * items on other channels are not touched (submit them). Bounded as the workers are. */
void host_exec_run_here(weft_host* h, weft_work* works, int n);
/* 1 unless WEFT_HOST_CALLER_RUNS=0 (read at create): launches use host_exec_run_here. */
int host_exec_caller_runs(const weft_host* h);
/* ncclCommSuspend/Resume: unmap every channel's scratch (the workers must hold no items; the
 * caller refuses operations meanwhile) and return the bytes given back; map it again. */
size_t host_exec_suspend(weft_host* h);
ncclResult_t host_exec_resume(weft_host* h);
/* The bytes of scratch the executor maps while not suspended (what suspend gives back). */
size_t host_exec_mem_bytes(const weft_host* h);
/* Stop the workers (items still running fail with ncclRemoteError) and join them. */
void host_exec_destroy(weft_host* h);

/* Run one step of w if its FIFOs allow. Returns 1 when it ran, 0 when it must wait (w->blocked
 * names the connection), or -1 with *res set on failure. scratch: 2 × WEFT_PRIM_MAX_PEERS + 1
 * buffers of ll_payload bytes (LL only). */
int host_prim_try(weft_work* w, const weft_prim* p, char* const* scratch, ncclResult_t* res);

/* ---- op signatures (host_sig.c) ---- */
/* Write w's op signature (WEFT_CONN_SIG_BYTES) at wire. */
void host_sig_write(const weft_work* w, void* wire);
/* 1 when wire starts with a signature's magic (its first 4 bytes). */
int host_sig_magic_ok(const void* wire);
/* Compare the signature the peer of c sent (at wire) with w's op: 0 when they match, else a
 * WARN naming the peer and both sides' arguments and -1 with *res = ncclInvalidUsage. */
int host_sig_check(const weft_work* w, const weft_conn* c, const void* wire, ncclResult_t* res);
/* w waits on its receive connection idx: 1 (with the WARN and *res) when the peer's side of the
 * operation waits, unread, on the other protocol's connection of that peer and channel. */
int host_sig_check_sibling(weft_work* w, int idx, ncclResult_t* res);

#endif
