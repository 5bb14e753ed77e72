/* Bootstrap internals shared by the files of this folder: the wire formats, the pending-handshake
 * set both the root and the ranks use, and the per-rank state behind weft_bootstrap.
 *
 * Wire (host byte order: every rank of a job runs the same build on the same architecture):
 *   every connection opens with a bs_hello from the connector;
 *   CHECKIN  rank -> root   hello only (carries the rank's listener); the root then closes it;
 *   VERDICT  root -> rank   hello + bs_verdict + nranges bs_range (the root connects back);
 *   RING     rank -> rank+1 hello, then collective steps: bs_coll_hdr + data;
 *   P2P      rank -> peer   hello, then messages: bs_p2p_hdr + payload;
 *   QUERY    anyone -> root hello only; the root answers on that connection with a
 *                           bs_verdict (PROGRESS: who has not checked in yet) + ranges, closes. */
#ifndef WEFT_BOOTSTRAP_INTERNAL_H
#define WEFT_BOOTSTRAP_INTERNAL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "bootstrap/bootstrap.h"

#define BS_WIRE_VERSION 1u
#define BS_MAX_RANKS (1 << 20)         /* bound on nranks before anything is sized by it */
#define BS_HELLO_TIMEOUT_MS 1000       /* an accepted connection must say hello within this */
#define BS_MAX_PENDING 128             /* unauthenticated connections held at once */
#define BS_MAX_RANGES BOOTSTRAP_PROGRESS_RANGES /* missing-rank ranges carried by a timeout verdict */
#define BS_MAX_QUEUED_BYTES (64u << 20) /* unexpected p2p bytes held per bootstrap */
#define BS_POLL_SLICE_MS 20            /* how often an external abort flag is looked at */
#define BS_GIVE_UP_MS 2000             /* retries of a refused/unroutable root before failing */

enum { BS_KIND_CHECKIN = 1, BS_KIND_VERDICT = 2, BS_KIND_RING = 3, BS_KIND_P2P = 4,
       BS_KIND_QUERY = 5 };

typedef struct {
  uint64_t magic;
  uint64_t secret;
  uint32_t version;
  uint32_t kind;
  int32_t rank;       /* CHECKIN/RING/P2P: the sender; VERDICT: the recipient */
  int32_t nranks;     /* the sender's nranks (VERDICT: echoes the recipient's) */
  int32_t timeout_ms; /* CHECKIN: how much longer the rank waits for the root's verdict */
  uint32_t reserved;
  weft_sockaddr addr; /* CHECKIN: the rank's own listener */
  uint32_t pad;
} bs_hello;
_Static_assert(sizeof(bs_hello) == 72, "bs_hello is a fixed wire format");

enum {
  BS_VERDICT_OK = 1,            /* next = the listener of rank+1 */
  BS_VERDICT_TIMEOUT = 2,       /* ranges list the ranks that never checked in */
  BS_VERDICT_DUPLICATE = 3,     /* this rank had already checked in */
  BS_VERDICT_NRANKS = 4,        /* ranks disagree on nranks: root_nranks (the first check-in)
                                 * against odd_nranks (odd_rank's); every rank gets it */
  BS_VERDICT_CLAIMED = 5,       /* two parties claimed one rank (a bs_claim in the ranges) */
  BS_VERDICT_PROGRESS = 6       /* QUERY's answer: nmissing, the first nranges ranges of them,
                                 * waited_ms since the first check-in (root_nranks 0: none yet) */
};

typedef struct {
  uint32_t status;
  uint32_t nmissing;   /* TIMEOUT: how many ranks are missing in all */
  uint32_t nranges;    /* TIMEOUT: bs_range entries that follow (<= BS_MAX_RANGES) */
  uint32_t waited_ms;  /* TIMEOUT: how long the root waited after the first check-in */
  int32_t root_nranks; /* the nranks the root took from the first check-in */
  int32_t odd_nranks;  /* NRANKS: the other nranks, odd_rank's */
  weft_sockaddr next;  /* OK */
  int32_t odd_rank;    /* NRANKS: the first rank that checked in with another nranks */
} bs_verdict;
_Static_assert(sizeof(bs_verdict) == 56, "bs_verdict is a fixed wire format");

typedef struct {
  int32_t first, last;
} bs_range;

/* CLAIMED: the init fails for every rank; carried in the ranges that follow the verdict. */
typedef struct {
  int32_t rank, pad;
  weft_sockaddr first, second; /* the listeners both claimants announced */
  weft_sockaddr second_from;   /* where the second claim came from */
  uint32_t pad2;
} bs_claim;
#define BS_CLAIM_RANGES ((sizeof(bs_claim) + sizeof(bs_range) - 1) / sizeof(bs_range))
_Static_assert(BS_CLAIM_RANGES <= BS_MAX_RANGES, "a claim fits in the verdict's ranges");

