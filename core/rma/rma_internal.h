/* Shared by the files of rma/: the per-communicator state and the step header on the wire. */
#ifndef WEFT_RMA_INTERNAL_H
#define WEFT_RMA_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "rma/rma.h"
#include "transport/conn.h"

/* Each step of a one-sided FIFO begins with this header; bytes of data follow it. */
#define RMA_STEP_MAGIC 0x77726d61u /* "wrma" */
#define RMA_STEP_SIGNAL 0x1u       /* raise one signal once the data is in place */
typedef struct {
  uint32_t magic;
  uint32_t flags;  /* RMA_STEP_* */
  uint64_t window; /* the window's number (rma_window_add), when bytes > 0 */
  uint64_t offset; /* where in it the data goes */
  uint64_t bytes;  /* data after the header */
} rma_step_hdr;

/* A symmetric window as the rma thread knows it. */
typedef struct {
  const weft_mem_reg* reg; /* NULL once deregistered */
  char* buff;
  size_t size;
  void* mh; /* its registration with the RMA plugin (rma_plugin.c), NULL without one */
} rma_window;

/* One peer's side of the one-sided traffic. */
typedef struct {
  weft_conn* send;  /* to the peer: the caller writes steps (one thread per communicator) */
  weft_conn* recv;  /* from the peer: drained under drain_lock (rma thread, or a waiter) */
  pthread_mutex_t drain_lock;
  uint64_t signals;  /* signals received from the peer (atomic, release after the data) */
  uint64_t consumed; /* of those, what waits took (the caller's) */
  volatile int error; /* ncclResult_t: a step from the peer was refused; its waits fail */
  int via_plugin;     /* puts to and signals from the peer go through the RMA plugin */
} rma_peer;

struct rma_plug; /* rma_plugin.c */

struct weft_rma {
  struct ncclComm* comm;
  pthread_rwlock_t windows_lock; /* writers: add/remove; readers: copies into windows */
  rma_window* windows;           /* by number */
  uint64_t nwindows;             /* numbers handed out so far */
  uint64_t cap;
  int connected;
  rma_peer* peers; /* nranks entries (this rank's: signals to itself) */
  pthread_t thread;
  int thread_live;
  volatile int stop;
  int timeout_ms;
  struct rma_plug* plug; /* host mode: the RMA plugin in use, NULL when none (rma_plugin.c) */
  /* device mode (rma_dev.c): this GPU's signal counters, one per source rank, written by the
   * peers through sig_map; what waits consumed of them; NULL sig_map: peers cannot reach them
   * (dev_why says why) */
  uint64_t* dev_sig;
  uint64_t* dev_consumed;
  struct weft_window_map* sig_map;
  char dev_why[256];
};

/* rma_service.c: drain what arrived from peer p (the caller holds its drain_lock). 1 when a
 * step moved, 0 when none did, -1 when the peer's stream failed (peers[p].error says how). */
int rma_drain(struct weft_rma* r, int p);
/* The same, when no one else drains p right now (a trylock); 0 when someone does. */
int rma_drain_try(struct weft_rma* r, int p);
/* The rma thread: drains every peer's FIFO, backing off when nothing moves. */
void* rma_service_main(void* arg);

/* rma_dev.c (device mode): the counters, mapped by every rank (collective); a put on stream
 * (copy, then the signal kernel); a wait kernel on stream. Without CUDA these are never called
 * (no communicator is in device mode). */
ncclResult_t rma_dev_connect(struct weft_rma* r);
ncclResult_t rma_dev_put(struct weft_rma* r, const void* src, size_t bytes, int peer,
                         const weft_mem_reg* win, size_t offset, void* stream);
ncclResult_t rma_dev_wait(struct weft_rma* r, int n, const int* peers, const int* counts,
                          void* stream);
void rma_dev_fini(struct weft_rma* r);

/* rma_plugin.c (host mode): after the FIFOs are connected, open the RMA plugin, and when every
 * rank has one, connect its group, register the signal words and every window numbered so
 * far, and mark the peers the FIFOs reach over the net as via_plugin (collective;
 * any rank without a usable plugin leaves every rank on the FIFOs). */
ncclResult_t rma_plugin_connect(struct weft_rma* r);
/* Register / deregister window w with the plugin (the caller holds windows_lock for writing);
 * no-ops without a plugin. */
ncclResult_t rma_plugin_reg_window(struct weft_rma* r, rma_window* w);
void rma_plugin_dereg_window(struct weft_rma* r, rma_window* w);
/* A put (bytes > 0, into window number at offset) or a bare signal to a via_plugin peer: the
 * plugin's put with its remote signal, returned once the plugin reports the request done. */
ncclResult_t rma_plugin_put(struct weft_rma* r, const char* fn, const void* src, size_t bytes,
                            int peer, uint64_t number, size_t offset);
/* Signals from peer p the plugin wrote into this rank's signal memory (0 without a plugin). */
uint64_t rma_plugin_signals(const struct weft_rma* r, int p);
/* Why the plugin can deliver nothing more (its queryLastError), NULL while it can. */
const char* rma_plugin_gone(struct weft_rma* r);
/* Deregister everything, destroy the context, close the group and the plugin. */
void rma_plugin_fini(struct weft_rma* r);

/* rma_ops.c: why connection c (to or from peer) cannot carry anything more, NULL while it can
 * (its error, the mark a gone peer left, or, every RMA_CHECK_INTERVAL_MS, its exited process). */
const char* rma_conn_gone(const weft_conn* c, uint64_t now, uint64_t* next_check);
/* One look of a call's bounded wait on peer (through connection c, NULL: none) for what: an
 * error, WARNed here naming fn, the peer and why, once c's peer is gone, the communicator is
 * aborted or WEFT_TIMEOUT_MS has passed since start; ncclSuccess while it may wait on. */
ncclResult_t rma_call_check(struct weft_rma* r, const char* fn, int peer, const weft_conn* c,
                            const char* what, uint64_t start, uint64_t* next_check);

/* Mark the communicator failed with res (the first error stays), as a failed collective does. */
void rma_comm_failed(struct ncclComm* comm, ncclResult_t res);

#endif
