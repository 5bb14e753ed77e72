/* The RAS service: NCCL's RAS client protocol (text over TCP, `ncclras` and `weft-ras` speak
 * it) answered from this process. ras_server.c: the listener thread; ras_report.c: the status
 * report and the peer events MONITOR streams; ras_peer.c: the RAS network between hosts (each
 * process answers other hosts' questions about its host's ranks); ras_gather.c: what a report
 * asks the network first (other hosts' ranks, the bootstrap root of an init in progress). */
#ifndef WEFT_RAS_H
#define WEFT_RAS_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm_hang.h"
#include "nccl.h"
#include "util/socket.h"

#define WEFT_RAS_PROTOCOL 2     /* "CLIENT PROTOCOL 2" / "SERVER PROTOCOL 2" */
#define WEFT_RAS_PORT 28028     /* NCCL_RAS_ADDR's default port */
#define WEFT_RAS_OUT_MAX (4u << 20) /* the most a report (or a client's backlog) may hold */

/* A communicator was created (start the service with the first of the process) or freed
 * (stop it with the last). Neither fails the communicator: a port that cannot be bound is
 * logged once at INFO and the job runs without the service. */
void ras_comm_add(void);
void ras_comm_remove(void);

/* The RAS peer listener of this process, for the rank info an init publishes: made on the first
 * call while the service runs (bound to near's address, any port; its thread answers other
 * hosts), then the same for every communicator. out->sa.sa_family is 0 when there is none. */
void ras_peer_addr(const weft_sockaddr* near, weft_sockaddr* out);

/* ---- ras_report.c ---- */

/* One rank as the report shows it. Written on the rank's own host (where its board and its
 * process can be looked at) and sent as is to another host's RAS peer (ras_peer.c): the wire
 * format between processes of one weft build. */
enum { RK_OK = 0, RK_UNRESPONSIVE, RK_DEAD, RK_MISSING, RK_REMOTE, RK_NKINDS };
typedef struct {
  int32_t rank, pid, kind, init_state, async_error, why; /* why: RAS_WHY_* */
  uint8_t abort_flag, destroy_flag, finalized, in_call;
  uint32_t pad;
  uint64_t done_seq;
  uint64_t func_done[WEFT_HANG_NFUNCS];
} ras_row;
enum { RAS_WHY_NONE = 0, RAS_WHY_EXITED, RAS_WHY_STOPPED, RAS_WHY_STALE, RAS_WHY_NO_BOARD,
       RAS_WHY_REMOTE, RAS_WHY_HOST_REFUSED, RAS_WHY_HOST_SILENT, RAS_WHY_NOT_ARRIVED,
       RAS_WHY_ARRIVED, RAS_WHY_ROOT_GONE, RAS_WHY_COUNT };
extern const char* const ras_why_text[RAS_WHY_COUNT];
struct ncclComm;
/* Rank r of comm as this host sees it (r's slot of the board, its process); 0 when r is not on
 * this host's board (kind RK_MISSING or RK_REMOTE, the rest unset). */
int ras_local_row(struct ncclComm* comm, int r, uint64_t now, int factor, ras_row* out);

/* ---- ras_gather.c ---- */

/* What the network says of one communicator, asked before a report is written (outside the
 * registry's lock). rows: other hosts' ranks that their RAS peers reported, or that no process
 * of their host answered for (kind and why say how it failed); init: the bootstrap root's
 * answer while this rank waits in init. */
typedef struct {
  uint64_t comm_hash;
  ras_row* rows;
  int nrows;
  int hosts, hosts_answered; /* other hosts asked, and those that answered */
  int init_asked, init_answered;
  bootstrap_init_progress init;
} ras_net_comm;
typedef struct {
  ras_net_comm* c;
  int n;
  int timeouts; /* connections that timed out */
} ras_net;
void ras_gather(ras_net* net, int timeout_factor);
void ras_net_free(ras_net* net);
const ras_net_comm* ras_net_find(const ras_net* net, uint64_t comm_hash);
/* ras_peer.c: this host's rows of the communicator comm_hash (key must match) into out
 * (malloc'd, at most max); returns the count, -1 when no such communicator is here. */
int ras_peer_rows(uint64_t comm_hash, uint64_t key, int nranks, ras_row** out, int max);
/* ras_peer.c: the thread that answers other hosts; started and stopped by ras_server.c. */
typedef struct ras_peer_server ras_peer_server;
ras_peer_server* ras_peer_start(int listen_fd);
void ras_peer_stop(ras_peer_server* s);

#define RAS_PEER_MAGIC 0x7765667472617331ull /* "weftras1" */
#define RAS_PEER_ROWS_MAX 4096 /* rows one answer may carry: a host's ranks of one comm */
typedef struct {
  uint64_t magic, comm_hash, key;
  int32_t nranks, version;
} ras_peer_req;
typedef struct {
  uint64_t magic;
  int32_t status, nrows; /* status 0: found; 1: no such communicator in that process */
} ras_peer_ans;


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
void ras_report_status(ras_buf* out, int format, int verbose, int timeout_factor,
                       const ras_net* net);

/* Peer events since the last call (a rank turned unresponsive, dead, back, gone): appended
 * to out in the given format; first call only records. Bounded table (see ras_report.c). */
typedef struct ras_watch ras_watch;
ras_watch* ras_watch_new(void);
void ras_watch_free(ras_watch* w);
void ras_watch_poll(ras_watch* w, ras_buf* text, ras_buf* json, int timeout_factor);

#endif