typedef struct {
  uint32_t op; /* BS_OP_* */
  uint32_t seq;
  uint64_t size;
} bs_coll_hdr;
enum { BS_OP_ALLGATHER = 0x41474154u, BS_OP_BARRIER = 0x42415252u };

typedef struct {
  int32_t tag;
  uint32_t magic; /* BS_P2P_MAGIC: catches a stream that lost its framing */
  uint64_t size;
} bs_p2p_hdr;
#define BS_P2P_MAGIC 0x70327032u

/* ---- bootstrap_wire.c ---- */

ncclResult_t bs_random(void* buf, size_t len);
void bs_hello_init(bs_hello* h, const weft_bootstrap_id* id, uint32_t kind, int rank,
                   int nranks);
/* NULL when h belongs to this id and is well formed; else why not (for one INFO line). */
const char* bs_hello_check(const bs_hello* h, uint64_t magic, uint64_t secret);
/* "rank 2" / "ranks 3,5-9" (from a sorted range list); truncated with "..." to fit. */
void bs_format_ranges(const bs_range* r, int nranges, uint32_t total, char* buf, size_t len);
/* Compress a 0/1 presence table into ranges of absent ranks; returns the range count
 * (at most max), *total gets the number of absent ranks. */
int bs_missing_ranges(const unsigned char* present, int nranks, bs_range* out, int max,
                      uint32_t* total);

/* Connections accepted but not yet through the handshake: read without blocking, each with its
 * own deadline, so a silent or slow client never holds up the others. */
typedef struct {
  int fd;
  uint64_t deadline;
  size_t done;
  bs_hello hello;
  weft_sockaddr from;
} bs_pending;

typedef struct {
  bs_pending v[BS_MAX_PENDING];
  int n;
} bs_pending_set;

/* Called with each complete hello that passed bs_hello_check. Return 1 to keep the fd (the
 * callee owns it now), 0 to have it closed (the callee has logged why). Accepted connections
 * are receiving ends: the set closes them with a reset (bs_reset_fd), so must the callee. */
typedef int (*bs_hello_fn)(void* ctx, int fd, const bs_hello* h, const weft_sockaddr* from);

/* Accept every connection waiting on listen_fd (non-blocking); the oldest pending one is
 * dropped when the set is full. */
void bs_pending_accept(bs_pending_set* s, int listen_fd, const char* who);
/* Fill pfd[0..n) for the pending set; returns n. */
int bs_pending_pollfds(const bs_pending_set* s, struct pollfd* pfd);
/* After poll: read what arrived, hand complete hellos to fn, drop failed or expired ones.
 * pfd is what bs_pending_pollfds filled (NULL: just try every entry). magic 0 (no id has it):
 * fn checks each hello's magic and secret itself (bs_hello_check), the rest is checked here. */
void bs_pending_advance(bs_pending_set* s, const struct pollfd* pfd, uint64_t magic,
                        uint64_t secret, const char* who, bs_hello_fn fn, void* ctx);
/* Earliest deadline in the set (UINT64_MAX when empty). */
uint64_t bs_pending_next_deadline(const bs_pending_set* s);
void bs_pending_close_all(bs_pending_set* s);

/* ---- bootstrap_root.c ---- */

/* Serve one init on listen_fd (owned by the root from now on) in a detached thread. */
ncclResult_t bs_root_start(const weft_bootstrap_id* id, int listen_fd);
/* Serve id's init on the process's shared root server (started on bind_addr when none runs);
 * sets id->addr to the server's address. */
ncclResult_t bs_root_add_shared(weft_bootstrap_id* id, const weft_sockaddr* bind_addr);
/* Roots still serving an id (tests; the name predates the shared server). */
int bs_root_threads_live(void);

/* ---- the per-rank state (bootstrap_init.c, bootstrap_loop.c, coll, p2p) ---- */

typedef struct bs_msg {
  struct bs_msg* next;
  int peer, tag;
  size_t size;
  unsigned char data[];
} bs_msg;

enum { BS_RX_NONE = 0, BS_RX_OPEN, BS_RX_CLOSED, BS_RX_BROKEN };

typedef struct {
  int send_fd;    /* ours, for messages to the peer (-1: not opened yet) */
  int recv_fd;    /* the peer's, for messages to us (-1: none) */
  int rx_state;   /* BS_RX_*: what became of recv_fd */
  bs_p2p_hdr hdr; /* the message arriving on recv_fd */
  size_t hdr_done;
  bs_msg* msg;        /* its queue entry (NULL when it lands in the waiting receive) */
  unsigned char* dst; /* where its payload goes */
  size_t done;
  int probe_fd;      /* a connect to its listener checking that it still exists (-1: none) */
  uint64_t probe_at; /* when a receive waiting on it probes next (0: wait not started) */
} bs_peer;

/* The receive the caller is blocked in: a matching message lands straight in buf. */
typedef struct {
  int peer, tag;
  void* buf;
  size_t size;
  int done;
  bootstrap_give_up_fn give_up; /* bootstrap_recv_unless: asked while nothing matched */
  void* give_up_ctx;
} bs_want;

