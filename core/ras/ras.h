/* The RAS service: NCCL's RAS client protocol (text over TCP, `ncclras` and `weft-ras` speak
 * it) answered from this process. ras_server.c: the listener thread; ras_report.c: the status
 * report and the peer events MONITOR streams. */
#ifndef WEFT_RAS_H
#define WEFT_RAS_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

#define WEFT_RAS_PROTOCOL 2     /* "CLIENT PROTOCOL 2" / "SERVER PROTOCOL 2" */
#define WEFT_RAS_PORT 28028     /* NCCL_RAS_ADDR's default port */
#define WEFT_RAS_OUT_MAX (4u << 20) /* the most a report (or a client's backlog) may hold */

/* A communicator was created (start the service with the first of the process) or freed
 * (stop it with the last). Neither fails the communicator: a port that cannot be bound is
 * logged once at INFO and the job runs without the service. */
void ras_comm_add(void);
void ras_comm_remove(void);

/* ---- ras_report.c ---- */

/* A growable text buffer that stops growing at WEFT_RAS_OUT_MAX (full: later appends drop). */
typedef struct {
  char* p;
  size_t len, cap;
  int full;
} ras_buf;
void ras_buf_printf(ras_buf* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void ras_buf_free(ras_buf* b);

enum { RAS_TEXT = 0, RAS_JSON = 1 };
/* The status report of every communicator of this process, as its host's boards show it. */
void ras_report_status(ras_buf* out, int format, int verbose, int timeout_factor);

/* Peer events since the last call (a rank turned unresponsive, dead, back, gone): appended
 * to out in the given format; first call only records. Bounded table (see ras_report.c). */
typedef struct ras_watch ras_watch;
ras_watch* ras_watch_new(void);
void ras_watch_free(ras_watch* w);
void ras_watch_poll(ras_watch* w, ras_buf* text, ras_buf* json, int timeout_factor);

#endif
