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
/* Mark this rank destroyed (or aborted); stops the watchdog with the last comm. */
void comm_hang_detach(struct ncclComm* comm);
/* Unmap the board, once no launch (another thread's, after an abort) and no executor worker
 * can note anything on it: after the data path is gone. */
void comm_hang_free(struct ncclComm* comm);

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

/* ---- for the RAS service (ras/): read the board, never write it ---- */
#define WEFT_HANG_NFUNCS 16 /* ncclFunc_t values counted per rank (launches by first op) */
enum { WEFT_HANG_LIVE = 1, WEFT_HANG_DESTROYED, WEFT_HANG_ABORTED };
typedef struct {
  int state, pid, in_call, func, result;
  uint64_t seq, done_seq, hb_ms; /* hb_ms: clock_ms of its process's last watchdog tick */
  uint64_t since_ms;             /* clock_ms its current launch began or its last one ended */
  uint64_t func_done[WEFT_HANG_NFUNCS];
} weft_hang_view;
/* Rank r's slot as this process sees it: 0 when it cannot (no board yet, no shared board,
 * the rank has not mapped it). */
int comm_hang_view(struct ncclComm* comm, int r, weft_hang_view* v);
/* Rank r's hang-report line and/or the summary (who waits for whom) as text; 0 before the
 * communicator's init completed. line or summ may be NULL; summ_len >= 512. */
int comm_hang_lines(struct ncclComm* comm, int r, char* line, size_t len, char* summ,
                    size_t summ_len);

/* ---- comm_hang_watch.c ---- */
void comm_hang_watch_add(void);
void comm_hang_watch_remove(void);

#endif
