/* The hang report (comm_hang.c: the status board and the report lines; comm_hang_watch.c: the
 * watchdog thread, WEFT_HANG_REPORT_MS and SIGUSR1). The data path calls the note_* functions
 * at the edges of a launch and of a long wait; each is a few relaxed stores into the rank's own
 * slot, and a no-op for a communicator without a board. */
#ifndef WEFT_COMM_HANG_H
#define WEFT_COMM_HANG_H

#include <stdint.h>
#include "nccl.h"

struct ncclComm;

/* What the board shows of a launch: its first collective (or first op), how many ops it has
 * and the last collective sequence number among them. */
typedef struct {
  int func, dtype, root, nops;
  uint64_t count, seq, last_seq;
} weft_hang_launch;

/* Map (creating if first) this communicator's board and mark this rank live; starts the
 * watchdog with the first communicator of the process. Before the init's allgather. */
ncclResult_t comm_hang_attach(struct ncclComm* comm);
/* At the end of a successful init: remove the board's name (every rank has mapped it by the
 * init allgather) and let the watchdog read this communicator. check_colls: the communicator
 * checks collectives across ranks (WEFT_CHECK_COLLECTIVES), which the report mentions. */
void comm_hang_ready(struct ncclComm* comm, int check_colls);
/* Mark this rank destroyed (or aborted) and unmap; stops the watchdog with the last comm. */
void comm_hang_detach(struct ncclComm* comm);

/* A launch of ops begins (setup: it connects or checks arguments first), runs, ends. */
void comm_hang_note_launch(struct ncclComm* comm, const weft_hang_launch* l, int setup);
void comm_hang_note_run(struct ncclComm* comm);
void comm_hang_note_done(struct ncclComm* comm, ncclResult_t res);
/* A work item has waited ~100 ms on this connection (host executor). */
void comm_hang_note_wait(struct ncclComm* comm, int peer, int channel, int is_send, int proto,
                         uint64_t step);

/* weftCommHangReport: this rank's line and the summary now; the other ranks of the host log
 * their lines at their watchdog's next tick. */
ncclResult_t comm_hang_report_now(struct ncclComm* comm);
/* One watchdog tick for comm: the timer, a signal, answering a request. */
void comm_hang_poll(struct ncclComm* comm, uint64_t now, int hang_ms, int signalled);

/* ---- comm_hang_watch.c ---- */
void comm_hang_watch_add(void);
void comm_hang_watch_remove(void);

#endif
