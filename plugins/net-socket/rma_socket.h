/* One-sided operations over TCP: the socket plugin's RMA table (NCCL_RMA_PLUGIN=weft-socket),
 * also exported as GIN v13 (whose host puts are the same calls). Host memory only.
 *
 * A group (connect) is a full mesh: one TCP socket per pair of ranks, opened by the lower rank,
 * whose hello names its rank and carries the listener's secret. Each group has a receiver thread
 * that reads every socket and applies what arrives in order, and a responder thread that sends
 * what the receiver must answer (get data, flush acknowledgements) so the receiver never blocks
 * on a send. Registrations are collective: every rank registers in the same order, so the n-th
 * live registration has the same id everywhere and a put names the target by (id, offset).
 *
 * Wire format, per message: a 56-byte header {op, mr id, offset, size, signal mr id, signal op,
 * signal offset, signal value, token} in host byte order (a group spans one architecture), then
 * size bytes of data for PUT, PUT_SIGNAL and GET_REPLY. Ordering: a socket carries one peer's
 * messages in the order they were issued, and the receiver applies each whole before the next,
 * so a signal is visible only after its own data and every earlier put to that rank (strong
 * signals), and a flush's acknowledgement only after every earlier put.
 *
 * Sending: each peer has a queue of messages not yet wholly written to its socket. A call sends
 * what the socket takes at once (non-blocking) and queues the rest; the responder thread, which
 * queues its replies behind them, writes the queues as the sockets drain. So a call never blocks
 * on a peer that stopped reading; a peer that takes no byte for 30 s while something waits for
 * it is gone.
 *
 * Completion: iput and iputSignal complete when the message is wholly written to the socket
 * (the source may then be reused): at once when the socket took it all, else later (test);
 * iget completes when its data has landed; iflush when the target has applied every earlier
 * message from this rank. A peer that leaves fails the requests that wait on it with
 * ncclRemoteError and sets queryLastError; the source of a put that failed may still be read
 * until the group is closed. Naming: rs_* (hidden). */
#ifndef WEFT_RMA_SOCKET_H
#define WEFT_RMA_SOCKET_H

#include <pthread.h>
#include <stdint.h>

#include "nccl_rma.h"
#include "net_socket_internal.h"

/* BYE: the sender closes the group; the receiver stops reading it without calling it an error. */
enum {
  RS_PUT = 1,
  RS_PUT_SIGNAL = 2,
  RS_GET = 3,
  RS_GET_REPLY = 4,
  RS_FLUSH = 5,
  RS_FLUSH_ACK = 6,
  RS_BYE = 7
};

typedef struct {
  uint32_t op;
  uint32_t mr;
  uint64_t off;
  uint64_t size;
  uint32_t sig_mr;
  uint32_t sig_op;
  uint64_t sig_off;
  uint64_t sig_value;
  uint64_t token;
} rs_msg;

typedef struct rs_mr {
  uint32_t id;
  char* base;
  size_t size;
  uint64_t flags;
  struct rs_coll* coll;
} rs_mr;

typedef struct rs_req {
  struct rs_req* next; /* the group's list of requests not yet tested done */
  uint64_t token;
  int peer;
  int done;           /* atomic */
  ncclResult_t error; /* when done */
  char* dst;          /* get: where the data goes */
  size_t size;
} rs_req;

typedef struct rs_reply {
  struct rs_reply* next;
  int peer;
  rs_msg msg; /* GET_REPLY (with data from base) or FLUSH_ACK */
  const char* data;
} rs_reply;

/* A message queued for a peer: the header, then size bytes from data; sent: bytes written so far
 * (header included); token: the request its full write completes (0: none). */
typedef struct rs_out {
  struct rs_out* next;
  rs_msg hdr;
  const char* data;
  size_t size;
  size_t sent;
  uint64_t token;
} rs_out;