struct weft_bootstrap {
  int rank, nranks;
  int timeout_ms;
  volatile uint32_t* abort_flag; /* the caller's, may be NULL */
  uint32_t aborted;              /* bootstrap_abort */
  int wake_fd;                   /* eventfd: bootstrap_abort wakes every poll */
  weft_bootstrap_id id;
  int listen_fd;
  weft_sockaddr listen_addr;
  weft_sockaddr* addrs; /* every rank's listener, after init */
  int ring_next_fd, ring_prev_fd;
  uint32_t coll_seq;
  bs_peer** peers; /* nranks, each allocated on first use */
  int* active;     /* peers with an open recv_fd */
  int nactive, cap_active;
  bs_pending_set pending;
  bs_msg *q_head, *q_tail;
  size_t q_bytes;
  bs_want* want;
  struct pollfd* pfd; /* bs_run's poll set, grown as needed */
  int pfd_cap;
  int in_init;
  int verdict_got;
  bs_verdict verdict;
  bs_range ranges[BS_MAX_RANGES];
  int timed_out; /* set by bs_run when its deadline passed (the caller words the error) */
};

/* ---- bootstrap_loop.c: the one place a rank waits ---- */

/* How often a receive that waits checks that its peer still exists. */
#define BS_PROBE_MS 250

typedef enum { BS_X_CONNECT, BS_X_SEND, BS_X_RECV } bs_xkind;

typedef struct {
  bs_xkind kind;
  int peer; /* named in errors (-1: the root) */
  int fd;   /* CONNECT: set once connected */
  const weft_sockaddr* addr; /* CONNECT */
  void* buf;                 /* CONNECT: the hello sent once connected */
  size_t len, done;
  const bs_coll_hdr* expect; /* RECV of a bs_coll_hdr: must match this */
  uint64_t hello_deadline;   /* CONNECT of a check-in: refresh its timeout_ms on connect */
  int state;                 /* CONNECT: 0 idle, 1 connecting, 2 sending */
  uint64_t retry_at;
  int refused_fatal; /* CONNECT to a listener known to be up: a refusal means it is gone */
  /* CONNECT: past this time (0: never) a refused or unroutable address ends the transfer
   * instead of being retried until the deadline; refused_waits keeps retrying a refusal (an
   * NCCL_COMM_ID root that starts with rank 0, maybe later). */
  uint64_t give_up_at;
  int refused_waits;
  int complete;
} bs_xfer;

/* Returns ncclSuccess with *satisfied set, or an error (already logged). */
typedef ncclResult_t (*bs_until_fn)(weft_bootstrap* b, void* ctx, int* satisfied);

/* Wait until every xfer is complete and until() (when given) is satisfied, serving meanwhile the
 * listener (handshakes) and incoming p2p messages. Xfers on one fd run in array order. Ends
 * with ncclRemoteError on abort (logged) or at deadline (b->timed_out set, not logged: the
 * caller says what timed out); xfer failures are logged naming `what` and the peer. */
ncclResult_t bs_run(weft_bootstrap* b, bs_xfer* x, int nx, bs_until_fn until, void* ctx,
                    uint64_t deadline, const char* what);
int bs_is_aborted(const weft_bootstrap* b);
/* NULL (logged) when out of memory. */
bs_peer* bs_peer_get(weft_bootstrap* b, int peer);
/* Close the peer's incoming connection and record why (BS_RX_CLOSED or BS_RX_BROKEN). */
void bs_rx_lost(weft_bootstrap* b, int peer, int state);
/* Close a connection this end sends on (or any other fd): a normal close, so what was queued
 * still arrives (util/socket.h, socket_close). *fd becomes -1. */
void bs_close_fd(int* fd);
/* Close a connection this end only receives on with a reset (socket_reset): every bootstrap
 * connection carries bytes one way, from the end that connected to the end that accepted, and
 * the accepting end closes only once it wants nothing more from it. It never sends a FIN, so
 * neither end can keep a TIME_WAIT, even when both close at once. *fd becomes -1. */
void bs_reset_fd(int* fd);

/* ---- bootstrap_coll.c ---- */
/* Allgather under a given deadline (init's); timeout_ms is only for the message. */
ncclResult_t bs_allgather_by(weft_bootstrap* b, void* data, size_t size, uint64_t deadline,
                             int timeout_ms);

/* ---- bootstrap_p2p.c ---- */
/* A queue entry for size bytes, counted against BS_MAX_QUEUED_BYTES from now on (NULL and a
 * WARN naming the peer when over the bound or out of memory). */
bs_msg* bs_msg_alloc(weft_bootstrap* b, int peer, int tag, size_t size);
void bs_msg_free(weft_bootstrap* b, bs_msg* m);
void bs_queue_push(weft_bootstrap* b, bs_msg* m);
void bs_queue_free(weft_bootstrap* b);

#endif