typedef struct rs_coll {
  uint64_t magic;
  int nranks, rank;
  int* fds;                 /* per rank; -1 for this rank and for a peer that left */
  pthread_mutex_t* send_lock; /* per rank: its socket's writes, out and stall_since */
  rs_out** out;             /* per rank: messages not wholly written, oldest first */
  uint64_t* stall_since;    /* per rank: ms since its queue moved no byte (0: it moved) */
  pthread_mutex_t lock;     /* mrs, reqs, replies, dead, kick */
  pthread_cond_t cond;      /* replies queued / a queue to write / stop */
  int kick;                 /* a call queued something for the responder to write */
  rs_mr** mrs;              /* by id */
  uint32_t nmrs, cap_mrs;
  rs_req* reqs;
  rs_reply* replies;
  uint64_t next_token;
  int* dead;       /* per rank: 1 once it left */
  int error;       /* atomic: something went wrong (queryLastError) */
  int stop;        /* atomic */
  pthread_t receiver, responder;
  int threads;
} rs_coll;

typedef struct {
  uint64_t magic;
  rs_coll* coll;
  int ncontexts;
} rs_ctx;

/* rma_socket_group.c */
ncclResult_t rma_socket_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger);
ncclResult_t rma_socket_finalize(void* ctx);
ncclResult_t rma_socket_devices(int* ndev);
ncclResult_t rma_socket_get_properties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t rma_socket_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t rma_socket_connect(void* ctx, void* handles[], int nranks, int rank,
                                void* listen_comm, void** coll_comm);
ncclResult_t rma_socket_close_coll(void* coll_comm);
ncclResult_t rma_socket_close_listen(void* listen_comm);
rs_coll* rma_socket_coll_check(void* p, const char* fn);
/* Fail every request waiting on peer (or all when peer < 0). Caller holds c->lock. */
void rma_socket_fail_waiting(rs_coll* c, int peer, ncclResult_t why);

/* rma_socket_ops.c */
ncclResult_t rma_socket_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx);
ncclResult_t rma_socket_destroy_context(void* ctx);
ncclResult_t rma_socket_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                            void** mhandle);
ncclResult_t rma_socket_reg_dmabuf(void* coll, void* data, size_t size, int type,
                                   uint64_t offset, int fd, uint64_t flags, void** mhandle);
ncclResult_t rma_socket_dereg(void* coll, void* mhandle);
ncclResult_t rma_socket_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                             uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt,
                             void** request);
ncclResult_t rma_socket_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                    size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                    uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                    bool strong, uint32_t opt, void** request);
ncclResult_t rma_socket_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt,
                             void** request);
ncclResult_t rma_socket_iflush(void* ctx, int context, void* mhandle, uint32_t rank,
                               void** request);
ncclResult_t rma_socket_test(void* coll, void* request, int* done);
ncclResult_t rma_socket_progress(void* ctx);
ncclResult_t rma_socket_last_error(void* ctx, bool* has_error);
/* The receiver's handling of one message from peer (header read); ncclRemoteError when the
 * socket failed. */
ncclResult_t rma_socket_apply(rs_coll* c, int peer, const rs_msg* m);
/* The peer closed the group (BYE) or its socket failed (why != NULL: a WARN and the error flag);
 * what was queued for it is dropped. The caller holds neither c->lock nor its send_lock. */
void rma_socket_peer_gone(rs_coll* c, int peer, const char* why);
/* Queue m (and size bytes of data) for peer behind what is queued, write what its socket takes
 * now, complete request token (0: none) once all is written. ncclRemoteError: the peer is gone. */
ncclResult_t rma_socket_send(rs_coll* c, int peer, const rs_msg* m, const void* data, size_t size,
                             uint64_t token);
/* Write what peer's socket takes of its queue (caller holds its send_lock): 0 the queue is
 * empty, 1 something waits, -1 the socket failed or took nothing for too long. */
int rma_socket_out_progress(rs_coll* c, int peer);
/* Complete the request with this token, if it is still listed. */
void rma_socket_complete(rs_coll* c, uint64_t token, ncclResult_t err);
/* Look up a live registration by id (caller holds c->lock). */
rs_mr* rma_socket_mr_by_id(rs_coll* c, uint32_t id);


#endif
